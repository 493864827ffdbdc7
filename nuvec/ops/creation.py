"""Creation operations: arrays from data, constants, ranges, grids and triangular helpers."""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, leaf

__all__ = ["array", "asarray", "full", "zeros", "ones", "zeros_like", "ones_like"]


def _infer_dtype(data: np.ndarray) -> dt.Dtype:
    """MLX's dtype for converted data: Python floats and float64 data become float32."""
    kind = data.dtype.kind
    if kind == "f" and data.dtype != np.float16 and data.dtype.name != "bfloat16":
        return dt.float32
    if kind == "c":
        return dt.complex64
    return dt.from_numpy_dtype(data.dtype)


def _from_python(a: Any) -> tuple[np.ndarray, dt.Dtype]:
    """Nested lists/tuples of scalars (or arrays) as NumPy data and MLX's default dtype."""
    data = np.asarray(a)
    if data.dtype == object:
        raise ValueError("array: nested sequences must be rectangular and hold numbers")
    kind = data.dtype.kind
    if kind == "b":
        return data, dt.bool_
    if kind in "iu":
        if data.size and (data.max() >= 2**31 or data.min() < -(2**31)):
            return data, dt.int64
        return data, dt.int32
    if kind == "f":
        return data, dt.float32
    if kind == "c":
        return data, dt.complex64
    raise ValueError(f"array: cannot make an array from data of type {data.dtype}")


def array(a: Any, dtype: dt.Dtype | None = None) -> Array:
    """An array from a scalar, nested lists/tuples, NumPy data or another array.

    Python ints become int32 (int64 if they do not fit), floats float32, bools bool; NumPy
    float64 data becomes float32 unless `dtype` says otherwise (MLX's rule).

    Args:
        a: the data.
        dtype: the dtype to store; default as above.

    Raises:
        TypeError: if `dtype` is not a dtype or the data is not numeric.
        ValueError: if nested sequences are ragged.

    Example:
        >>> import nuvec as mx
        >>> mx.array([1, 2, 3])
        array([1, 2, 3], dtype=int32)
    """
    target = dt.to_dtype(dtype, "array") if dtype is not None else None
    if isinstance(a, Array):
        if target is None or target is a.dtype:
            return a
        from nuvec.ops.unary import astype

        return astype(a, target)
    if isinstance(a, (bool, int, float, complex)):
        inferred = dt.scalar_dtype(a)
        data = np.asarray(a)
    elif isinstance(a, (np.ndarray, np.generic)):
        data = np.asarray(a)
        inferred = _infer_dtype(data)
    elif isinstance(a, (list, tuple)):
        if any(isinstance(x, Array) for x in a):
            a = [np.asarray(x) if isinstance(x, Array) else x for x in a]
        data, inferred = _from_python(a)
    elif hasattr(a, "__array__"):
        data = np.asarray(a)
        inferred = _infer_dtype(data)
    else:
        raise TypeError(f"array: cannot make an array from {type(a).__name__}")
    out = target or inferred
    try:
        converted = np.array(data, dtype=out.np, copy=True)
    except (OverflowError, ValueError) as exc:
        raise ValueError(f"array: cannot convert data to {out.name}: {exc}") from None
    return leaf(converted, out)


def asarray(a: Any, dtype: dt.Dtype | None = None) -> Array:
    """Like `array`, but returns `a` itself when it is already an array of `dtype`."""
    return array(a, dtype)


def full(shape: Any, vals: Any, dtype: dt.Dtype | None = None, *, stream: Any = None) -> Array:
    """An array of `shape` filled with `vals` (a scalar or an array broadcast to `shape`).

    Args:
        shape: an int or a sequence of ints.
        vals: the fill value(s).
        dtype: the dtype; default `vals`' dtype (a Python float gives float32).

    Raises:
        ValueError: if `vals` cannot be broadcast to `shape` or a dimension is negative.
    """
    from nuvec.ops.arguments import check_shape
    from nuvec.ops.shape import broadcast_to

    shape = check_shape(shape, "full")
    value = array(vals, dtype)
    return broadcast_to(value, shape, stream=stream)


def zeros(shape: Any, dtype: dt.Dtype | None = dt.float32, *, stream: Any = None) -> Array:
    """An array of zeros of `shape` and `dtype` (default float32)."""
    return full(shape, 0, dtype or dt.float32, stream=stream)


def ones(shape: Any, dtype: dt.Dtype | None = dt.float32, *, stream: Any = None) -> Array:
    """An array of ones of `shape` and `dtype` (default float32)."""
    return full(shape, 1, dtype or dt.float32, stream=stream)


def zeros_like(a: Array, /, *, stream: Any = None) -> Array:
    """Zeros with `a`'s shape and dtype."""
    return full(a.shape, 0, a.dtype, stream=stream)


def ones_like(a: Array, /, *, stream: Any = None) -> Array:
    """Ones with `a`'s shape and dtype."""
    return full(a.shape, 1, a.dtype, stream=stream)
