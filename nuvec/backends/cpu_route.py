"""The one list of primitives a GPU stream computes on the CPU, each with its reason.

A node of one of these classes on a GPU stream copies its inputs to the host, runs the CPU
kernel there and uploads the outputs. Every other primitive has a GPU body (a shared body bound
to CuPy, or a GPU override); `tests/backends/test_tables.py` checks both halves.
"""

from __future__ import annotations

from nuvec.fast.attention import AttentionRows
from nuvec.fast.attention_grad import AttentionRowsVjp
from nuvec.fast.fused import ProductUpdate
from nuvec.ops import quantized as q

_ROWS = (
    "the CPU attention kernel's node (the planner records it for CPU targets only, float64 on a "
    "GPU stream among them; for the GPU's dtypes it picks an attention kernel): its NumPy body "
    "runs tiles on the CPU thread pool with BLAS pinned to one thread"
)
_ROWS_VJP = (
    "the CPU attention node's backward (AttentionRows' rule records it on CPU streams only; on "
    "a GPU stream the rule differentiates the fallback graph): its NumPy body runs groups of "
    "key heads on the CPU thread pool"
)
_PACKED = (
    "bit-stream packing of quantized weights: the NumPy body is written for NumPy's in-place "
    "bit views (quantized_matmul has a CUDA kernel, nuvec/fast/kernels/gather_mm.cu)"
)

_UPDATE = (
    "an SGD update fused with its weight gradient's product (one BLAS gemm accumulating into "
    "the weight): compile forms it on CPU streams only, where a GPU stream's chains fuse into "
    "one generated kernel after a cuBLAS product"
)

CPU_ROUTE: dict[type, str] = {
    AttentionRows: _ROWS,
    AttentionRowsVjp: _ROWS_VJP,
    ProductUpdate: _UPDATE,
    **{cls: _PACKED for cls in (q.Quantize, q.Dequantize)},
}  # fmt: skip
