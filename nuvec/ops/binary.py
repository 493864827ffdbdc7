"""Elementwise operations of two arrays: arithmetic, comparisons, logic, bitwise, `where`.

Each public op promotes (Python scalars are weak), broadcasts explicitly, then records a
primitive that sees equal shapes and dtypes.
"""

from __future__ import annotations

from typing import Any

from nuvec.graph.array import Array, record1
from nuvec.graph.device import Stream, to_stream
from nuvec.ops.arguments import broadcast_all, promote
from nuvec.ops.families import Binary, Linear, apply

__all__ = ["add", "subtract", "multiply"]


def _prepare(op: str, a: Any, b: Any, s: Stream) -> tuple[Array, Array]:
    a, b = promote(op, a, b, s)
    if a.shape != b.shape:
        a, b = broadcast_all(op, (a, b), s)
    return a, b


class Add(Binary):
    """a + b."""

    __slots__ = ()

    def vjp(self, primals, cotangents, argnums, outputs):
        return [cotangents[0] for _ in argnums]

    def jvp(self, primals, tangents, outputs):
        ta, tb = tangents
        if ta is None:
            return [tb]
        if tb is None:
            return [ta]
        return [apply(self, ta, tb)]


class Subtract(Binary):
    """a - b."""

    __slots__ = ()

    def vjp(self, primals, cotangents, argnums, outputs):
        from nuvec.ops.unary import negative

        return [cotangents[0] if i == 0 else negative(cotangents[0]) for i in argnums]

    def jvp(self, primals, tangents, outputs):
        from nuvec.ops.unary import negative

        ta, tb = tangents
        if tb is None:
            return [ta]
        if ta is None:
            return [negative(tb)]
        return [apply(self, ta, tb)]


class Multiply(Binary):
    """a * b."""

    __slots__ = ()

    def vjp(self, primals, cotangents, argnums, outputs):
        a, b = primals
        return [apply(self, cotangents[0], b if i == 0 else a) for i in argnums]

    def jvp(self, primals, tangents, outputs):
        a, b = primals
        ta, tb = tangents
        parts = []
        if ta is not None:
            parts.append(apply(self, ta, b))
        if tb is not None:
            parts.append(apply(self, a, tb))
        return [parts[0] if len(parts) == 1 else apply(ADD, *parts)]


ADD, SUBTRACT, MULTIPLY = Add(), Subtract(), Multiply()


def add(a: Any, b: Any, /, *, stream: Any = None) -> Array:
    """Elementwise a + b with broadcasting and promotion (Python scalars are weak).

    Raises:
        ValueError: if the shapes cannot be broadcast together.

    Example:
        >>> import nuvec as mx
        >>> mx.add(mx.array([1, 2]), 1)
        array([2, 3], dtype=int32)
    """
    s = to_stream(stream)
    a, b = _prepare("add", a, b, s)
    return record1(ADD, (a, b), s)


def subtract(a: Any, b: Any, /, *, stream: Any = None) -> Array:
    """Elementwise a - b with broadcasting and promotion."""
    s = to_stream(stream)
    a, b = _prepare("subtract", a, b, s)
    return record1(SUBTRACT, (a, b), s)


def multiply(a: Any, b: Any, /, *, stream: Any = None) -> Array:
    """Elementwise a * b with broadcasting and promotion."""
    s = to_stream(stream)
    a, b = _prepare("multiply", a, b, s)
    return record1(MULTIPLY, (a, b), s)
