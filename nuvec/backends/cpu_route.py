"""The one list of primitives a GPU stream computes on the CPU, each with its reason.

A node of one of these classes on a GPU stream copies its inputs to the host, runs the CPU
kernel there and uploads the outputs. Every other primitive has a GPU body (a shared body bound
to CuPy, or a GPU override); `tests/backends/test_tables.py` checks both halves.
"""

from __future__ import annotations

from nuvec.fast.attention import Attention, AttentionRows
from nuvec.fast.conv import DepthwiseConv1d
from nuvec.fast.cross_entropy import CrossEntropy, CrossEntropyVjp
from nuvec.fast.gated_delta import GatedDelta, GatedDeltaSlots
from nuvec.fast.gather import GatherMm, GatherQmm
from nuvec.fast.norms import AddRmsNorm, LayerNorm, LayerNormVjp, RmsNorm, RmsNormVjp
from nuvec.fast.paged import PagedAttention, PagedWrite
from nuvec.fast.rope import NormRope, Rope
from nuvec.fast.softmax import LogSumExp, Softmax
from nuvec.ops import quantized as q

_FUSED = (
    "a fused op: its CUDA kernel (nuvec/fast/kernels) is not written yet, and its NumPy body "
    "uses NumPy-only in-place row blocks"
)
_FALLBACK = (
    "a fused op: its CUDA kernel (nuvec/fast/kernels) is not written yet; its fallback graph "
    "runs on the CPU stream (run_on_cpu)"
)
_PACKED = (
    "bit-stream packing of quantized weights: the NumPy body is written for NumPy's in-place "
    "bit views; its CUDA kernel belongs with the quantized matmul kernels"
)

CPU_ROUTE: dict[type, str] = {
    **{cls: _FUSED for cls in (
        RmsNorm, AddRmsNorm, RmsNormVjp, LayerNorm, LayerNormVjp, Softmax, LogSumExp, Rope,
        CrossEntropy, CrossEntropyVjp, AttentionRows,
    )},
    **{cls: _FALLBACK for cls in (
        Attention, PagedAttention, PagedWrite, NormRope, DepthwiseConv1d, GatherMm, GatherQmm,
        GatedDelta, GatedDeltaSlots,
    )},
    **{cls: _PACKED for cls in (q.Quantize, q.Dequantize, q.QuantizedMatmul)},
}  # fmt: skip
