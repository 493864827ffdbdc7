"""Elementwise comparisons, logic and bitwise operations, `where`, and closeness tests.

Comparisons and logic give bool arrays; none of these carries a gradient except through the
values `where` selects.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.caller import name_function
from nuvec.graph.caller import public_caller
from nuvec.graph.array import Array, record1
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import Primitive
from nuvec.ops import binary, creation, nonfinite, reduction
from nuvec.ops import unary as u
from nuvec.ops.arguments import as_array, bool_flag, broadcast_all, promote
from nuvec.ops.families import Binary, Unary, apply, batch_inputs

__all__ = [
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_invert",
    "left_shift", "right_shift", "where", "isclose", "allclose", "array_equal",
]  # fmt: skip


class _Kind(Binary):
    """A binary primitive selected by `kind`, with an integer or boolean result: no gradient."""

    abstract = True
    __slots__ = ("kind",)

    def __init__(self, kind: str):
        self.kind = kind

    def params(self):
        return (self.kind,)

    def vjp(self, primals, cotangents, argnums, outputs):
        return [None for _ in argnums]

    def jvp(self, primals, tangents, outputs):
        return [None]


class Compare(_Kind):
    """An elementwise comparison `kind` ("equal", "less", ...) with a bool result."""

    __slots__ = ()

    def out_dtype(self, dtype):
        return dt.bool_


class Logical(_Kind):
    """Logical "and" or "or" (`kind`) of boolean arrays."""

    __slots__ = ()


class Bitwise(_Kind):
    """A bitwise operation `kind` ("and", "or", "xor", "left_shift", "right_shift")."""

    __slots__ = ()


class BitwiseInvert(Unary):
    """~x on integers and booleans; no gradient."""

    __slots__ = ()

    def vjp(self, primals, cotangents, argnums, outputs):
        return [None]

    def jvp(self, primals, tangents, outputs):
        return [None]


class Select(Primitive):
    """where(condition, x, y) on equal shapes; no gradient to the condition."""

    __slots__ = ()

    def output_specs(self, inputs):
        return ((inputs[1].shape, inputs[1].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        c, cot = primals[0], cotangents[0]
        zeros = _zeros(cot)
        return [None if i == 0 else apply(self, c, *((cot, zeros) if i == 1 else (zeros, cot)))
                for i in argnums]

    def jvp(self, primals, tangents, outputs):
        _, tx, ty = tangents
        if tx is None and ty is None:
            return [None]
        c = primals[0]
        return [apply(self, c, _zeros(ty) if tx is None else tx, _zeros(tx) if ty is None else ty)]

    def vmap(self, inputs, axes):
        return [apply(self, *batch_inputs(inputs, axes))], [0]


def _zeros(like: Array) -> Array:
    return creation.zeros_like(like)


BITWISE_INVERT, SELECT = BitwiseInvert(), Select()


def _comparison(kind: str, symbol: str):
    """The public comparison `kind(a, b, /, *, stream=None)`: a bool array of `a symbol b`."""

    def op(a: Any, b: Any, /, *, stream: Any = None) -> Array:
        s = to_stream(stream)
        a, b = binary.binary_operands(kind, a, b, s)
        return record1(Compare(kind), (a, b), s)

    name_function(op, kind)
    op.__doc__ = f"""Elementwise a {symbol} b, broadcast and promoted (Python scalars are weak).

    Args:
        a: first operand (array or scalar).
        b: second operand (array or scalar).
        stream: the stream (or device) to record on.

    Returns:
        A bool array of the broadcast shape.

    Raises:
        ValueError: if the shapes cannot be broadcast together.

    Example:
        >>> import nuvec as mx
        >>> mx.{kind}(mx.array([1, 2]), 2).dtype
        nuvec.bool
    """
    return op


equal = _comparison("equal", "==")
not_equal = _comparison("not_equal", "!=")
less = _comparison("less", "<")
less_equal = _comparison("less_equal", "<=")
greater = _comparison("greater", ">")
greater_equal = _comparison("greater_equal", ">=")


def _logical(op: str, kind: str, a: Any, b: Any, stream: Any) -> Array:
    s = to_stream(stream)
    a, b = (u.astype(as_array(x, op), dt.bool_, stream=s) for x in (a, b))
    if a.shape != b.shape:
        a, b = broadcast_all(op, (a, b), s)
    if kind == "xor":
        return record1(Compare("not_equal"), (a, b), s)
    return record1(Logical(kind), (a, b), s)


def logical_and(a: Any, b: Any, /, *, stream: Any = None) -> Array:
    """Elementwise logical and; inputs are converted to bool (nonzero is True).

    Args:
        a: first operand (array or scalar).
        b: second operand (array or scalar).
        stream: the stream (or device) to record on.

    Returns:
        A bool array of the broadcast shape.

    Raises:
        ValueError: if the shapes cannot be broadcast together.

    Example:
        >>> import nuvec as mx
        >>> mx.logical_and(mx.array([True, True]), mx.array([True, False])).tolist()
        [True, False]
    """
    return _logical("logical_and", "and", a, b, stream)


def logical_or(a: Any, b: Any, /, *, stream: Any = None) -> Array:
    """Elementwise logical or; inputs are converted to bool (nonzero is True).

    Args:
        a: first operand (array or scalar).
        b: second operand (array or scalar).
        stream: the stream (or device) to record on.

    Returns:
        A bool array of the broadcast shape.

    Raises:
        ValueError: if the shapes cannot be broadcast together.

    Example:
        >>> import nuvec as mx
        >>> mx.logical_or(mx.array([0, 0, 1]), mx.array([0, 2, 0])).tolist()
        [False, True, True]
    """
    return _logical("logical_or", "or", a, b, stream)


def logical_xor(a: Any, b: Any, /, *, stream: Any = None) -> Array:
    """Elementwise logical exclusive or; inputs are converted to bool (nonzero is True).

    Args:
        a: first operand (array or scalar).
        b: second operand (array or scalar).
        stream: the stream (or device) to record on.

    Returns:
        A bool array of the broadcast shape.

    Raises:
        ValueError: if the shapes cannot be broadcast together.

    Example:
        >>> import nuvec as mx
        >>> mx.logical_xor(mx.array([True, True]), mx.array([True, False])).tolist()
        [False, True]
    """
    return _logical("logical_xor", "xor", a, b, stream)


def _bitwise(name: str, kind: str, summary: str):
    """The public bitwise operation `name(a, b, /, *, stream=None)` of integers and booleans."""

    def op(a: Any, b: Any, /, *, stream: Any = None) -> Array:
        s = to_stream(stream)
        a, b = binary.binary_operands(name, a, b, s)
        if a.dtype.is_inexact:
            raise DtypeError(f"{public_caller(name)}: only integer and boolean arrays are "
                             f"supported, got {a.dtype.name}")
        if kind.endswith("shift") and a.dtype is dt.bool_:
            # shifts of booleans compute in uint8 (MLX)
            a, b = u.astype(a, dt.uint8, stream=s), u.astype(b, dt.uint8, stream=s)
        return record1(Bitwise(kind), (a, b), s)

    name_function(op, name)
    op.__doc__ = f"""{summary}

    Args:
        a: first operand (array or scalar).
        b: second operand (array or scalar).
        stream: the stream (or device) to record on.

    Returns:
        An array of the promoted dtype and the broadcast shape.

    Raises:
        TypeError: for floating or complex input.
        ValueError: if the shapes cannot be broadcast together.

    Example:
        >>> import nuvec as mx
        >>> mx.{name}(mx.array([3], mx.uint8), mx.array([1], mx.int16)).dtype
        nuvec.int16
    """
    return op


bitwise_and = _bitwise("bitwise_and", "and",
                       "Elementwise bitwise and of integer or boolean arrays.")
bitwise_or = _bitwise("bitwise_or", "or", "Elementwise bitwise or of integer or boolean arrays.")
bitwise_xor = _bitwise("bitwise_xor", "xor",
                       "Elementwise bitwise exclusive or of integer or boolean arrays.")
left_shift = _bitwise("left_shift", "left_shift", "Elementwise a << b of integers (booleans "
                      "shift as uint8); shifts past the width give 0.")
right_shift = _bitwise("right_shift", "right_shift", "Elementwise a >> b of integers "
                       "(arithmetic for signed types; booleans shift as uint8).")


def bitwise_invert(a: Any, /, *, stream: Any = None) -> Array:
    """Elementwise bitwise not of an integer array (logical not for booleans).

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        ~a, of `a`'s dtype.

    Raises:
        TypeError: for floating or complex input.

    Example:
        >>> import nuvec as mx
        >>> mx.bitwise_invert(mx.array([0], mx.uint8)).tolist()
        [255]
    """
    a = as_array(a, "bitwise_invert")
    if a.dtype.is_inexact:
        raise DtypeError(
            f"bitwise_invert: only integer and boolean arrays are supported, got {a.dtype.name}"
        )
    return record1(BITWISE_INVERT, (a,), to_stream(stream))


def where(condition: Any, x: Any, y: Any, /, *, stream: Any = None) -> Array:
    """Elementwise `x` where `condition` is true, else `y`.

    `x` and `y` are promoted together (Python scalars are weak); `condition` is converted to
    bool; all three broadcast. No gradient flows to `condition`.

    Args:
        condition: where to take `x` (converted to bool).
        x: values where `condition` is true.
        y: values where `condition` is false.
        stream: the stream (or device) to record on.

    Returns:
        An array of the promoted dtype of `x` and `y` and the broadcast shape.

    Raises:
        ValueError: if the shapes cannot be broadcast together.

    Example:
        >>> import nuvec as mx
        >>> mx.where(mx.array([True, False]), mx.array([1, 2]), 0).tolist()
        [1, 0]
    """
    s = to_stream(stream)
    x, y = promote("where", x, y, s)
    c = u.astype(as_array(condition, "where"), dt.bool_, stream=s)
    if not (c.shape == x.shape == y.shape):
        c, x, y = broadcast_all("where", (c, x, y), s)
    return record1(SELECT, (c, x, y), s)


def isclose(
    a: Any, b: Any, /, rtol: float = 1e-05, atol: float = 1e-08, *, equal_nan: bool = False,
    stream: Any = None,
) -> Array:
    """Elementwise |a - b| <= atol + rtol |b|; equal infinities are close.

    Args:
        a, b: the arrays to compare (broadcast together).
        rtol: relative tolerance.
        atol: absolute tolerance.
        equal_nan: whether two NaNs count as close.
        stream: the stream (or device) to record on.

    Returns:
        A bool array of the broadcast shape.

    Raises:
        ValueError: if the shapes cannot be broadcast together.
        TypeError: if `rtol` or `atol` is not a real number.

    Example:
        >>> import nuvec as mx
        >>> mx.isclose(mx.array([1.0, 2.0]), mx.array([1.0 + 1e-9, 2.1])).tolist()
        [True, False]
    """
    for name, value in (("rtol", rtol), ("atol", atol)):
        if not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"{public_caller('isclose')}: {name} must be a real number, got "
                            f"{value!r} ({type(value).__name__})")
    equal_nan = bool_flag(equal_nan, "isclose", "equal_nan")
    s = to_stream(stream)
    a, b = binary.binary_operands("isclose", a, b, s)
    if not a.dtype.is_inexact:
        a, b = u.astype(a, dt.float32, stream=s), u.astype(b, dt.float32, stream=s)

    diff = u.abs(binary.subtract(a, b, stream=s), stream=s)
    bound = binary.add(binary.multiply(u.abs(b, stream=s), float(rtol), stream=s), float(atol),
                       stream=s)
    # an infinite b makes the bound infinite: infinities are close only to themselves (NumPy)
    within = logical_and(less_equal(diff, bound, stream=s), nonfinite.isfinite(b, stream=s),
                         stream=s)
    out = logical_or(within, equal(a, b, stream=s), stream=s)
    if equal_nan:
        both = logical_and(nonfinite.isnan(a, stream=s), nonfinite.isnan(b, stream=s), stream=s)
        out = logical_or(out, both, stream=s)
    return out


def allclose(
    a: Any, b: Any, /, rtol: float = 1e-05, atol: float = 1e-08, *, equal_nan: bool = False,
    stream: Any = None,
) -> Array:
    """Whether every element of `a` is close to `b` (see `isclose`): a 0-d bool array.

    Args:
        a: first operand (array or scalar).
        b: second operand (array or scalar).
        rtol: relative tolerance.
        atol: absolute tolerance.
        equal_nan: whether NaNs in the same places count as equal.
        stream: the stream (or device) to record on.

    Returns:
        A 0-d bool array.

    Raises:
        ValueError: if the shapes cannot be broadcast together.

    Example:
        >>> import nuvec as mx
        >>> mx.allclose(mx.array([1.0, 2.0]), mx.array([1.0, 2.000001])).item()
        True
    """
    return reduction.all(isclose(a, b, rtol, atol, equal_nan=equal_nan, stream=stream),
                         stream=stream)


def array_equal(a: Any, b: Any, /, equal_nan: bool = False, *, stream: Any = None) -> Array:
    """Whether `a` and `b` have the same shape and equal elements: a 0-d bool array.

    The dtypes need not match (values are compared after promotion).

    Args:
        a, b: the arrays to compare.
        equal_nan: whether NaNs in the same places count as equal.
        stream: the stream (or device) to record on.

    Returns:
        A 0-d bool array.

    Example:
        >>> import nuvec as mx
        >>> mx.array_equal(mx.array([1, 2]), mx.array([1.0, 2.0])).item()
        True
    """
    a, b = as_array(a, "array_equal"), as_array(b, "array_equal")
    equal_nan = bool_flag(equal_nan, "array_equal", "equal_nan")
    if a.shape != b.shape:
        return creation.array(False)
    s = to_stream(stream)
    out = equal(a, b, stream=s)
    if equal_nan:
        both = logical_and(nonfinite.isnan(a, stream=s), nonfinite.isnan(b, stream=s), stream=s)
        out = logical_or(out, both, stream=s)
    return reduction.all(out, stream=s)

