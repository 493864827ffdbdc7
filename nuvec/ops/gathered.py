"""Gathered, block-masked and segmented matrix products: gather_mm, gather_qmm,
block_masked_mm, segmented_mm (exported through `nuvec.ops.quantized`).

`gather_mm`/`gather_qmm` validate and broadcast, then record the fused nodes of
`nuvec.fast.gather` (whose fallback is `take` + `matmul`/`quantized_matmul`); the masked and
segmented products compose `matmul` with elementwise masks.
"""

from __future__ import annotations

from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array
from nuvec.graph.device import stream as stream_context, to_stream
from nuvec.ops.arguments import as_array, broadcast_shapes

__all__: list[str] = []


def _default_indices(op: str, indices: Any, batch: tuple[int, ...], s: Any) -> Array:
    """The given indices, checked to be integers, or `arange` over `batch` shaped as it."""
    from nuvec.ops.creation import arange
    from nuvec.ops.shape import reshape

    if indices is None:
        size = 1
        for d in batch:
            size *= d
        return reshape(arange(size, dtype=dt.uint32, stream=s), batch, stream=s)
    indices = as_array(indices, op)
    if not indices.dtype.is_integer:
        raise DtypeError(f"{op}: indices must be integers, got {indices.dtype.name}")
    return indices


def _gather_indices(op: str, a: Array, b: Array, lhs: Any, rhs: Any,
                    s: Any) -> tuple[Array, Array]:
    """The indices as uint32 (as MLX), broadcast to one shape."""
    from nuvec.ops.shape import broadcast_to
    from nuvec.ops.unary import astype

    lhs = _default_indices(op, lhs, a.shape[:-2], s)
    rhs = _default_indices(op, rhs, b.shape[:-2], s)
    shape = broadcast_shapes(lhs.shape, rhs.shape, op=op)
    return tuple(broadcast_to(astype(i, dt.uint32, stream=s), shape, stream=s)
                 for i in (lhs, rhs))


def _row_offsets(sorted_indices: bool, x: Array, w: Array, rhs: Array, s: Any) -> Array | None:
    """For one-row products (`x` `[B, 1, K]`) sorted by `rhs`, where each weight batch's rows
    start (int32, the count of smaller indices), which lets a kernel walk each batch once;
    None otherwise."""
    from nuvec.ops.binary import less
    from nuvec.ops.creation import arange
    from nuvec.ops.reduction import sum as total
    from nuvec.ops.shape import expand_dims
    from nuvec.ops.unary import astype

    if not (sorted_indices and x.ndim == 3 and x.shape[1] == 1 and rhs.ndim == 1):
        return None
    batches = 1
    for d in w.shape[:-2]:
        batches *= d
    starts = expand_dims(arange(batches, dtype=dt.uint32, stream=s), 1, stream=s)
    smaller = less(expand_dims(rhs, 0, stream=s), starts, stream=s)
    return astype(total(smaller, axis=1, stream=s), dt.int32, stream=s)


def _matrix_operands(op: str, a: Array, b: Array, s: Any) -> tuple[Array, Array, list[int]]:
    """Operands as matrices of their promoted float dtype (a 1-D `a` becomes a row, a 1-D `b`
    a column, as in `matmul`) and the output axes to squeeze away afterwards."""
    from nuvec.ops.shape import expand_dims
    from nuvec.ops.unary import astype

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


def gather_mm(
    a: Any, b: Any, /, lhs_indices: Any = None, rhs_indices: Any = None,
    sorted_indices: bool = False, *, stream: Any = None,
) -> Array:
    """Matrix products of gathered batches: `a[lhs_indices] @ b[rhs_indices]`.

    The batch axes of `a` `[..., M, K]` and `b` `[..., K, N]` are flattened and indexed; the
    indices broadcast together and give the output's batch shape. Missing indices mean
    `arange` over that operand's batch. `sorted_indices` is a hint for kernels that exploit
    sorted indices; the result does not depend on it. Negative indices count from the end; an
    out-of-range one makes the evaluation fail, as in `take`.

    Args:
        a: floating `[..., M, K]`.
        b: floating `[..., K, N]`.
        lhs_indices: integer indices into `a`'s flattened batch; all when None.
        rhs_indices: integer indices into `b`'s flattened batch; all when None.
        sorted_indices: a hint that the indices are sorted.
        stream: the stream (or device) to record on.

    Returns:
        `[*broadcast(lhs_indices, rhs_indices).shape, M, N]` (1-D operands drop their axis,
        as in `matmul`).

    Raises:
        TypeError: for non-floating operands or non-integer indices.
        ValueError: for 0-d operands or mismatched inner dimensions.

    Example:
        >>> import nuvec as mx
        >>> a, b = mx.ones((2, 3, 4)), mx.ones((5, 4, 6))
        >>> mx.gather_mm(a, b, mx.array([0, 1]), mx.array([4, 2])).shape
        (2, 3, 6)
    """
    from nuvec.fast.gather import gather_mm_node
    from nuvec.ops.matmul import matmul
    from nuvec.ops.shape import squeeze

    op = "gather_mm"
    s = to_stream(stream)
    a, b = as_array(a, op), as_array(b, op)
    if lhs_indices is None and rhs_indices is None:
        return matmul(a, b, stream=s)
    a, b, drop = _matrix_operands(op, a, b, s)
    lhs, rhs = _gather_indices(op, a, b, lhs_indices, rhs_indices, s)
    offsets = _row_offsets(sorted_indices, a, b, rhs, s)
    with stream_context(s):
        out = gather_mm_node(a, b, lhs, rhs, offsets)
    return squeeze(out, drop, stream=s) if drop else out


def gather_qmm(
    x: Any, w: Any, /, scales: Any, biases: Any, lhs_indices: Any = None,
    rhs_indices: Any = None, transpose: bool = True, group_size: int | None = None,
    bits: int | None = None, mode: str = "affine", sorted_indices: bool = False, *,
    stream: Any = None,
) -> Array:
    """Quantized products of gathered batches: `quantized_matmul(x[lhs], w[rhs], ...)`.

    Batch axes of `x` `[..., M, K]` and of the packed `w` (with its scales and biases) are
    flattened and indexed as in `gather_mm`; `sorted_indices` is a hint only.

    Args:
        x: floating `[..., M, K]`.
        w: packed uint32 weights, as in `quantized_matmul`.
        scales: the scales of `w`, as in `quantized_matmul`.
        biases: the biases of `w`, as in `quantized_matmul`.
        lhs_indices: integer indices into `x`'s flattened batch; all when None.
        rhs_indices: integer indices into `w`'s flattened batch; all when None.
        transpose: multiply by the transposed weights.
        group_size: values per scale and bias: 32, 64 or 128.
        bits: bits per value: 2, 3, 4, 5, 6 or 8.
        mode: the quantization mode; only "affine".
        sorted_indices: a hint that the indices are sorted.
        stream: the stream (or device) to record on.

    Returns:
        `[*broadcast(lhs_indices, rhs_indices).shape, M, N]`.

    Raises:
        TypeError: for non-floating inputs, non-uint32 weights or non-integer indices.
        ValueError: for unsupported parameters, mismatched shapes or a 1-D `x`.

    Example:
        >>> import nuvec as mx
        >>> w_q, s, b = mx.quantize(mx.ones((4, 3, 64)))
        >>> mx.gather_qmm(mx.ones((1, 2, 64)), w_q, s, b, rhs_indices=mx.array([3, 0])).shape
        (2, 2, 3)
    """
    from nuvec.fast.gather import gather_qmm_node
    from nuvec.ops.quantized import (
        check_packed_weights,
        check_quantization_mode,
        check_quantization_params,
        promote_quantized_operands,
        quantized_matmul,
    )

    op = "gather_qmm"
    if lhs_indices is None and rhs_indices is None:
        return quantized_matmul(x, w, scales, biases, transpose, group_size, bits, mode,
                                stream=stream)
    check_quantization_mode(op, mode)
    group_size, bits = check_quantization_params(op, group_size, bits)
    s = to_stream(stream)
    x, w, scales, biases = (as_array(a, op) for a in (x, w, scales, biases))
    check_packed_weights(op, w, scales, biases, group_size, bits)
    if x.ndim < 2:
        raise ValueError(f"{op}: x must have at least 2 dimensions, got shape {x.shape}")
    x, scales, biases = promote_quantized_operands(op, x, w, scales, biases, transpose, bits, s)
    lhs, rhs = _gather_indices(op, x, w, lhs_indices, rhs_indices, s)
    offsets = _row_offsets(sorted_indices, x, w, rhs, s)
    with stream_context(s):
        return gather_qmm_node(x, w, scales, biases, lhs, rhs, transpose=transpose,
                               group_size=group_size, bits=bits, offsets=offsets)


def _expand_blocks(mask: Array, rows: int, cols: int, block: int, dtype: dt.Dtype,
                   s: Any) -> Array:
    """A block mask `[..., ceil(rows/block), ceil(cols/block)]` as elements `[..., rows, cols]`."""
    from nuvec.ops.shape import broadcast_to, reshape
    from nuvec.ops.unary import astype

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
    from nuvec.ops.binary import multiply
    from nuvec.ops.matmul import matmul
    from nuvec.ops.shape import expand_dims, squeeze

    op = "block_masked_mm"
    s = to_stream(stream)
    a, b = as_array(a, op), as_array(b, op)
    if mask_out is None and mask_lhs is None and mask_rhs is None:
        return matmul(a, b, stream=s)
    if block_size not in (32, 64):
        raise ValueError(f"{op}: block_size must be 32 or 64, got {block_size}")
    vector_a, vector_b = a.ndim == 1, b.ndim == 1
    a, b, drop = _matrix_operands(op, a, b, s)
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
    from nuvec.ops.binary import greater_equal, less, logical_and, multiply
    from nuvec.ops.creation import arange
    from nuvec.ops.matmul import matmul
    from nuvec.ops.shape import expand_dims
    from nuvec.ops.unary import astype

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
