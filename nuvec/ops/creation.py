"""Creation operations: arrays from data, constants, ranges and coordinate grids.

`Source` is the family of input-less primitives (`Arange` here; `Eye` and `Tri` in
`matrices.py`, with the triangles and diagonals).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph import memory
from nuvec.graph.caller import public_caller
from nuvec.graph.array import Array, record1
from nuvec.graph.convert import cast, from_data
from nuvec.graph.device import to_stream
from nuvec.graph.dlpack import capsule_data, is_capsule
from nuvec.graph.primitive import Primitive
from nuvec.ops import binary, join, unary
from nuvec.ops import shape as shape_ops
from nuvec.ops import sharing
from nuvec.ops.arguments import (as_array, bool_flag, check_shape, check_weak_int, fresh, index_int,
                                 mlx_array_of, real_number)
from nuvec.ops.families import apply

__all__ = [
    "array", "asarray", "full", "zeros", "ones", "zeros_like", "ones_like", "full_like",
    "empty_like",
    "arange", "linspace", "meshgrid",
]  # fmt: skip


def array(val: Any, dtype: dt.Dtype | None = None, *, copy: bool | None = True) -> Array:
    """An array from a scalar, nested lists/tuples, NumPy data, another library's array (or
    a DLPack capsule, read once) or another array.

    Python ints become int32 (int64 if they do not fit), floats float32, bools bool; NumPy
    float64 data becomes float32 unless `dtype` says otherwise (MLX's rule).

    Args:
        val: the data; an object with MLX's `__mlx_array__` method gives the array it returns.
        dtype: the dtype to store; default as above.
        copy: for NumPy data and other buffers, True (the default) copies; None shares the
            memory when the dtype allows and copies otherwise; False shares or raises.

    Raises:
        TypeError: if `dtype` is not a dtype, the data is not numeric or `copy` is not a bool
            or None.
        ValueError: if nested sequences are ragged, or `copy=False` and a copy is needed.
        BufferError: for a DLPack capsule already read, or of GPU data.

    Example:
        >>> import nuvec as mx
        >>> mx.array([1, 2, 3])
        array([1, 2, 3], dtype=int32)
    """
    target = dt.to_dtype(dtype, "array") if dtype is not None else None
    val = mlx_array_of(val, "array")
    if is_capsule(val):  # read once, shared: then as NumPy data
        val = capsule_data(val, public_caller("array"))
    if copy is not True and copy is not None:
        copy = bool_flag(copy, "array", "copy")
    if copy is not True:
        shared = sharing.shared_array(val, target, copy, "array")
        if shared is not None:
            return shared
    if isinstance(val, Array):
        if target is None or target is val.dtype:
            return fresh(val)
        return cast(val, target, to_stream(None))
    if isinstance(val, (list, tuple)) and any(isinstance(x, Array) for x in val):
        return join.stack([array(x, dtype) for x in val])  # MLX stacks the items, keeping dtypes
    return from_data(val, target)


def asarray(a: Any, dtype: dt.Dtype | None = None, *, copy: bool | None = None) -> Array:
    """`array` with the array API's `copy` default: memory is shared where the dtype allows.

    An array of `dtype` comes back as a new handle on its value, no copy; NumPy data and other
    buffers whose dtype is kept are shared (later writes to them show through).

    Args:
        a: the data.
        dtype: the dtype to store; default as in `array`.
        copy: True always copies foreign data, None shares when possible, False shares or
            raises.

    Returns:
        `a` itself, or a new array.

    Raises:
        TypeError: as `array`.
        ValueError: as `array`.

    Example:
        >>> import nuvec as mx
        >>> mx.asarray([1, 2], mx.float32).tolist()
        [1.0, 2.0]
    """
    return array(a, dtype, copy=copy)


def full(shape: Any, vals: Any, dtype: dt.Dtype | None = None, *, stream: Any = None) -> Array:
    """An array of `shape` filled with `vals` (a scalar or an array broadcast to `shape`).

    Args:
        shape: an int or a sequence of ints.
        vals: the fill value(s).
        dtype: the dtype; default `vals`' dtype (a Python float gives float32).

    Raises:
        ValueError: if `vals` cannot be broadcast to `shape`, a dimension is negative, or
            the array would need more bytes than the device's memory.

    Example:
        >>> import nuvec as mx
        >>> mx.full((2,), 7).tolist()
        [7, 7]
    """
    shape = check_shape(shape, "full")
    if dtype is not None:
        check_weak_int("full", vals, dt.to_dtype(dtype, "full"))
    value = array(vals, dtype)
    s = to_stream(stream)
    # the result is a broadcast view, but a created array must be one that can exist
    memory.check_allocation("full", shape, value.dtype.size, value.dtype.name, s.device)
    if value.ndim == 0 and shape:  # (a scalar broadcasts to any shape: checked above)
        return record1(shape_ops.BroadcastTo(shape), (value,), s)
    return shape_ops.broadcast_to(value, shape, stream=s)


def zeros(shape: Any, dtype: dt.Dtype | None = dt.float32, *, stream: Any = None) -> Array:
    """An array of zeros of `shape` and `dtype` (default float32).

    Args:
        shape: an int or a sequence of ints.
        dtype: the dtype (None: float32).
        stream: the stream (or device) to record on.

    Returns:
        The zeros.

    Raises:
        ValueError: if a dimension is negative.

    Example:
        >>> import nuvec as mx
        >>> mx.zeros((2, 3)).shape
        (2, 3)
    """
    return full(shape, 0, dtype or dt.float32, stream=stream)


def ones(shape: Any, dtype: dt.Dtype | None = dt.float32, *, stream: Any = None) -> Array:
    """An array of ones of `shape` and `dtype` (default float32).

    Args:
        shape: an int or a sequence of ints.
        dtype: the dtype (None: float32).
        stream: the stream (or device) to record on.

    Returns:
        The ones.

    Raises:
        ValueError: if a dimension is negative.

    Example:
        >>> import nuvec as mx
        >>> mx.ones((2, 3)).shape
        (2, 3)
    """
    return full(shape, 1, dtype or dt.float32, stream=stream)


def zeros_like(a: Any, /, dtype: dt.Dtype | None = None, *, stream: Any = None) -> Array:
    """Zeros with `a`'s shape and dtype (or `dtype`).

    Args:
        a: the array whose shape and dtype are used.
        dtype: the dtype of the result; default `a`'s.
        stream: the stream (or device) to record on.

    Returns:
        The zeros.

    Raises:
        TypeError: if `a` cannot be converted to an array.

    Example:
        >>> import nuvec as mx
        >>> mx.zeros_like(mx.array([1.5, 2.5])).tolist()
        [0.0, 0.0]
    """
    a = as_array(a, "zeros_like")
    return full(a.shape, 0, a.dtype if dtype is None else dtype, stream=stream)


def ones_like(a: Any, /, dtype: dt.Dtype | None = None, *, stream: Any = None) -> Array:
    """Ones with `a`'s shape and dtype (or `dtype`).

    Args:
        a: the array whose shape and dtype are used.
        dtype: the dtype of the result; default `a`'s.
        stream: the stream (or device) to record on.

    Returns:
        The ones.

    Raises:
        TypeError: if `a` cannot be converted to an array.

    Example:
        >>> import nuvec as mx
        >>> mx.ones_like(mx.array([5, 6])).tolist()
        [1, 1]
    """
    a = as_array(a, "ones_like")
    return full(a.shape, 1, a.dtype if dtype is None else dtype, stream=stream)


def full_like(a: Any, /, vals: Any, dtype: dt.Dtype | None = None, *,
              stream: Any = None) -> Array:
    """An array with `a`'s shape filled with `vals`, of `a`'s dtype (or `dtype`).

    Args:
        a: the array whose shape (and default dtype) are used.
        vals: the fill value(s), a scalar or an array broadcast to `a`'s shape.
        dtype: the dtype of the result; default `a`'s.
        stream: the stream (or device) to record on.

    Returns:
        The filled array.

    Raises:
        TypeError: if `a` cannot be converted to an array or `dtype` is not a dtype.
        ValueError: if `vals` does not broadcast to `a`'s shape.

    Example:
        >>> import nuvec as mx
        >>> mx.full_like(mx.array([1.5, 2.5]), 7, mx.int32).tolist()
        [7, 7]
    """
    a = as_array(a, "full_like")
    return full(a.shape, vals, a.dtype if dtype is None else dtype, stream=stream)


def empty_like(a: Any, /, dtype: Any = None, *, stream: Any = None) -> Array:
    """An array with `a`'s shape and dtype (or `dtype`); nuvec fills it with zeros (never
    stale memory), as MLX's `empty_like` is `zeros_like`.

    Args:
        a: the array whose shape and dtype are used.
        dtype: the result's dtype; default `a`'s.
        stream: the stream (or device) to record on.

    Returns:
        The zeros.

    Raises:
        TypeError: if `a` cannot be converted to an array.

    Example:
        >>> import nuvec as mx
        >>> mx.empty_like(mx.array([1, 2])).tolist()
        [0, 0]
    """
    a = as_array(a, "empty_like")
    return full(a.shape, 0, a.dtype if dtype is None else dtype, stream=stream)


# -- input-less primitives -----------------------------------------------------------------


class Source(Primitive):
    """A primitive with no inputs: its output is a constant, so no rule has work to do."""

    __slots__ = ()
    abstract = True  # a rule family, not an operation

    def vjp(self, primals, cotangents, argnums, outputs):
        return []

    def jvp(self, primals, tangents, outputs):
        return [None]

    def vmap(self, inputs, axes):
        return [apply(self)], [None]


class Arange(Source):
    """`start + i * step` for i in [0, size), of `dtype`."""

    __slots__ = ("start", "step", "size", "dtype")

    def __init__(self, start: float, step: float, size: int, dtype: dt.Dtype):
        self.start, self.step, self.size, self.dtype = start, step, size, dtype

    def params(self):
        return (self.start, self.step, self.size, self.dtype)

    def output_specs(self, inputs):
        return (((self.size,), self.dtype),)


def is_int(x: Any) -> bool:
    """Whether `x` is an int (a NumPy integer too), not a bool."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def arange(
    bound: float | None = None, /, stop: float | None = None, step: float | None = None,
    dtype: dt.Dtype | None = None, *, start: float | None = None, stream: Any = None,
) -> Array:  # fmt: skip
    """Evenly spaced values `start, start + step, ...` below `stop` (above, for step < 0).

    MLX's two forms: `arange(start, stop, step)` and `arange(stop, step=...)`. A first
    positional bound is the start when `stop` is given, else the stop (starting at 0);
    `start=` by keyword needs `stop`. The dtype is int32 if every bound is an int, else
    float32.

    Args:
        bound: the first positional bound: the start, or the stop when `stop` is None.
        stop: the end, excluded.
        step: the spacing (default 1).
        dtype: the dtype of the result.
        start: the first value, by keyword (with `stop`).

    Raises:
        ValueError: for a zero or NaN step, an infinite or NaN bound, a bool dtype or a size
            over 2**31 - 1.
        TypeError: for a bound that is not an int or a float, no bound at all, `start=`
            without `stop` or a start given twice.

    Example:
        >>> import nuvec as mx
        >>> mx.arange(1, 7, 2).tolist()
        [1, 3, 5]
    """
    if start is not None:
        if bound is not None:
            raise TypeError(f"arange: the start is given twice ({bound} and start={start})")
        if stop is None:
            raise TypeError(f"arange: start={start} needs a stop (arange(start, stop) or "
                            f"arange(stop))")
    elif stop is None:
        start, stop = 0, bound
    else:
        start = 0 if bound is None else bound
    step = 1 if step is None else step
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, bool):
            raise TypeError(f"arange: {name} must be an int or a float, got {type(v).__name__}")
    if dtype is not None:
        out = dt.to_dtype(dtype, "arange")
    elif is_int(start) and is_int(stop) and is_int(step):
        wide = not all(-2**31 <= int(v) < 2**31 for v in (start, stop, step))
        out = dt.int64 if wide else dt.int32  # bounds past int32 give int64 (MLX)
    else:
        out = dt.float32
    if out is dt.bool_:
        raise ValueError("arange: bool is not supported")
    if step == 0 or not all(math.isfinite(v) for v in (start, stop)) or math.isnan(step):
        raise ValueError(f"arange: cannot compute the length of arange({start}, {stop}, {step})")
    if math.isinf(step):
        size = 1 if (stop - start) * step > 0 else 0
    else:
        size = max(math.ceil((stop - start) / step), 0)
    if size > 2**31 - 1:
        raise ValueError(
            f"{public_caller('arange')}: the size {size} exceeds the maximum 2**31 - 1"
        )
    return record1(Arange(start, step, int(size), out), (), to_stream(stream))


def linspace(
    start: float, stop: float, num: int = 50, dtype: dt.Dtype | None = dt.float32, *,
    endpoint: bool = True, stream: Any = None,
) -> Array:  # fmt: skip
    """`num` evenly spaced values from `start` to `stop`, both included (`dtype=None`: float32).

    With `endpoint=False` the values step by `(stop - start) / num` and `stop` is left out.

    Args:
        start: the first value.
        stop: the last value.
        num: the number of values.
        dtype: the dtype of the result (None: float32).
        endpoint: whether `stop` is the last value.
        stream: the stream (or device) to record on.

    Returns:
        A 1-D array of `num` values.

    Raises:
        ValueError: if `num` is negative.
        TypeError: if `endpoint` is not a bool.

    Example:
        >>> import nuvec as mx
        >>> mx.linspace(0, 1, 5).tolist()
        [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    num = index_int(num, "linspace", "num", high=2**31 - 1)
    endpoint = bool_flag(endpoint, "linspace", "endpoint")
    start = real_number(start, "linspace", "start", finite=False)
    stop = real_number(stop, "linspace", "stop", finite=False)
    if num < 0:
        raise ValueError(f"linspace: the number of samples must be non-negative, got {num}")
    out = dt.float32 if dtype is None else dt.to_dtype(dtype, "linspace")
    s = to_stream(stream)
    compute = dt.float64 if out is dt.float64 else dt.float32
    if num == 1:
        return unary.astype(full((1,), start, compute, stream=s), out, stream=s)
    steps = num - 1 if endpoint else num
    t = binary.divide(arange(0, num, 1, compute, stream=s), float(steps), stream=s)
    values = binary.add(
        binary.multiply(binary.subtract(1.0, t, stream=s), float(start), stream=s),
        binary.multiply(t, float(stop), stream=s),
        stream=s,
    )
    return unary.astype(values, out, stream=s)


def meshgrid(
    *arrays: Any, sparse: bool = False, indexing: str = "xy", stream: Any = None
) -> tuple[Array, ...]:
    """Coordinate grids from 1-D coordinate arrays (inputs are flattened), as NumPy.

    Args:
        *arrays: the coordinates of each dimension.
        sparse: return broadcastable arrays with size-1 axes instead of full grids.
        indexing: "xy" (Cartesian: the first two outputs' axes swapped) or "ij" (matrix).

    Returns:
        A tuple of one array per input.

    Raises:
        ValueError: if `indexing` is neither "xy" nor "ij".

    Example:
        >>> import nuvec as mx
        >>> [g.shape for g in mx.meshgrid(mx.arange(3), mx.arange(2))]
        [(2, 3), (2, 3)]
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    sparse = bool_flag(sparse, "meshgrid", "sparse")
    xs = [as_array(x, "meshgrid") for x in arrays]
    n = len(xs)
    sizes = [x.size for x in xs]
    order = list(range(n))
    if indexing == "xy" and n > 1:
        order[0], order[1] = 1, 0
    outs = []
    for i, x in enumerate(xs):
        shape = [1] * n
        shape[order[i]] = sizes[i]
        outs.append(shape_ops.reshape(x, shape, stream=stream))
    if sparse:
        return tuple(outs)
    full_shape = [1] * n
    for i in range(n):
        full_shape[order[i]] = sizes[i]
    return tuple(shape_ops.broadcast_to(o, full_shape, stream=stream) for o in outs)

