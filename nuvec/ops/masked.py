"""Boolean-mask updates: `masked_scatter` and `a[mask] = v` (MLX), as compositions.

The output shape never depends on the mask's values: the k-th true position (row-major)
reads element k of the flattened source through a gather, and `where` keeps the rest, so
gradients and `vmap` come from the composed operations.
"""

from __future__ import annotations

from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.graph.device import to_stream
from nuvec.graph.dtypes import DtypeError
from nuvec.ops import indexing
from nuvec.ops.arguments import as_array, broadcast_shapes
from nuvec.ops.comparison import where
from nuvec.ops.scan import cumsum
from nuvec.ops.shape import broadcast_to, reshape
from nuvec.ops.unary import astype

__all__ = ["masked_scatter"]


def _check_mask(op: str, mask: Array, shape: tuple[int, ...]) -> Array:
    if mask.dtype is not dt.bool_:
        raise DtypeError(f"{op}: mask must be a bool array, got {mask.dtype.name}")
    if broadcast_shapes(mask.shape, shape, op=op) != tuple(shape):
        raise ValueError(f"{op}: mask of shape {mask.shape} does not broadcast to the array's "
                         f"shape {tuple(shape)}")
    return broadcast_to(mask, shape)


def masked_scatter(a: Any, mask: Any, src: Any, *, stream: Any = None) -> Array:
    """`a` with its elements where `mask` is true replaced, in row-major order, by the
    elements of `src` (flattened), as MLX's `masked_scatter` and PyTorch's.

    Args:
        a: the array to update.
        mask: a bool array broadcastable to `a`'s shape.
        src: the values; it needs at least as many elements as `mask` has true entries
            (checked when evaluated: too few fail with an out-of-bounds `EvaluationError`).
        stream: the stream (or device) to record on.

    Returns:
        An array of `a`'s shape and dtype.

    Raises:
        DtypeError: if `mask` is not bool.
        ValueError: if `mask` does not broadcast to `a`'s shape.

    Example:
        >>> import nuvec as mx
        >>> mask = mx.array([True, False, True, False])
        >>> mx.masked_scatter(mx.zeros(4), mask, mx.array([5.0, 6.0])).tolist()
        [5.0, 0.0, 6.0, 0.0]
    """
    s = to_stream(stream)
    a = as_array(a, "masked_scatter")
    m = _check_mask("masked_scatter", as_array(mask, "masked_scatter"), a.shape)
    flat_src = reshape(astype(as_array(src, "masked_scatter"), a.dtype, stream=s), (-1,), stream=s)
    flat_mask = reshape(m, (-1,), stream=s)
    if flat_mask.size == 0:
        return astype(a, a.dtype, stream=s)
    # position k of the source for the k-th true entry; 0 (unused) where the mask is false
    order = cumsum(astype(flat_mask, dt.int32, stream=s), stream=s)
    picks = where(flat_mask, order - 1, 0, stream=s)
    if flat_src.size == 0:  # nothing to read: only an all-false mask is valid
        return where(m, astype(a, a.dtype, stream=s), a, stream=s)
    values = reshape(indexing.take(flat_src, picks, stream=s), a.shape, stream=s)
    return where(m, values, a, stream=s)


def mask_update(a: Array, mask: Array, value: Any) -> Array:
    """`a[mask] = value`: a scalar (or one row broadcast over the selected rows) fills every
    selected position; an array of as many elements as selected positions scatters in order."""
    op = "setitem"
    if mask.shape != a.shape[: mask.ndim]:
        raise ValueError(f"{op}: a boolean index of shape {mask.shape} must match the leading "
                         f"axes of the array's shape {a.shape}")
    # a mask over the leading axes selects whole rows
    full_mask = reshape(mask, mask.shape + (1,) * (a.ndim - mask.ndim))
    m = _check_mask(op, full_mask, a.shape)
    v = as_array(value, op, a.dtype)
    row = a.shape[mask.ndim:]
    if v.size == 1:
        return where(m, astype(reshape(v, ()), a.dtype), a)
    if row and v.shape == row:
        return where(m, astype(broadcast_to(v, a.shape), a.dtype), a)
    return masked_scatter(a, m, v)
