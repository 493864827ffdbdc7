"""Elementwise operations of one array: math functions, rounding, predicates, casts."""

from __future__ import annotations

from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, record1
from nuvec.graph.device import Stream, to_stream
from nuvec.ops.arguments import as_array
from nuvec.ops.families import Linear, Unary, apply

__all__ = ["astype", "exp", "negative"]

StreamLike = Any


class AsType(Unary):
    """Cast to `dtype`; the derivative casts back (zero for non-float targets)."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: dt.Dtype):
        self.dtype = dtype

    def params(self):
        return (self.dtype,)

    def out_dtype(self, dtype):
        return self.dtype

    def vjp(self, primals, cotangents, argnums, outputs):
        x = primals[0]
        if not (x.dtype.is_inexact and self.dtype.is_inexact):
            return [None]
        return [apply(AsType(x.dtype), cotangents[0])]

    def jvp(self, primals, tangents, outputs):
        if not (primals[0].dtype.is_inexact and self.dtype.is_inexact):
            return [None]
        return [apply(self, tangents[0])]


def astype(a: Any, dtype: Any, /, *, stream: StreamLike = None) -> Array:
    """`a` converted to `dtype` (floats to ints truncate toward zero, as C casts do).

    Raises:
        TypeError: if `dtype` is not a supported dtype.
    """
    a = as_array(a, "astype")
    target = dt.to_dtype(dtype, "astype")
    s = to_stream(stream)
    if a.dtype is target:
        return a
    return record1(AsType(target), (a,), s)


class Exp(Unary):
    """e**x; d/dx = exp(x)."""

    __slots__ = ()

    def vjp(self, primals, cotangents, argnums, outputs):
        from nuvec.ops.binary import multiply

        return [multiply(cotangents[0], outputs[0])]

    def jvp(self, primals, tangents, outputs):
        from nuvec.ops.binary import multiply

        return [multiply(tangents[0], outputs[0])]


class Negative(Linear, Unary):
    """-x."""

    __slots__ = ()

    def vjp(self, primals, cotangents, argnums, outputs):
        return [apply(self, cotangents[0])]


EXP, NEGATIVE = Exp(), Negative()


def _float_input(a: Any, op: str, s: Stream) -> Array:
    """The input of a float-valued function: ints and bools compute in float32 (as MLX)."""
    a = as_array(a, op)
    if not a.dtype.is_inexact:
        a = record1(AsType(dt.float32), (a,), s)
    return a


def exp(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Elementwise exponential. Integer inputs compute in float32.

    Example:
        >>> import nuvec as mx
        >>> mx.exp(mx.array([0.0])).item()
        1.0
    """
    s: Stream = to_stream(stream)
    return record1(EXP, (_float_input(a, "exp", s),), s)


def negative(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Elementwise -a.

    Raises:
        TypeError: for boolean arrays (use `logical_not`).
    """
    a = as_array(a, "negative")
    if a.dtype is dt.bool_:
        raise TypeError("negative: not supported for bool arrays; use logical_not")
    return record1(NEGATIVE, (a,), to_stream(stream))
