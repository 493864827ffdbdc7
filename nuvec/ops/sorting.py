"""Sorting and selection: sort, argsort, partition, argpartition, topk, searchsorted.

Index results are uint32 (MLX). `Sort` and `Partition` are differentiable: their cotangent goes
back through the permutation they applied (recomputed with `argsort`/`argpartition`).
"""

from __future__ import annotations

import operator

from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array, record1
from nuvec.graph.device import Stream, to_stream
from nuvec.graph.primitive import Primitive
from nuvec.graph.convert import scalar_array
from nuvec.ops.arguments import Scalar, as_array, normalize_axis, promote
from nuvec.ops.families import apply, batch_size, move_batch_to_front
from nuvec.ops.indexing import take_along_axis
from nuvec.ops.shape import reshape

__all__ = ["sort", "argsort", "partition", "argpartition", "topk", "searchsorted"]


class _AlongAxis(Primitive):
    """Base of the per-axis selection primitives: output has the input's shape."""

    __slots__ = ("axis",)
    abstract = True

    def __init__(self, axis: int):
        self.axis = axis

    def params(self):
        return (self.axis,)

    def out_dtype(self, dtype: dt.Dtype) -> dt.Dtype:
        return dtype

    def output_specs(self, inputs):
        x = inputs[0]
        return ((x.shape, self.out_dtype(x.dtype)),)

    def shifted(self, by: int) -> _AlongAxis:
        return type(self)(self.axis + by)

    def vmap(self, inputs, axes):
        x = move_batch_to_front(inputs[0], axes[0])
        return [apply(self.shifted(1), x)], [0]


class _Permuting(_AlongAxis):
    """Values reordered along the axis by the permutation `self.order(x)` (each subclass
    defines it with its index primitive); the rules follow that permutation."""

    __slots__ = ()
    abstract = True

    def vjp(self, primals, cotangents, argnums, outputs):
        x = primals[0]
        if not x.dtype.is_inexact:
            return [None]
        inverse = apply(ArgSort(self.axis), self.order(x))
        return [take_along_axis(cotangents[0], inverse, axis=self.axis)]

    def jvp(self, primals, tangents, outputs):
        x = primals[0]
        if not x.dtype.is_inexact:
            return [None]
        return [take_along_axis(tangents[0], self.order(x), axis=self.axis)]


class Sort(_Permuting):
    """Sorted values along `axis`."""

    __slots__ = ()

    def order(self, x):
        return apply(ArgSort(self.axis), x)


class ArgSort(_AlongAxis):
    """The (stable) sorting permutation along `axis`, uint32; no gradient."""

    __slots__ = ()

    def out_dtype(self, dtype):
        return dt.uint32

    def vjp(self, primals, cotangents, argnums, outputs):
        return [None]

    def jvp(self, primals, tangents, outputs):
        return [None]


class Partition(_Permuting):
    """Values partitioned around position `kth` along `axis` (NumPy's partition)."""

    __slots__ = ("kth",)

    def __init__(self, kth: int, axis: int):
        self.kth, self.axis = kth, axis

    def params(self):
        return (self.kth, self.axis)

    def shifted(self, by):
        return Partition(self.kth, self.axis + by)

    def order(self, x):
        return apply(ArgPartition(self.kth, self.axis), x)


class ArgPartition(ArgSort):
    """Indices that partition around position `kth` along `axis`, uint32; no gradient."""

    __slots__ = ("kth",)

    def __init__(self, kth: int, axis: int):
        self.kth, self.axis = kth, axis

    def params(self):
        return (self.kth, self.axis)

    def shifted(self, by):
        return ArgPartition(self.kth, self.axis + by)


class SearchSorted(Primitive):
    """Insertion points of `v` into the sorted last axis of `a`, uint32; no gradient.

    With `batch` > 0 the first `batch` axes of `a` and `v` are batch axes (vmap adds them).
    """

    __slots__ = ("side", "batch")

    def __init__(self, side: str, batch: int = 0):
        self.side, self.batch = side, batch

    def params(self):
        return (self.side, self.batch)

    def output_specs(self, inputs):
        return ((inputs[1].shape, dt.uint32),)

    def vjp(self, primals, cotangents, argnums, outputs):
        return [None for _ in argnums]

    def jvp(self, primals, tangents, outputs):
        return [None]

    def vmap(self, inputs, axes):
        if axes[0] is None and self.batch == 0:
            return [apply(self, inputs[0], inputs[1])], [axes[1]]
        size = batch_size(inputs, axes)
        a, v = (move_batch_to_front(x, ax, size) for x, ax in zip(inputs, axes))
        return [apply(SearchSorted(self.side, self.batch + 1), a, v)], [0]


def _prepare(op: str, a: Any, axis: int | None, s: Stream) -> tuple[Array, int]:
    """`a` as an array and the normalized axis (None flattens)."""
    a = as_array(a, op)  # complex64 orders lexicographically (real, then imaginary), as NumPy
    if axis is None:
        return reshape(a, (a.size,), stream=s), 0
    if a.ndim == 0:
        raise ValueError(f"{op}: axis {axis} is out of bounds for an array with 0 dimensions")
    return a, normalize_axis(axis, a.ndim, op)


def _kth(op: str, kth: int, n: int) -> int:
    if not isinstance(kth, int) or isinstance(kth, bool):
        raise TypeError(f"{op}: kth must be an int, got {type(kth).__name__}")
    if not -n <= kth < n:
        raise ValueError(f"{op}: kth {kth} is out of bounds for an axis of size {n}")
    return kth % n


def sort(a: Any, /, axis: int | None = -1, *, stream: Any = None) -> Array:
    """Sorted copy of `a` along `axis` (NaNs last, as NumPy).

    Args:
        a: the input array.
        axis: the axis to sort; None sorts the flattened array.
        stream: the stream or device to run on.

    Returns:
        The sorted array, of `a`'s dtype.

    Raises:
        ValueError: if `axis` is out of range.
        TypeError: for complex input.

    Example:
        >>> import nuvec as mx
        >>> mx.sort(mx.array([3, 1, 2])).tolist()
        [1, 2, 3]
    """
    s = to_stream(stream)
    a, ax = _prepare("sort", a, axis, s)
    return record1(Sort(ax), (a,), s)


def argsort(a: Any, /, axis: int | None = -1, *, stream: Any = None) -> Array:
    """Indices that sort `a` along `axis` (a stable sort: ties keep their order).

    Args:
        a: the input array.
        axis: the axis to sort; None sorts the flattened array.
        stream: the stream or device to run on.

    Returns:
        A uint32 array of `a`'s shape (the flattened size when `axis` is None).

    Raises:
        ValueError: if `axis` is out of range.
        TypeError: for complex input.

    Example:
        >>> import nuvec as mx
        >>> mx.argsort(mx.array([3, 1, 2])).tolist()
        [1, 2, 0]
    """
    s = to_stream(stream)
    a, ax = _prepare("argsort", a, axis, s)
    return record1(ArgSort(ax), (a,), s)


def partition(a: Any, /, kth: int, axis: int | None = -1, *, stream: Any = None) -> Array:
    """`a` partitioned along `axis`: position `kth` holds the value a sort would put there,
    smaller-or-equal values come before it and greater-or-equal ones after, each in no
    particular order.

    Args:
        a: the input array.
        kth: the pivot position; negative counts from the end.
        axis: the axis to partition; None partitions the flattened array.
        stream: the stream or device to run on.

    Raises:
        ValueError: if `axis` or `kth` is out of range.
        TypeError: for complex input or a non-integer `kth`.

    Example:
        >>> import nuvec as mx
        >>> mx.partition(mx.array([3, 1, 2]), 0)[0].item()
        1
    """
    s = to_stream(stream)
    a, ax = _prepare("partition", a, axis, s)
    return record1(Partition(_kth("partition", kth, a.shape[ax]), ax), (a,), s)


def argpartition(a: Any, /, kth: int, axis: int | None = -1, *, stream: Any = None) -> Array:
    """Indices that partition `a` along `axis` around position `kth` (see `partition`).

    Args:
        a: the input array.
        kth: the pivot position; negative counts from the end.
        axis: the axis to partition; None partitions the flattened array.
        stream: the stream or device to run on.

    Returns:
        A uint32 array of `a`'s shape (the flattened size when `axis` is None).

    Raises:
        ValueError: if `axis` or `kth` is out of range.
        TypeError: for complex input or a non-integer `kth`.

    Example:
        >>> import nuvec as mx
        >>> mx.argpartition(mx.array([3, 1, 2]), 0)[0].item()
        1
    """
    s = to_stream(stream)
    a, ax = _prepare("argpartition", a, axis, s)
    return record1(ArgPartition(_kth("argpartition", kth, a.shape[ax]), ax), (a,), s)


def topk(a: Any, /, k: int, axis: int | None = -1, *, stream: Any = None) -> Array:
    """The `k` largest elements of `a` along `axis`, not necessarily in sorted order (MLX).

    Args:
        a: the input array.
        k: how many elements to keep, `0 <= k <= a.shape[axis]`.
        axis: the axis to select over; None selects over the flattened array.
        stream: the stream or device to run on.

    Returns:
        An array with `axis` of size `k`, of `a`'s dtype.

    Raises:
        ValueError: if `axis` or `k` is out of range.
        TypeError: for complex input or a non-integer `k`.

    Example:
        >>> import nuvec as mx
        >>> sorted(mx.topk(mx.array([3, 1, 4, 2]), 2).tolist())
        [3, 4]
    """
    s = to_stream(stream)
    a, ax = _prepare("topk", a, axis, s)
    n = a.shape[ax]
    if isinstance(k, bool) or not hasattr(k, "__index__"):
        raise TypeError(f"topk: k must be an int, got {type(k).__name__}")
    try:
        k = operator.index(k)  # a size-1 integer array works too (MLX)
    except TypeError:
        raise TypeError(f"topk: k must be an int, got {k!r} ({type(k).__name__})") from None
    if not 0 <= k <= n:
        raise ValueError(f"topk: k {k} is out of range for an axis of size {n}")
    index = (slice(None),) * ax + (slice(n - k, None),)
    if k == 0 or k == n:
        return a[index]
    return record1(Partition(n - k, ax), (a,), s)[index]


def searchsorted(a: Any, v: Any, /, side: str = "left", *, stream: Any = None) -> Array:
    """Indices where the values `v` would be inserted into the sorted 1-D `a` (MLX 0.32's
    `searchsorted`, NumPy's rule).

    Args:
        a: a 1-D array sorted in ascending order.
        v: the values to insert, any shape.
        side: "left" gives the first suitable index, "right" the last.
        stream: the stream or device to run on.

    Returns:
        A uint32 array of `v`'s shape (0-d for a scalar `v`).

    Raises:
        ValueError: if `a` is not 1-D or `side` is not "left" or "right".
        TypeError: for complex input.

    Example:
        >>> import nuvec as mx
        >>> mx.searchsorted(mx.array([1, 2, 3]), mx.array([2, 5])).tolist()
        [1, 3]
    """
    s = to_stream(stream)
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    value = v
    a, v = promote("searchsorted", a, v, s)
    if isinstance(value, Scalar):  # a Python scalar gives a 0-d result, not one of a's shape
        v = scalar_array(value, v.dtype, ())
    if a.ndim != 1:
        raise ValueError(f"searchsorted: a must be 1-D, got shape {a.shape}")
    if a.dtype is dt.complex64:
        raise DtypeError("searchsorted: complex64 has no ordering")
    return record1(SearchSorted(side), (a, v), s)
