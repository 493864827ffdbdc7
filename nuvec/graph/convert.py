"""Turning a user's input into an array: evaluated leaves from data, and dtype casts.

`from_data` applies MLX's conversion rules (Python ints become int32, or int64 when they do not
fit; floats and float64 data float32; bools bool) and stores one leaf; `scalar_array` keeps a
small cache of scalar leaves; `cast` records an `AsType` node. Everything an operation does to
its arguments before recording happens here or in `nuvec.ops.arguments`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, Node, handle, leaf, record1
from nuvec.graph.caller import public_caller
from nuvec.graph.device import Stream, to_stream
from nuvec.graph.dlpack import host_data
from nuvec.graph.primitive import Primitive

Shape = tuple[int, ...]


class AsType(Primitive):
    """Cast to `dtype`, elementwise; the derivative casts back (zero for non-float targets)."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: dt.Dtype):
        self.dtype = dtype

    def params(self):
        return (self.dtype,)

    def output_specs(self, inputs):
        return ((inputs[0].shape, self.dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        x = primals[0]
        if not (x.dtype.is_inexact and self.dtype.is_inexact):
            return [None]
        return [record1(AsType(x.dtype), (cotangents[0],), to_stream(None))]

    def jvp(self, primals, tangents, outputs):
        if not (primals[0].dtype.is_inexact and self.dtype.is_inexact):
            return [None]
        return [record1(self, (tangents[0],), to_stream(None))]

    def vmap(self, inputs, axes):
        return [record1(self, (inputs[0],), to_stream(None))], [axes[0]]


def cast(a: Array, dtype: dt.Dtype, stream: Stream) -> Array:
    """`a` itself if it has `dtype`, else `a` cast to `dtype` on `stream`."""
    if a.dtype is dtype:
        return a
    return record1(AsType(dtype), (a,), stream)


_scalar_leaves: dict[tuple, Any] = {}  # (type, value, dtype, shape) -> leaf node


def scalar_array(value: Any, dtype: dt.Dtype, shape: Shape = ()) -> Array:
    """An evaluated array of `shape` filled with a Python scalar, of `dtype` (one element stored).

    Leaves are cached by value (not floating zeros, whose sign a key cannot tell, nor NaN);
    each call returns a new handle, so an in-place update of one never changes the cache.
    """
    key = (type(value), value, dtype, shape)
    node = _scalar_leaves.get(key)  # holds no float zero or NaN (see below): a hit is the value
    if node is not None:
        return handle(node, 0)
    cacheable = value == value and (value != 0 or type(value) is int)  # (`relu`'s 0)
    try:
        data = np.asarray(value, dtype=dtype.np)
    except OverflowError:  # negative ints wrap into uint64, as a cast would (MLX)
        data = np.asarray(np.asarray(value).astype(dtype.np))
    if shape:  # a read-only view repeating the one element (np.broadcast_to, but cheaper)
        data = np.ndarray(shape, dtype.np, data, 0, (0,) * len(shape))
        data.flags.writeable = False
    out = leaf(data, dtype)
    if cacheable:
        if len(_scalar_leaves) >= 1024:
            _scalar_leaves.clear()
        _scalar_leaves[key] = out._node
    return out


def scalar_node(value: Any, dtype: dt.Dtype, shape: Shape) -> Node:
    """The leaf node of `scalar_array(value, dtype, shape)` (cached as it caches)."""
    node = _scalar_leaves.get((type(value), value, dtype, shape))
    return node if node is not None else scalar_array(value, dtype, shape)._node


def stored_scalar(value: Any, dtype: dt.Dtype, shape: Shape) -> Node | None:
    """The cached leaf node of `scalar_array(value, dtype, shape)`, None where there is none
    (nothing is made)."""
    return _scalar_leaves.get((type(value), value, dtype, shape))


def _infer_dtype(data: np.ndarray) -> dt.Dtype:
    """MLX's dtype for converted data: Python floats and float64 data become float32."""
    kind = data.dtype.kind
    if kind == "f" and data.dtype != np.float16 and data.dtype.name != "bfloat16":
        return dt.float32
    if kind == "c":
        return dt.complex64
    return dt.from_numpy_dtype(data.dtype)


def _check_wide_ints(data: np.ndarray, target: dt.Dtype | None) -> None:
    """NumPy stores Python ints in [2**63, 2**64) as uint64; only a uint64 target takes them (a
    cast to int64 would wrap them silently)."""
    if data.dtype.kind == "u" and target is not dt.uint64:
        raise dt.IntegerOverflowError(f"{public_caller('array')}: the integer {data.max()} does "
                                      "not fit in int64")


def _reject_wide_python_ints(a: Any) -> None:
    """Raises if nested lists `a` hold only Python ints, one of them past int64's range."""
    try:
        items = np.asarray(a, dtype=object).ravel().tolist()
    except ValueError:  # ragged
        return
    if items and all(type(v) is int or type(v) is bool for v in items):
        raise dt.IntegerOverflowError(f"{public_caller('array')}: the integer "
                                      f"{max(items, key=abs)} does not fit in int64")


def _from_python(a: Any, target: dt.Dtype | None) -> tuple[np.ndarray, dt.Dtype]:
    """Nested lists/tuples of scalars as NumPy data and MLX's default dtype."""
    try:
        data = np.asarray(a)
    except ValueError:
        data = np.asarray(None, dtype=object)
    wide = data.dtype == object or (data.dtype.kind == "f" and data.size
                                    and np.abs(data).max() >= 2**63)
    if wide:  # NumPy holds ints past int64 as objects or, mixed with others, as floats
        _reject_wide_python_ints(a)
    if data.dtype == object:
        raise ValueError(f"{public_caller('array')}: nested sequences must be rectangular and "
                         "hold numbers")
    kind = data.dtype.kind
    if kind == "b":
        return data, dt.bool_
    if kind == "u":
        _check_wide_ints(data, target)
        return data, dt.uint64
    if kind == "i":
        if data.size and (data.max() >= 2**31 or data.min() < -(2**31)):
            return data, dt.int64
        return data, dt.int32
    if kind == "f":
        return data, dt.float32
    if kind == "c":
        return data, dt.complex64
    raise dt.DtypeError(f"{public_caller('array')}: cannot make an array from data of type "
                        f"{data.dtype}")


def foreign_data(val: Any) -> np.ndarray:
    """Another library's array as NumPy data, shared where its layout allows: through
    `__array__` (or `__array_interface__`), else (PyTorch's bfloat16, a GPU tensor) DLPack."""
    if hasattr(val, "__array__") or hasattr(val, "__array_interface__"):
        try:
            return np.asarray(val)
        except (TypeError, ValueError, RuntimeError):
            if not hasattr(val, "__dlpack__"):
                raise
    return host_data(val, None, public_caller("array"))


def from_data(val: Any, target: dt.Dtype | None = None) -> Array:
    """An evaluated array from a scalar, nested lists/tuples of scalars or NumPy-like data.

    `target` is the dtype to store; None applies MLX's defaults (see the module's summary).

    Raises:
        TypeError: if the data is not numeric.
        ValueError: if nested sequences are ragged or an integer does not fit.
    """
    if isinstance(val, (bool, int, float, complex)):
        inferred = dt.scalar_dtype(val)
        data = np.asarray(val)
        _check_wide_ints(data, target)
    elif isinstance(val, (np.ndarray, np.generic)):
        data = np.asarray(val)
        inferred = _infer_dtype(data)
    elif isinstance(val, (list, tuple)):
        data, inferred = _from_python(val, target)
    elif hasattr(val, "__array__") or hasattr(val, "__dlpack__"):
        data = foreign_data(val)
        inferred = _infer_dtype(data)
    else:
        try:  # bytes, bytearray, memoryview, array.array: anything with the buffer protocol
            data = np.asarray(memoryview(val))
        except TypeError:
            raise dt.DtypeError(f"{public_caller('array')}: cannot make an array from "
                                f"{type(val).__name__}") from None
        inferred = _infer_dtype(data)
    out = target or inferred
    if data.dtype.kind == "c" and out.kind in "iuf":  # a real number keeps the real part
        data = data.real
    elif data.dtype == dt.bfloat16.np and out.kind in "biu":
        # through float32 (exact), as `astype` casts: out-of-range values and NaN then wrap
        # as float32's do (MLX), where ml_dtypes' own cast gives 0
        data = data.astype(np.float32)
    try:
        if data.dtype != out.np:  # casts overflow to inf and take NaN to ints quietly (MLX)
            with np.errstate(over="ignore", invalid="ignore"):
                converted = np.array(data, dtype=out.np, copy=True)
        else:
            converted = np.array(data, dtype=out.np, copy=True)
    except OverflowError as exc:
        raise dt.IntegerOverflowError(f"{public_caller('array')}: cannot convert data to "
                                      f"{out.name}: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"{public_caller('array')}: cannot convert data to {out.name}: "
                         f"{exc}") from None
    return leaf(converted, out, upload=True)  # on a GPU default device: uploaded
