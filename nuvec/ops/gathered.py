"""Block-masked and segmented matrix products: block_masked_mm, segmented_mm (exported
through `nuvec.ops.quantized`); they compose `matmul` with elementwise masks.

`gather_mm` and `gather_qmm`, which record fused nodes, live in `nuvec.fast.gather`.
"""

from __future__ import annotations

from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array
from nuvec.graph.device import to_stream
from nuvec.ops.arguments import as_array, broadcast_shapes, index_int
from nuvec.ops.binary import multiply
from nuvec.ops.comparison import greater_equal, less, logical_and
from nuvec.ops.creation import arange
from nuvec.ops.matmul import matmul
from nuvec.ops.shape import broadcast_to, expand_dims, reshape, squeeze
from nuvec.ops.unary import astype

__all__: list[str] = []


def matrix_operands(op: str, a: Array, b: Array, s: Any) -> tuple[Array, Array, list[int]]:
    """Operands as matrices of their promoted float dtype (a 1-D `a` becomes a row, a 1-D `b`
    a column, as in `matmul`) and the output axes to squeeze away afterwards."""
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"{op}: operands must have at least 1 dimension, got shapes "
                         f"{a.shape} and {b.shape}")
    drop = ([-2] if a.ndim == 1 else []) + ([-1] if b.ndim == 1 else [])
    a = expand_dims(a, 0, stream=s) if a.ndim == 1 else a
    b = expand_dims(b, 1, stream=s) if b.ndim == 1 else b
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"{op}: the last axis of a (shape {a.shape}) must match the "
                         f"second-to-last axis of b (shape {b.shape})")
    out_type = dt.promote_types(a.dtype, b.dtype)
    if not out_type.is_floating:
        raise DtypeError(f"{op}: operands must be real floating, got {a.dtype.name} and "
                        f"{b.dtype.name}")
    return astype(a, out_type, stream=s), astype(b, out_type, stream=s), drop


def _expand_blocks(mask: Array, rows: int, cols: int, block: int, dtype: dt.Dtype,
                   s: Any) -> Array:
    """A block mask `[..., ceil(rows/block), ceil(cols/block)]` as elements `[..., rows, cols]`."""
    mask = astype(mask, dtype, stream=s)
    *lead, tr, tc = mask.shape
    wide = broadcast_to(reshape(mask, (*lead, tr, 1, tc, 1), stream=s),
                        (*lead, tr, block, tc, block), stream=s)
    wide = reshape(wide, (*lead, tr * block, tc * block), stream=s)
    return wide[..., :rows, :cols]


def block_masked_mm(
    a: Any, b: Any, /, block_size: int = 64, mask_out: Any = None, mask_lhs: Any = None,
    mask_rhs: Any = None, *, stream: Any = None,
) -> Array:
    """A matrix product whose `block_size` tiles are masked (bool) or scaled (float).

    `mask_lhs [..., ceil(M/bs), ceil(K/bs)]` and `mask_rhs [..., ceil(K/bs), ceil(N/bs)]`
    multiply the tiles of `a` and `b` before the product; `mask_out
    [..., ceil(M/bs), ceil(N/bs)]` multiplies the tiles of the result. False zeroes a tile.

    Args:
        a: floating `[..., M, K]`.
        b: floating `[..., K, N]`.
        block_size: the tile size, 32 or 64.
        mask_out: optional mask of the result's tiles.
        mask_lhs: optional mask of `a`'s tiles.
        mask_rhs: optional mask of `b`'s tiles.
        stream: the stream (or device) to record on.

    Returns:
        `[..., M, N]` of the promoted dtype.

    Raises:
        TypeError: for non-floating operands.
        ValueError: for a block size other than 32 or 64, 0-d operands, mismatched inner
            dimensions or masks that do not broadcast to their tile grids.

    Example:
        >>> import nuvec as mx
        >>> m = mx.array([[True, False]])
        >>> out = mx.block_masked_mm(mx.ones((32, 64)), mx.ones((64, 64)), 32, mask_out=m)
        >>> out[0].tolist()[31:33]
        [64.0, 0.0]
    """
    op = "block_masked_mm"
    s = to_stream(stream)
    a, b = as_array(a, op), as_array(b, op)
    if index_int(block_size, op, "block_size") not in (32, 64):
        raise ValueError(f"{op}: block_size must be 32 or 64, got {block_size}")
    block_size = int(block_size)
    if mask_out is None and mask_lhs is None and mask_rhs is None:
        return matmul(a, b, stream=s)
    vector_a, vector_b = a.ndim == 1, b.ndim == 1
    a, b, drop = matrix_operands(op, a, b, s)
    (m, k), n = a.shape[-2:], b.shape[-1]
    out_type = a.dtype

    def tile_mask(mask: Any, name: str, rows: int, cols: int, squeeze_at: list[int]) -> Array:
        mask = as_array(mask, op)
        for axis in squeeze_at:
            mask = expand_dims(mask, axis, stream=s)
        grid = (-(-rows // block_size), -(-cols // block_size))
        if mask.ndim < 2 or broadcast_shapes(mask.shape[-2:], grid, op=op) != grid:
            raise ValueError(f"{op}: {name} must have tile shape [..., {grid[0]}, {grid[1]}], "
                             f"got shape {mask.shape}")
        return _expand_blocks(mask, rows, cols, block_size, out_type, s)

    if mask_lhs is not None:
        a = multiply(a, tile_mask(mask_lhs, "mask_lhs", m, k, [-2] if vector_a else []),
                     stream=s)
    if mask_rhs is not None:
        b = multiply(b, tile_mask(mask_rhs, "mask_rhs", k, n, [-1] if vector_b else []),
                     stream=s)
    out = matmul(a, b, stream=s)
    if mask_out is not None:
        out = multiply(out, tile_mask(mask_out, "mask_out", m, n, drop), stream=s)
    return squeeze(out, drop, stream=s) if drop else out


def segmented_mm(a: Any, b: Any, /, segments: Any, *, stream: Any = None) -> Array:
    """Products of segments of the inner axis: `out[i] = a[:, s0:s1] @ b[s0:s1, :]`.

    Args:
        a: `[M, K]`, floating.
        b: `[K, N]`, floating.
        segments: integers `[..., 2]`, each `(start, end)` along K (clipped to `[0, K]`; an
            empty segment gives zeros).

    Returns:
        `[..., M, N]`.

    Raises:
        TypeError: for non-floating operands or non-integer segments.
        ValueError: for operands that are not 2-D, mismatched inner dimensions or segments
            whose last axis is not 2.

    Example:
        >>> import nuvec as mx
        >>> out = mx.segmented_mm(mx.ones((2, 4)), mx.ones((4, 3)), mx.array([[0, 1], [1, 4]]))
        >>> out[:, 0, 0].tolist()
        [1.0, 3.0]
    """
    op = "segmented_mm"
    s = to_stream(stream)
    a, b, seg = as_array(a, op), as_array(b, op), as_array(segments, op)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"{op}: operands must be 2-D, got shapes {a.shape} and {b.shape}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"{op}: inner dimensions differ: {a.shape} and {b.shape}")
    if seg.ndim < 1 or seg.shape[-1] != 2:
        raise ValueError(f"{op}: segments must have shape [..., 2], got {seg.shape}")
    if not seg.dtype.is_integer:
        raise DtypeError(f"{op}: segments must be integers, got {seg.dtype.name}")
    out_type = dt.promote_types(a.dtype, b.dtype)
    if not out_type.is_floating:
        raise DtypeError(f"{op}: operands must be real floating, got {a.dtype.name} and "
                        f"{b.dtype.name}")
    a, b = astype(a, out_type, stream=s), astype(b, out_type, stream=s)
    seg = astype(seg, dt.int64, stream=s)
    k = arange(a.shape[1], dtype=dt.int64, stream=s)
    start, end = seg[..., 0:1], seg[..., 1:2]
    inside = logical_and(greater_equal(k, start, stream=s), less(k, end, stream=s), stream=s)
    # Masking the inner axis per segment keeps every product one batched BLAS call.
    masked = multiply(a, expand_dims(astype(inside, out_type, stream=s), -2, stream=s),
                      stream=s)
    return matmul(masked, b, stream=s)
