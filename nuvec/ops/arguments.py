"""Argument handling shared by all operations: conversion to arrays, axes, promotion, broadcasting.

Every public op validates through these helpers so error messages have one format:
`op: what is wrong, got <shapes/dtypes>`.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np
from numpy.exceptions import AxisError

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array, handle
from nuvec.graph.caller import public_caller
from nuvec.graph.convert import cast, from_data, scalar_array
from nuvec.graph.device import Stream

Scalar = (bool, int, float, complex)
StreamLike = Any  # a Stream, a Device, or None for the default stream
Shape = tuple[int, ...]


class BadIndexError(IndexError, ValueError):
    """A bad index (a Python int outside its axis, too many indices, a second ellipsis): an
    `IndexError` (NumPy) that is also a `ValueError` (what MLX raises for bad indices)."""


def fresh(a: Array) -> Array:
    """A new handle on `a`'s value. An op that changes nothing still returns a new array, so an
    in-place update of its result (`b[0] = 1`, `b += 1`) never changes `a`, as in MLX."""
    return handle(a._node, a._index)


@runtime_checkable
class ArrayLike(Protocol):
    """Any object with an `__mlx_array__` method returning an array (MLX's `ArrayLike`);
    operations take it as that array. For annotations and `isinstance` checks.

    Example:
        >>> import nuvec as mx
        >>> class Wrapped:
        ...     def __mlx_array__(self):
        ...         return mx.array([1, 2])
        >>> isinstance(Wrapped(), mx.ArrayLike), mx.add(Wrapped(), 1).tolist()
        (True, [2, 3])
    """

    def __mlx_array__(self) -> Array: ...


def mlx_array_of(x: Any, op: str) -> Any:
    """`x.__mlx_array__()` for an object that offers it (MLX's protocol for array-like
    classes), checked to be an array; anything else unchanged."""
    method = getattr(type(x), "__mlx_array__", None)
    if method is None or isinstance(x, Array):
        return x
    out = method(x)
    if not isinstance(out, Array):
        raise TypeError(f"{public_caller(op)}: {type(x).__name__}.__mlx_array__ must return an "
                        f"array, got {type(out).__name__}")
    return out


def as_array(x: Any, op: str, dtype: dt.Dtype | None = None) -> Array:
    """`x` as an array: arrays pass through, scalars/lists/NumPy data are converted (MLX rules).

    Raises:
        TypeError: if `x` cannot be converted.
        ValueError: if `x` is a Python int that the integer `dtype` cannot hold.
    """
    if type(x) is Array:  # the common case, before looking for `__mlx_array__`
        return x
    x = mlx_array_of(x, op)
    if isinstance(x, Array):
        return x
    if dtype is not None:  # a value taking the dtype of the array it updates or pads (MLX)
        check_weak_int(op, x, dtype)
    try:
        if isinstance(x, (list, tuple)) and any(isinstance(v, Array) for v in x):
            return creation.array(x, dtype)  # stacks the arrays
        return from_data(x, dtype)
    except (TypeError, ValueError) as exc:
        raise DtypeError(f"{public_caller(op)}: cannot convert {type(x).__name__} to an array "
                         f"({exc})") from None


# each integer dtype's (min, max), which the weak Python numbers it takes must lie in
_INT_RANGES = {d: (int(np.iinfo(d.np).min), int(np.iinfo(d.np).max)) for d in dt.INTEGER_DTYPES}


def check_weak_int(op: str, value: Any, dtype: dt.Dtype) -> None:
    """Raises if a weak Python number cannot take the integer `dtype`: an int past its range
    (as MLX, which lets ints wrap in uint64 only), or a float that is NaN, infinite or past the
    range (a silent INT_MIN, or an undefined value in MLX)."""
    kind = type(value)
    if kind is int and dtype is not dt.uint64 or kind is float or isinstance(value, np.floating):
        bounds = _INT_RANGES.get(dtype)
        if bounds is not None and not bounds[0] <= value <= bounds[1]:  # (False for NaN)
            what = f"Python {kind.__name__}" if kind in (int, float) else kind.__name__
            raise ValueError(f"{public_caller(op)}: the {what} {value} does not fit in "
                             f"{dtype.name} (range {bounds[0]} to {bounds[1]})")


def promote(op: str, a: Any, b: Any, stream: Stream) -> tuple[Array, Array]:
    """Converts two operands to arrays of their common dtype; Python scalars are weak."""
    if type(a) is Array and type(b) is float:  # the common case `x * 0.5`, without a search
        out = a.dtype if a.dtype.is_inexact else dt.float32  # (`weak_scalar_result`'s rule)
        return (a if a.dtype is out else cast(a, out, stream)), scalar_array(b, out, a.shape)
    a_is_array, b_is_array = isinstance(a, Array), isinstance(b, Array)
    if not (a_is_array and b_is_array):  # objects with `__mlx_array__` are arrays, not weak
        a, b = mlx_array_of(a, op), mlx_array_of(b, op)
        a_is_array, b_is_array = isinstance(a, Array), isinstance(b, Array)
    if a_is_array and b_is_array:
        if a.dtype is b.dtype:
            return a, b
        out = dt.promote_types(a.dtype, b.dtype)
    elif a_is_array and isinstance(b, Scalar):
        out = dt.weak_scalar_result(a.dtype, b)
        check_weak_int(op, b, out)
        return cast(a, out, stream), scalar_array(b, out, a.shape)
    elif b_is_array and isinstance(a, Scalar):
        out = dt.weak_scalar_result(b.dtype, a)
        check_weak_int(op, a, out)
        return scalar_array(a, out, b.shape), cast(b, out, stream)
    else:
        a, b = as_array(a, op), as_array(b, op)
        if isinstance(a, Array) and isinstance(b, Array) and a.dtype is b.dtype:
            return a, b
        out = dt.promote_types(a.dtype, b.dtype)
    return cast(a, out, stream), cast(b, out, stream)


def normalize_axis(axis: int, ndim: int, op: str) -> int:
    """`axis` in `[0, ndim)`; negative axes count from the end.

    Raises:
        AxisError: (a ValueError and an IndexError, as MLX raises IndexError) if the axis is out
            of range.
        TypeError: if the axis is not an int.
    """
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{public_caller(op)}: axis must be an int, got {axis!r} "
                        f"({type(axis).__name__})")
    if not -ndim <= axis < ndim:
        raise AxisError(f"{public_caller(op)}: axis {axis} is out of bounds for an array with "
                        f"{ndim} dimensions")
    return int(axis) % ndim if ndim else 0


def normalize_axes(axis: int | Sequence[int] | None, ndim: int, op: str) -> tuple[int, ...]:
    """Sorted, distinct axes in `[0, ndim)`; `None` means all axes.

    Raises:
        ValueError: if an axis is out of range or repeated.
    """
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        return (normalize_axis(axis, ndim, op),)
    try:
        items = tuple(axis)
    except TypeError:
        raise TypeError(f"{public_caller(op)}: axis must be an int, a sequence of ints or None, "
                        f"got {axis!r} ({type(axis).__name__})") from None
    axes = tuple([normalize_axis(a, ndim, op) for a in items])
    if len(set(axes)) != len(axes):
        raise ValueError(f"{public_caller(op)}: repeated axis in {tuple(axis)}")
    return tuple(sorted(axes))


def broadcast_shapes(*shapes: Sequence[int], op: str = "broadcast_shapes") -> Shape:
    """The shape that `shapes` broadcast to (NumPy's rule).

    Raises:
        ValueError: if the shapes cannot be broadcast together.
    """
    if len(shapes) == 2 and tuple(shapes[0]) == tuple(shapes[1]):
        return tuple(shapes[0])
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        size = 1
        for s in shapes:
            if len(s) >= -i:
                d = s[i]
                if d != 1:
                    if size != 1 and d != size:
                        raise ValueError(
                            f"{public_caller(op)}: shapes "
                            f"{' and '.join(str(tuple(x)) for x in shapes)} "
                            "cannot be broadcast together"
                        )
                    size = d
        out.append(size)
    return tuple(out)


def broadcast_all(op: str, arrays: Sequence[Array], stream: Stream) -> list[Array]:
    """The arrays broadcast to their common shape with explicit broadcast nodes."""
    shape = broadcast_shapes(*(a.shape for a in arrays), op=op)
    return [shape_ops.broadcast_array(a, shape, stream) for a in arrays]


def int_tuple(values: Any, op: str, what: str) -> tuple[int, ...]:
    """`values` (an int or a sequence of ints) as a tuple of Python ints.

    Raises:
        TypeError: if `values` or one of its entries is not an integer (floats are not truncated).
    """
    if type(values) is tuple:  # a tuple of Python ints (a shape) is returned as it is
        for v in values:
            if type(v) is not int:
                break
        else:
            return values
    try:
        if isinstance(values, (int, np.integer)):
            return (int(values),)
        return tuple(operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"{public_caller(op)}: {what} must be an int or a sequence of ints, "
                        f"got {values!r}") from None


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def index_int(value: Any, op: str, what: str, low: int = INT64_MIN,
              high: int = INT64_MAX) -> int:
    """`value` (a Python or NumPy integer, or a 0-d integer array) as a Python int in
    `[low, high]`; bools and floats are rejected, never truncated.

    Raises:
        TypeError: if `value` is not an integer.
        ValueError: if it lies outside `[low, high]`.
    """
    if isinstance(value, bool) or isinstance(value, np.bool_):
        raise TypeError(f"{public_caller(op)}: {what} must be an int, got {value!r}")
    try:
        out = operator.index(value)
    except TypeError:
        raise TypeError(f"{public_caller(op)}: {what} must be an int, got {value!r} "
                        f"({type(value).__name__})") from None
    if out < low:
        raise ValueError(f"{public_caller(op)}: {what} must be >= {low}, got {out}")
    if out > high:
        raise ValueError(f"{public_caller(op)}: {what} must be <= {high}, got {out}")
    return out


def real_number(value: Any, op: str, what: str, finite: bool = True,
                positive: bool = False) -> float:
    """`value` (a Python or NumPy real number, or a 0-d real array) as a Python float.

    Args:
        value: the argument.
        op: the public function's name, for messages.
        what: the argument's name, for messages.
        finite: whether NaN and infinities are rejected.
        positive: whether values <= 0 are rejected.

    Raises:
        TypeError: if `value` is not a real number (strings, None, complex, other objects).
        ValueError: if it is not finite (with `finite`) or not positive (with `positive`).
    """
    real = (int, float, np.integer, np.floating)
    is_real = isinstance(value, real) and not isinstance(value, bool)
    if isinstance(value, Array):
        is_real = value.ndim == 0 and value.dtype.kind in "iuf"
    if not is_real:
        raise TypeError(f"{public_caller(op)}: {what} must be a real number, got {value!r} "
                        f"({type(value).__name__})")
    out = float(value)
    if finite and not math.isfinite(out):
        raise ValueError(f"{public_caller(op)}: {what} must be finite, got {out}")
    if positive and not out > 0:
        raise ValueError(f"{public_caller(op)}: {what} must be positive, got {out}")
    return out


def bool_flag(value: Any, op: str, what: str) -> bool:
    """`value` (a Python or NumPy bool) as a Python bool. Like MLX, nothing else is
    truth-tested: not ints, strings, None or arrays.

    Raises:
        TypeError: if `value` is not a bool.
    """
    if type(value) is bool:
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    raise TypeError(f"{public_caller(op)}: {what} must be a bool, got {value!r} "
                    f"({type(value).__name__})")


def check_callable(op: str, fun: Any, what: str = "fun") -> None:
    """Raises TypeError unless `fun` is callable (transforms check it at the call, not when
    the transformed function runs)."""
    if not callable(fun):
        raise TypeError(f"{public_caller(op)}: {what} must be callable, got {fun!r} "
                        f"({type(fun).__name__})")


_DIM_LIMIT = 2**31  # MLX's shapes are int32
_SIZE_LIMIT = 2**60  # past what NumPy can index, even as a broadcast view


def check_shape(shape: Any, op: str) -> Shape:
    """`shape` as a tuple of non-negative ints (an int means a 1-D shape)."""
    out = int_tuple(shape, op, "shape")
    size = 1
    for d in out:  # (a valid shape in one pass; the checks below name what is wrong)
        if d < 0 or d >= _DIM_LIMIT:
            break
        size *= d
    else:
        if size < _SIZE_LIMIT:
            return out
    if min(out, default=0) < 0:
        raise ValueError(f"{public_caller(op)}: negative dimensions are not allowed, got {out}")
    if max(out, default=0) >= _DIM_LIMIT:
        raise ValueError(f"{public_caller(op)}: shape dimension falls outside the supported int32 "
                         f"range, got {out}")
    if math.prod(out) >= _SIZE_LIMIT:
        raise ValueError(f"{public_caller(op)}: the shape {out} has more elements than an array "
                         "can hold")
    return out


def require_float(op: str, a: Array) -> None:
    """Raises TypeError unless `a` has a floating dtype."""
    if not a.dtype.is_floating:
        raise DtypeError(f"{public_caller(op)}: expected a floating-point array, got "
                         f"{a.dtype.name}")


# The operations that build on this module, used at call time (imported last, as they import
# this module).
from nuvec.ops import creation  # noqa: E402
from nuvec.ops import shape as shape_ops  # noqa: E402
