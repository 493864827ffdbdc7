"""Rule rows of `nuvec.fast`: every fused op, through its public function or a node built
directly (float64 nodes compute with NumPy; their rules are the ones under test)."""

from __future__ import annotations

import numpy as np

import nuvec as mx
from nuvec.fast.conv import DepthwiseConv1d
from nuvec.fast.cross_entropy import CrossEntropy, CrossEntropyVjp
from nuvec.fast.gated_delta import GatedDelta, GatedDeltaSlots
from nuvec.fast.gather import GatherMm, GatherQmm
from nuvec.fast.norms import AddRmsNorm, LayerNorm, LayerNormVjp, RmsNorm, RmsNormVjp
from nuvec.fast.rope import NormRope, Rope
from nuvec.fast.softmax import LogSumExp, Softmax
from nuvec.graph.array import record
from nuvec.graph.device import to_stream
from nuvec.testing import OpSpec

EPS = 1e-5


def node(op, *inputs):
    """Records `op` directly on the current stream; one output or a list of them."""
    outs = record(op, inputs, to_stream(None))
    return outs[0] if len(outs) == 1 else outs


def normal(*shape):
    return lambda rng: rng.standard_normal(shape)


def args(*makers):
    return lambda rng: [m(rng) for m in makers]


_TARGETS = mx.array([0, -1, 2], mx.int32)
_LHS = mx.array([1, 0, 1], mx.uint32)
_RHS = mx.array([0, 1, 1], mx.uint32)
_W = np.random.default_rng(11).standard_normal((2, 8, 32))
_Q = mx.quantize(mx.array(_W, mx.float64), group_size=32, bits=4)


def _gqmm(x):
    w, scales, biases = _Q
    return node(GatherQmm(32, 4, True), x, w, scales, biases, _LHS, _RHS)


def _delta(shape_b=1, t=2, hk=1, hv=2, dv=2, dk=32):
    return args(normal(shape_b, t, hk, dk), normal(shape_b, t, hk, dk),
                normal(shape_b, t, hv, dv),
                lambda rng: rng.uniform(0.5, 1.0, (shape_b, t, hv)),
                lambda rng: rng.uniform(0.1, 0.9, (shape_b, t, hv)),
                normal(shape_b, hv, dv, dk))


_SLOTS = mx.array([2, 0], mx.int32)

SPECS = [
    OpSpec("fast.rms_norm", lambda x, w: mx.fast.rms_norm(x, w, EPS),
           args(normal(3, 5), normal(5)), covers=[RmsNorm, RmsNormVjp]),
    OpSpec("fast.rms_norm_vjp", lambda x, w, g: node(RmsNormVjp(EPS), x, w, g),
           args(normal(3, 5), normal(5), normal(3, 5)), covers=[RmsNormVjp]),
    OpSpec("fast.layer_norm", lambda x, w, b: mx.fast.layer_norm(x, w, b, EPS),
           args(normal(2, 6), normal(6), normal(6)), covers=[LayerNorm, LayerNormVjp]),
    OpSpec("fast.layer_norm_vjp", lambda x, w, b, g: node(LayerNormVjp(EPS), x, w, b, g),
           args(normal(2, 6), normal(6), normal(6), normal(2, 6)), covers=[LayerNormVjp]),
    OpSpec("fast.add_rms_norm", lambda x, r, w: list(mx.fast.add_rms_norm(x, r, w, EPS)),
           args(normal(2, 4), normal(2, 4), normal(4)), covers=[AddRmsNorm, RmsNorm]),
    OpSpec("fast.softmax", mx.fast.softmax, args(normal(2, 5)), covers=[Softmax]),
    OpSpec("fast.logsumexp", mx.fast.logsumexp, args(normal(2, 5)), covers=[LogSumExp, Softmax]),
    # The loss is float32: float32 step and tolerances.
    OpSpec("fast.cross_entropy", lambda x: mx.fast.cross_entropy(x, _TARGETS),
           args(normal(3, 4)), covers=[CrossEntropy], eps=1e-3, rtol=1e-3, atol=1e-4,
           jvp_rtol=1e-5, jvp_atol=1e-6),
    OpSpec("fast.cross_entropy_vjp",
           lambda x, loss, g: node(CrossEntropyVjp(), x, _TARGETS, mx.astype(loss, mx.float32),
                                   mx.astype(g, mx.float32)),
           args(normal(3, 4), normal(3), normal(3)), covers=[CrossEntropyVjp], argnums=(0,)),
    OpSpec("fast.rope", lambda x: mx.fast.rope(x, 4, traditional=False, base=10.0, scale=0.5,
                                               offset=2),
           args(normal(2, 3, 6)), covers=[Rope]),
    OpSpec("fast.rope_traditional_freqs",
           lambda x: mx.fast.rope(x, 4, traditional=True, base=None, scale=1.0, offset=1,
                                  freqs=mx.array([1.0, 5.0])),
           args(normal(1, 2, 3, 4)), covers=[Rope]),
    OpSpec("fast.norm_rope",
           lambda c, x, w: node(NormRope(EPS, 4, False, 10.0, 1.0, 1, True), c, x, w),
           args(normal(1, 2, 4, 4), normal(1, 2, 2, 4), normal(4)), covers=[NormRope]),
    OpSpec("fast.depthwise_conv1d", lambda x, w: node(DepthwiseConv1d(2, 1, 2), x, w),
           args(normal(2, 7, 3), normal(3, 2, 1)), covers=[DepthwiseConv1d]),
    OpSpec("fast.gather_mm", lambda a, b: node(GatherMm(), a, b, _LHS, _RHS),
           args(normal(2, 2, 3), normal(2, 3, 4)), covers=[GatherMm]),
    OpSpec("fast.gather_qmm", _gqmm, args(normal(2, 1, 32)), covers=[GatherQmm]),
    OpSpec("fast.gated_delta", lambda *a: node(GatedDelta(False), *a), _delta(),
           covers=[GatedDelta]),
    OpSpec("fast.gated_delta_steps", lambda *a: node(GatedDelta(True), *a),
           _delta(hv=1, dv=3), covers=[GatedDelta]),
    OpSpec("fast.gated_delta_slots",
           lambda q, k, v, g, b, pool: node(GatedDeltaSlots(), q, k, v, g, b, pool, _SLOTS),
           args(normal(2, 1, 1, 32), normal(2, 1, 1, 32), normal(2, 1, 2, 2),
                lambda rng: rng.uniform(0.5, 1.0, (2, 1, 2)),
                lambda rng: rng.uniform(0.1, 0.9, (2, 1, 2)), normal(3, 2, 2, 32)),
           covers=[GatedDeltaSlots]),
]
