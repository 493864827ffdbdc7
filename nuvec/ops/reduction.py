"""Reductions over axes: sums, products, extrema, arg-extrema and logic.

Reduction primitives keep the reduced axes as size-1 dimensions (`Reduction`); the public op
squeezes them unless `keepdims`. `softmax` and `logsumexp` live in `softmax.py`, statistics in
`statistics.py`.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, record1
from nuvec.graph.caller import public_caller
from nuvec.graph.device import Stream, to_stream
from nuvec.ops import binary, comparison, indexing, scan, unary
from nuvec.ops import shape as shape_ops
from nuvec.ops.arguments import as_array, bool_flag, fresh, normalize_axes
from nuvec.ops.families import Linear, Reduction, apply, is_ones, ones, squeezed_shape

__all__ = [
    "sum", "prod", "max", "min", "minmax", "argmax", "argmin", "all", "any",
]  # fmt: skip

Axis = int | Sequence[int] | None


def _squeeze(out: Array, x: Array, axes: tuple[int, ...], keepdims: bool, s: Stream) -> Array:
    """`out` (kept axes) without the reduced `axes` unless `keepdims`: one `Reshape` recorded
    directly (its shape is known valid; the public op's checks cost more than the node)."""
    if keepdims or not axes:
        return out
    return record1(shape_ops.Reshape(squeezed_shape(x.shape, axes)), (out,), s)


def at_least_float(dtype: dt.Dtype) -> dt.Dtype:
    """`dtype` if inexact, else the float dtype MLX computes means and logs in (float32)."""
    return dtype if dtype.is_inexact else dt.promote_types(dtype, dt.float32)


def sum_dtype(dtype: dt.Dtype) -> dt.Dtype:
    """MLX sums and multiplies bools and small ints in 32 bits: int32 (uint32 if unsigned)."""
    if dtype is dt.bool_ or dtype in (dt.int8, dt.int16):
        return dt.int32
    if dtype in (dt.uint8, dt.uint16):
        return dt.uint32
    return dtype


def reduced_size(x: Array, axes: tuple[int, ...]) -> int:
    """How many elements each reduction group over `axes` holds."""
    n = 1
    for a in axes:
        n *= x.shape[a]
    return n


# -- primitives ----------------------------------------------------------------------------


class Sum(Linear, Reduction):
    """Sum over `axes` (kept as size-1); the derivative broadcasts the cotangent back."""

    __slots__ = ()

    def out_dtype(self, dtype):
        return sum_dtype(dtype)

    def vjp(self, primals, cotangents, argnums, outputs):
        g, shape = cotangents[0], primals[0].shape  # g keeps the summed axes as size 1
        if g.shape == shape:
            return [g]
        return [ones(shape, g.dtype) if is_ones(g) else apply(shape_ops.BroadcastTo(shape), g)]


class Prod(Reduction):
    """Product over `axes`; d/dx_i is the product of the other elements (exact with zeros)."""

    __slots__ = ()

    def out_dtype(self, dtype):
        return sum_dtype(dtype)

    def vjp(self, primals, cotangents, argnums, outputs):
        x = primals[0]
        if not x.dtype.is_inexact:
            return [None]
        return [binary.multiply(cotangents[0], _product_of_others(x, self.axes))]

    def jvp(self, primals, tangents, outputs):
        x = primals[0]
        if not x.dtype.is_inexact:
            return [None]
        others = _product_of_others(x, self.axes)
        return [apply(Sum(self.axes), binary.multiply(tangents[0], others))]


def _product_of_others(x: Array, axes: tuple[int, ...]) -> Array:
    """For each element, the product of the other elements of its reduction group."""
    s = to_stream(None)
    rows, perm = to_rows(x, axes, s)
    before = scan.cumprod(rows, axis=-1, inclusive=False)
    after = scan.cumprod(rows, axis=-1, reverse=True, inclusive=False)
    return from_rows(binary.multiply(before, after), x, perm, s)


def to_rows(a: Array, axes: tuple[int, ...], s: Stream) -> tuple[Array, list[int]]:
    """`a` with `axes` moved to the end and merged into one last axis (a size-1 one when there
    are none), and the permutation that moved them."""
    keep = [i for i in range(a.ndim) if i not in axes]
    perm = keep + list(axes)
    moved = a if perm == sorted(perm) else shape_ops.transpose(a, perm, stream=s)
    shape = (*moved.shape[: len(keep)], reduced_size(a, axes))
    return (moved if shape == moved.shape else shape_ops.reshape(moved, shape, stream=s)), perm


def from_rows(rows: Array, a: Array, perm: list[int], s: Stream) -> Array:
    """Undoes `to_rows(a, ...)` on `rows` of the same shape: `a`'s shape and axis order."""
    moved_shape = tuple(a.shape[i] for i in perm)
    out = rows if rows.shape == moved_shape else shape_ops.reshape(rows, moved_shape, stream=s)
    if perm == sorted(perm):
        return out
    return shape_ops.transpose(out, list(np.argsort(perm)), stream=s)


class Extremum(Reduction):
    """Max or min over `axes`. As in MLX, `vjp` splits the cotangent evenly among the tied
    extreme positions, while `jvp` takes the tangent at the first one (row-major over `axes`)."""

    __slots__ = ()
    abstract = True  # a rule family, not an operation

    def vjp(self, primals, cotangents, argnums, outputs):
        x, g = primals[0], cotangents[0]
        if not x.dtype.is_inexact:
            return [None]
        mask = unary.astype(comparison.equal(x, outputs[0]), g.dtype)
        return [binary.multiply(g, binary.divide(mask, apply(Sum(self.axes), mask)))]

    def jvp(self, primals, tangents, outputs):
        x, t = primals[0], tangents[0]
        if not x.dtype.is_inexact:
            return [None]
        s = to_stream(None)
        rows, _ = to_rows(x, self.axes, s)
        first = record1((ArgMax if isinstance(self, Max) else ArgMin)((rows.ndim - 1,)), (rows,), s)
        picked = indexing.take_along_axis(to_rows(t, self.axes, s)[0], first, -1, stream=s)
        return [shape_ops.reshape(picked, outputs[0].shape, stream=s)]


class Max(Extremum):
    """Maximum over `axes` (NaN propagates)."""

    __slots__ = ()


class Min(Extremum):
    """Minimum over `axes` (NaN propagates)."""

    __slots__ = ()


class NoGradient(Reduction):
    """A reduction with an integer or boolean result (`result`): no derivative flows through."""

    __slots__ = ()
    abstract = True  # a rule family, not an operation
    result: dt.Dtype

    def out_dtype(self, dtype):
        return self.result

    def vjp(self, primals, cotangents, argnums, outputs):
        return [None for _ in argnums]

    def jvp(self, primals, tangents, outputs):
        return [None]


class ArgMax(NoGradient):
    """Index (uint32) of the first maximum along the single axis in `axes`."""

    __slots__ = ()
    result = dt.uint32


class ArgMin(NoGradient):
    """Index (uint32) of the first minimum along the single axis in `axes`."""

    __slots__ = ()
    result = dt.uint32


class AllTrue(NoGradient):
    """Whether every element over `axes` is nonzero."""

    __slots__ = ()
    result = dt.bool_


class AnyTrue(NoGradient):
    """Whether some element over `axes` is nonzero."""

    __slots__ = ()
    result = dt.bool_


# -- operations ----------------------------------------------------------------------------


def _reduce(cls: type, op: str, a: Any, axis: Axis, keepdims: bool, stream: Any) -> Array:
    if type(keepdims) is not bool:
        keepdims = bool_flag(keepdims, op, "keepdims")
    a = as_array(a, op)
    axes = normalize_axes(axis, a.ndim, op)
    if cls in (Max, Min):
        check_nonempty(op, a, axes)
    s = to_stream(stream)
    if not axes:  # MLX returns the input itself (as bool for all/any)
        if cls in (AllTrue, AnyTrue):
            return unary.astype(a, dt.bool_, stream=s)
        return fresh(a)
    out = record1(cls(axes), (a,), s)
    return _squeeze(out, a, axes, keepdims, s)


def check_nonempty(op: str, a: Array, axes: tuple[int, ...]) -> Array:
    """`a`, unless a reduction group over `axes` would be empty (the other axes may be)."""
    if axes and reduced_size(a, axes) == 0:
        raise ValueError(f"{public_caller(op)}: cannot reduce over an empty axis, got shape "
                         f"{a.shape} and axes {axes}")
    return a


def sum(a: Any, /, axis: Axis = None, keepdims: bool = False, *, stream: Any = None) -> Array:
    """Sum of elements over `axis` (all axes when None).

    Bools and 8/16-bit integers sum in int32 (uint32 if unsigned), as in MLX; float16 and
    bfloat16 accumulate in float32. The sum of an empty axis is 0.

    Args:
        a: the input.
        axis: an axis, a sequence of axes, or None for all; negative axes count from the end.
        keepdims: keep the reduced axes as size-1 dimensions.
        stream: the stream (or device) to record on.

    Returns:
        The sums.

    Raises:
        ValueError: if an axis is out of range (an `AxisError`, also an IndexError) or repeated.

    Example:
        >>> import nuvec as mx
        >>> mx.sum(mx.array([[1, 2], [3, 4]]), axis=0).tolist()
        [4, 6]
    """
    return _reduce(Sum, "sum", a, axis, keepdims, stream)


def prod(a: Any, /, axis: Axis = None, keepdims: bool = False, *, stream: Any = None) -> Array:
    """Product of elements over `axis` (all axes when None); 1 for an empty axis.

    Result dtypes follow `sum`.

    Args:
        a, axis, keepdims, stream: as `sum`.

    Returns:
        The products.

    Raises:
        ValueError: if an axis is out of range or repeated.

    Example:
        >>> import nuvec as mx
        >>> mx.prod(mx.array([1.0, 2.0, 3.0])).item()
        6.0
    """
    return _reduce(Prod, "prod", a, axis, keepdims, stream)


def max(a: Any, /, axis: Axis = None, keepdims: bool = False, *, stream: Any = None) -> Array:
    """Maximum over `axis` (all axes when None); NaN propagates.

    Args:
        a, axis, keepdims, stream: as `sum`.

    Returns:
        The maxima, of `a`'s dtype.

    Raises:
        ValueError: if a reduced axis is empty, or an axis is out of range or repeated.

    Example:
        >>> import nuvec as mx
        >>> mx.max(mx.array([[1, 5], [3, 2]]), axis=1).tolist()
        [5, 3]
    """
    return _reduce(Max, "max", a, axis, keepdims, stream)


def min(a: Any, /, axis: Axis = None, keepdims: bool = False, *, stream: Any = None) -> Array:
    """Minimum over `axis` (all axes when None); NaN propagates.

    Args:
        a, axis, keepdims, stream: as `sum`.

    Returns:
        The minima, of `a`'s dtype.

    Raises:
        ValueError: if a reduced axis is empty, or an axis is out of range or repeated.

    Example:
        >>> import nuvec as mx
        >>> mx.min(mx.array([[1, 5], [3, 2]]), axis=1).tolist()
        [1, 2]
    """
    return _reduce(Min, "min", a, axis, keepdims, stream)



def minmax(a: Any, /, axis: Axis = None, keepdims: bool = False, *,
           stream: Any = None) -> tuple[Array, Array]:
    """The minimum and the maximum over `axis` (all axes when None), as `min` and `max`.

    Args:
        a, axis, keepdims, stream: as `sum`.

    Returns:
        A tuple `(minima, maxima)`, each of `a`'s dtype.

    Raises:
        ValueError: if a reduced axis is empty, or an axis is out of range or repeated.

    Example:
        >>> import nuvec as mx
        >>> [x.tolist() for x in mx.minmax(mx.array([[1, 5], [3, 2]]), axis=1)]
        [[1, 2], [5, 3]]
    """
    return (_reduce(Min, "minmax", a, axis, keepdims, stream),
            _reduce(Max, "minmax", a, axis, keepdims, stream))


def all(a: Any, /, axis: Axis = None, keepdims: bool = False, *, stream: Any = None) -> Array:
    """Whether every element over `axis` is nonzero (True for an empty axis); bool result.

    Args:
        a, axis, keepdims, stream: as `sum`.

    Returns:
        A bool array.

    Raises:
        ValueError: if an axis is out of range or repeated.

    Example:
        >>> import nuvec as mx
        >>> mx.all(mx.array([[1, 0], [1, 1]]), axis=1).tolist()
        [False, True]
    """
    return _reduce(AllTrue, "all", a, axis, keepdims, stream)


def any(a: Any, /, axis: Axis = None, keepdims: bool = False, *, stream: Any = None) -> Array:
    """Whether some element over `axis` is nonzero (False for an empty axis); bool result.

    Args:
        a, axis, keepdims, stream: as `sum`.

    Returns:
        A bool array.

    Raises:
        ValueError: if an axis is out of range or repeated.

    Example:
        >>> import nuvec as mx
        >>> mx.any(mx.array([[0, 0], [0, 3]]), axis=1).tolist()
        [False, True]
    """
    return _reduce(AnyTrue, "any", a, axis, keepdims, stream)


def _arg_reduce(cls: type, op: str, a: Any, axis: int | None, keepdims: bool, stream: Any):
    keepdims = bool_flag(keepdims, op, "keepdims")
    a = as_array(a, op)
    s = to_stream(stream)
    if axis is None:
        check_nonempty(op, a, tuple(range(a.ndim)))
        out = record1(cls((0,)), (shape_ops.reshape(a, (a.size,), stream=s),), s)
        return shape_ops.reshape(out, (1,) * a.ndim if keepdims else (), stream=s)
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{op}: axis must be an int or None, got {type(axis).__name__}")
    axes = normalize_axes(axis, a.ndim, op)
    check_nonempty(op, a, axes)
    return _squeeze(record1(cls(axes), (a,), s), a, axes, keepdims, s)


def argmax(
    a: Any, /, axis: int | None = None, keepdims: bool = False, *, stream: Any = None
) -> Array:
    """Index of the (first) maximum along `axis`, or in the flattened array when None.

    Args:
        a: the input.
        axis: the axis to search; None searches the flattened array.
        keepdims: keep the reduced axes as size-1 dimensions.
        stream: the stream (or device) to record on.

    Returns:
        uint32 indices (as MLX).

    Raises:
        ValueError: if the reduced axis (the whole array when `axis` is None) is empty, or
            `axis` is out of range.
        TypeError: if `axis` is not an int or None.

    Example:
        >>> import nuvec as mx
        >>> mx.argmax(mx.array([1, 7, 3])).item()
        1
    """
    return _arg_reduce(ArgMax, "argmax", a, axis, keepdims, stream)


def argmin(
    a: Any, /, axis: int | None = None, keepdims: bool = False, *, stream: Any = None
) -> Array:
    """Index of the (first) minimum along `axis`, or in the flattened array when None.

    Args:
        a: the input.
        axis: the axis to search; None searches the flattened array.
        keepdims: keep the reduced axes as size-1 dimensions.
        stream: the stream (or device) to record on.

    Returns:
        uint32 indices (as MLX).

    Raises:
        ValueError: if the reduced axis (the whole array when `axis` is None) is empty, or
            `axis` is out of range.
        TypeError: if `axis` is not an int or None.

    Example:
        >>> import nuvec as mx
        >>> mx.argmin(mx.array([4, 1, 3])).item()
        1
    """
    return _arg_reduce(ArgMin, "argmin", a, axis, keepdims, stream)
