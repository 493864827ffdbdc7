"""CPU kernels of the fused ops without a shared body: their fallback graph (`run_on_cpu`).

The row-wise fused ops (norms, softmax, logsumexp, rope, cross-entropy) have shared bodies in
`nuvec/backends/common/fast.py`.
"""

from __future__ import annotations

from nuvec.backends.numpy.registry import kernel
from nuvec.fast.base import cpu_fallback_kernel
from nuvec.fast.conv import DepthwiseConv1d
from nuvec.fast.gated_delta import GatedDelta, GatedDeltaSlots
from nuvec.fast.gather import GatherMm, GatherQmm
from nuvec.fast.rope import NormRope

kernel(
    NormRope,
    DepthwiseConv1d,
    GatherMm,
    GatherQmm,
    GatedDelta,
    GatedDeltaSlots,
)(cpu_fallback_kernel)
