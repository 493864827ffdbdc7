"""Matrix products of gathered batches (`gather_mm`, `gather_qmm`) as fused ops.

`nuvec.ops.gathered` validates and broadcasts the indices, then records through
`gather_mm_node`/`gather_qmm_node`; `offsets` (int32, one per weight batch) marks where each
weight batch's rows start when the rows are sorted by it (one-row products of a 3-D `x`).
"""

from __future__ import annotations

import math
from typing import Sequence

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.fast.base import KERNEL_FLOATS, FastOp, mx, one
from nuvec.ops.quantized import check_quantization_params

__all__: list[str] = []


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
