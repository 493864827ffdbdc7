"""nuvec.fast: fused operations ported from the Rust core (see shared/seeds/000_...txt).

Each op records one node where a kernel takes it and otherwise builds its fallback graph of
ordinary operations (`record_or_fallback`); see `docs/fast.md`.
"""

from nuvec.fast.attention import plan_attention, scaled_dot_product_attention
from nuvec.fast.base import FastOp, record_or_fallback, run_on_cpu
from nuvec.fast.cross_entropy import cross_entropy
from nuvec.fast.custom_kernel import cuda_kernel, precompiled_cuda_kernel
from nuvec.fast.gated_delta import (
    gated_delta,
    gated_delta_from_projections,
    gated_delta_slots,
    gated_delta_steps,
    gated_delta_update,
)
from nuvec.fast.norms import add_rms_norm, layer_norm, rms_norm
from nuvec.fast.packed_attention import packed_attention
from nuvec.fast.paged import paged_attention, paged_write
from nuvec.fast.planner import AttentionOptions, AttentionPlan
from nuvec.fast.rope import norm_rope, rope
from nuvec.fast.softmax import logsumexp, softmax

__all__ = [
    "AttentionOptions",
    "AttentionPlan",
    "FastOp",
    "add_rms_norm",
    "cross_entropy",
    "cuda_kernel",
    "gated_delta",
    "gated_delta_from_projections",
    "gated_delta_slots",
    "gated_delta_steps",
    "gated_delta_update",
    "layer_norm",
    "logsumexp",
    "norm_rope",
    "packed_attention",
    "paged_attention",
    "paged_write",
    "plan_attention",
    "precompiled_cuda_kernel",
    "record_or_fallback",
    "rms_norm",
    "rope",
    "run_on_cpu",
    "scaled_dot_product_attention",
    "softmax",
]
