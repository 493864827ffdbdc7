"""Reductions over axes: sums, products, extrema, statistics, softmax and logsumexp."""

from __future__ import annotations

from typing import Any, Sequence

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, record1
from nuvec.graph.device import to_stream
from nuvec.ops.arguments import as_array, normalize_axes
from nuvec.ops.families import Linear, Reduction

__all__ = ["sum"]

Axis = int | Sequence[int] | None


def _finish(op: str, out: Array, x: Array, axes: tuple[int, ...], keepdims: bool, s) -> Array:
    if keepdims:
        return out
    from nuvec.ops.shape import reshape

    return reshape(out, tuple(d for i, d in enumerate(x.shape) if i not in axes), stream=s)


class Sum(Linear, Reduction):
    """Sum over `axes` (kept as size-1); the derivative broadcasts the cotangent back."""

    __slots__ = ()

    def out_dtype(self, dtype):
        return _sum_dtype(dtype)

    def vjp(self, primals, cotangents, argnums, outputs):
        from nuvec.ops.shape import broadcast_to

        return [broadcast_to(cotangents[0], primals[0].shape)]


def _sum_dtype(dtype: dt.Dtype) -> dt.Dtype:
    """MLX sums bools and small ints in int32 (uint32 for small unsigned)."""
    if dtype is dt.bool_ or dtype in (dt.int8, dt.int16):
        return dt.int32
    if dtype in (dt.uint8, dt.uint16):
        return dt.uint32
    return dtype


def sum(a: Any, /, axis: Axis = None, keepdims: bool = False, *, stream: Any = None) -> Array:
    """Sum of elements over `axis` (all axes when None).

    Raises:
        ValueError: if an axis is out of range or repeated.
    """
    a = as_array(a, "sum")
    axes = normalize_axes(axis, a.ndim, "sum")
    s = to_stream(stream)
    out = record1(Sum(axes), (a,), s)
    return _finish("sum", out, a, axes, keepdims, s)

