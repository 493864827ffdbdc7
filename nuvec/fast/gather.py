"""Matrix products of gathered batches (the namespace's `gather_mm`, `gather_qmm`) as fused ops.

`gather_mm`/`gather_qmm` validate and broadcast the indices, then record through
`gather_mm_node`/`gather_qmm_node` (whose fallback is `take` + `matmul`/`quantized_matmul`);
`offsets` (int32, one per weight batch) marks where each weight batch's rows start when the rows
are sorted by it (one-row products of a 3-D `x`).
"""

from __future__ import annotations

import math
from typing import Sequence

from typing import Any

from nuvec.fast.base import KERNEL_FLOATS, FastOp, mx, one
from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.graph.caller import rename_error
from nuvec.graph.device import stream as stream_context, to_stream
from nuvec.ops import quantized
from nuvec.ops.arguments import as_array, bool_flag, broadcast_shapes
from nuvec.ops.comparison import less
from nuvec.ops.creation import arange
from nuvec.ops.gathered import matrix_operands
from nuvec.ops.matmul import matmul
from nuvec.ops.quantized import (
    check_packed_weights,
    check_quantization_mode,
    check_quantization_params,
    promote_quantized_operands,
    quantized_matmul,
)
from nuvec.ops.reduction import sum as total
from nuvec.ops.microscaled import FLOAT_MODES
from nuvec.ops.shape import broadcast_to, expand_dims, reshape, squeeze
from nuvec.ops.unary import astype

__all__ = ["gather_mm", "gather_qmm"]


def _rows(a: Array, indices: Array) -> Array:
    """The `[M, N]` matrices of `a` picked by `indices` (`[*indices.shape, M, N]`)."""
    ops = mx()
    flat = ops.reshape(a, (math.prod(a.shape[:-2]), a.shape[-2], a.shape[-1]))
    return ops.take(flat, indices, axis=0)


class _Gather(FastOp):
    __slots__ = ()
    abstract = True
    first_index = 2

    def arity(self, inputs):
        base = self.first_index + 2
        return min(max(len(inputs), base), base + 1)

    def inner(self, inputs) -> int | None:
        """The contraction size the weights take, or None when the kernel cannot."""
        return None

    def valid(self, inputs):
        x, w = inputs[0], inputs[1]
        lhs, rhs = inputs[self.first_index], inputs[self.first_index + 1]
        if x.ndim < 2 or w.ndim < 2:
            raise ValueError(f"{self.op}: operands must be [..., M, K] and [..., K, N]")
        offsets = True
        if len(inputs) > self.first_index + 2:
            o = inputs[-1]
            experts = 1
            for d in w.shape[:-2]:
                experts *= d
            offsets = (x.ndim == 3 and x.shape[-2] == 1 and rhs.ndim == 1
                       and o.dtype is dt.int32 and o.shape == (experts,))
        return (
            self.inner(inputs) == x.shape[-1]
            and lhs.dtype is dt.uint32
            and rhs.dtype is dt.uint32
            and lhs.shape == rhs.shape
            and offsets
        )


class GatherMm(_Gather):
    """`(a, b, lhs_indices, rhs_indices[, offsets])`: `a[lhs] @ b[rhs]` per index."""

    __slots__ = ()
    op = "gather_mm"

    def inner(self, inputs):
        x, w = inputs[0], inputs[1]
        return w.shape[-2] if w.dtype is x.dtype else None

    def specs(self, inputs):
        x, w, lhs = inputs[0], inputs[1], inputs[2]
        return [((*lhs.shape, x.shape[-2], w.shape[-1]), x.dtype)]

    def fallback(self, inputs):
        x, w, lhs, rhs = inputs[:4]
        return [mx().matmul(_rows(x, lhs), _rows(w, rhs))]


class GatherQmm(_Gather):
    """`(x, w, scales, biases, lhs, rhs[, offsets])`: quantized products of gathered batches."""

    __slots__ = ("group_size", "bits", "transpose")
    op = "gather_qmm"
    first_index = 4

    def __init__(self, group_size: int, bits: int, transpose: bool):
        self.group_size, self.bits, self.transpose = int(group_size), int(bits), bool(transpose)

    def params(self):
        return (self.group_size, self.bits, self.transpose)

    def inner(self, inputs):
        check_quantization_params(self.op, self.group_size, self.bits)
        x, w, scales, biases = inputs[:4]
        n = w.ndim
        packing = (
            scales.dtype is x.dtype and biases.dtype is x.dtype
            and biases.shape == scales.shape and w.dtype is dt.uint32
            and scales.ndim == n and w.shape[:-1] == scales.shape[:-1]
            and w.shape[-1] * 32 == scales.shape[-1] * self.group_size * self.bits
        )
        # The kernel takes transposed weights (x @ w.T) only.
        return scales.shape[-1] * self.group_size if packing and self.transpose else None

    def specs(self, inputs):
        x, w, lhs = inputs[0], inputs[1], inputs[4]
        n = w.shape[-2] if self.transpose else w.shape[-1] * 32 // self.bits
        return [((*lhs.shape, x.shape[-2], n), x.dtype)]

    def fallback(self, inputs):
        x, w, scales, biases, lhs, rhs = inputs[:6]
        return [mx().quantized_matmul(
            _rows(x, lhs), _rows(w, rhs), _rows(scales, rhs), _rows(biases, rhs),
            transpose=self.transpose, group_size=self.group_size, bits=self.bits,
        )]


def gather_mm_node(a: Array, b: Array, lhs_indices: Array, rhs_indices: Array,
                   offsets: Array | None = None) -> Array:
    """Records validated gathered products (uint32 indices of one shape, equal dtypes).

    Args:
        a: `[..., M, K]`.
        b: `[..., K, N]` of `a`'s dtype.
        lhs_indices, rhs_indices: uint32 batch indices of one shape.
        offsets: int32 row starts per batch of `b` when the rows are sorted by it, or None.

    Returns:
        `[*lhs_indices.shape, M, N]` in `a`'s dtype.
    """
    inputs: Sequence[Array] = [a, b, lhs_indices, rhs_indices]
    if offsets is not None:
        inputs = [*inputs, offsets]
    return one(GatherMm(), inputs)


def gather_qmm_node(x: Array, w: Array, scales: Array, biases: Array, lhs_indices: Array,
                    rhs_indices: Array, *, transpose: bool, group_size: int, bits: int,
                    offsets: Array | None = None) -> Array:
    """Records validated gathered quantized products (see `GatherQmm`).

    The kernels take transposed weights only; other calls build the fallback graph.

    Returns:
        `[*lhs_indices.shape, M, N]` in `x`'s dtype.
    """
    op = GatherQmm(group_size, bits, transpose)
    inputs = [x, w, scales, biases, lhs_indices, rhs_indices]
    if offsets is not None:
        inputs.append(offsets)
    if not transpose or x.dtype not in KERNEL_FLOATS:
        return op.fallback(inputs)[0]
    return one(op, inputs)


def _default_indices(op: str, indices: Any, batch: tuple[int, ...], s: Any) -> Array:
    """The given indices, checked to be integers, with negative ones counted from the end of
    the flattened `batch`; or `arange` over `batch` shaped as it."""
    size = math.prod(batch)
    if indices is None:
        return reshape(arange(size, dtype=dt.uint32, stream=s), batch, stream=s)
    indices = as_array(indices, op)
    if not indices.dtype.is_integer:
        raise dt.DtypeError(f"{op}: indices must be integers, got {indices.dtype.name}")
    if indices.dtype.kind == "i":
        ops = mx()
        wide_indices = astype(indices, dt.int64, stream=s)
        wrapped = ops.add(wide_indices, size, stream=s)
        indices = ops.where(ops.less(wide_indices, 0, stream=s), wrapped, wide_indices, stream=s)
    return indices


def _gather_indices(op: str, a: Array, b: Array, lhs: Any, rhs: Any,
                    s: Any) -> tuple[Array, Array]:
    """The indices as uint32 (as MLX), broadcast to one shape."""
    lhs = _default_indices(op, lhs, a.shape[:-2], s)
    rhs = _default_indices(op, rhs, b.shape[:-2], s)
    shape = broadcast_shapes(lhs.shape, rhs.shape, op=op)
    return tuple(broadcast_to(astype(i, dt.uint32, stream=s), shape, stream=s)
                 for i in (lhs, rhs))


def _row_offsets(sorted_indices: bool, x: Array, w: Array, rhs: Array, s: Any) -> Array | None:
    """For one-row products (`x` `[B, 1, K]`) sorted by `rhs`, where each weight batch's rows
    start (int32, the count of smaller indices), which lets a kernel walk each batch once;
    None otherwise."""
    if not (sorted_indices and x.ndim == 3 and x.shape[1] == 1 and rhs.ndim == 1):
        return None
    batches = 1
    for d in w.shape[:-2]:
        batches *= d
    starts = expand_dims(arange(batches, dtype=dt.uint32, stream=s), 1, stream=s)
    smaller = less(expand_dims(rhs, 0, stream=s), starts, stream=s)
    return astype(total(smaller, axis=1, stream=s), dt.int32, stream=s)


def gather_mm(
    a: Any, b: Any, /, lhs_indices: Any = None, rhs_indices: Any = None, *,
    sorted_indices: bool = False, stream: Any = None,
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
    op = "gather_mm"
    sorted_indices = bool_flag(sorted_indices, op, "sorted_indices")
    s = to_stream(stream)
    a, b = as_array(a, op), as_array(b, op)
    if lhs_indices is None and rhs_indices is None:
        return matmul(a, b, stream=s)
    a, b, drop = matrix_operands(op, a, b, s)
    lhs, rhs = _gather_indices(op, a, b, lhs_indices, rhs_indices, s)
    offsets = _row_offsets(sorted_indices, a, b, rhs, s)
    with stream_context(s):
        out = gather_mm_node(a, b, lhs, rhs, offsets)
    return squeeze(out, drop, stream=s) if drop else out


def gather_qmm(
    x: Any, w: Any, /, scales: Any, biases: Any = None, lhs_indices: Any = None,
    rhs_indices: Any = None, transpose: bool = True, group_size: int | None = None,
    bits: int | None = None, mode: str = "affine", global_scale: Any = None, *,
    sorted_indices: bool = False, stream: Any = None,
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
        group_size: as `quantize`'s.
        bits: as `quantize`'s.
        mode: "affine", or a floating mode ("mxfp4", "mxfp8", "nvfp4": the weights are
            dequantized to `x`'s dtype, then multiplied by `gather_mm`).
        global_scale: nvfp4 only, as given to `quantize`.
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
    op = "gather_qmm"
    transpose = bool_flag(transpose, op, "transpose")
    sorted_indices = bool_flag(sorted_indices, op, "sorted_indices")
    if mode in FLOAT_MODES:
        with stream_context(to_stream(stream)):
            x, weights = quantized.float_mode_operands(op, x, w, scales, biases, transpose,
                                                       group_size, bits, mode, global_scale)
            return gather_mm(x, weights, lhs_indices, rhs_indices,
                             sorted_indices=sorted_indices)
    if global_scale is not None:
        raise ValueError(f"{op}: global_scale is only used by nvfp4 quantization")
    if lhs_indices is None and rhs_indices is None:
        try:
            return quantized_matmul(x, w, scales, biases, transpose, group_size, bits, mode,
                                    stream=stream)
        except (TypeError, ValueError) as e:  # checked there: the error names `gather_qmm`
            rename_error(e, "quantized_matmul", op)
            raise
    check_quantization_mode(op, mode)
    if biases is None:
        raise ValueError(f"{op}: biases must be given for affine quantization")
    group_size, bits = quantized.check_quantization_params(op, group_size, bits)
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
