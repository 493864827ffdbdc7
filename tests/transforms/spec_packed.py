"""Rule rows of `nuvec.fast.packed_attention`: the public op (values, lse and the tables'
gradients) and its backward node built directly, with every input independent."""

from __future__ import annotations

import nuvec as mx
from nuvec.fast.packed_attention import PackedAttention, PackedAttentionVjp
from nuvec.graph.array import record
from nuvec.graph.device import to_stream
from nuvec.testing import OpSpec

_LENGTHS = (2, 0, 3)
_HEADS = 2


def normal(*shape):
    return lambda rng: rng.standard_normal(shape)


def args(*makers):
    return lambda rng: [m(rng) for m in makers]


def packed(window):
    return lambda qkv, cos, sin: mx.fast.packed_attention(
        qkv, _LENGTHS, cos, sin, heads=_HEADS, window=window, return_lse=True)


def backward(*inputs):
    op = PackedAttentionVjp(_HEADS, _LENGTHS, 0.5, 1)
    return record(op, inputs, to_stream(None))[0]


SPECS = [
    OpSpec("fast.packed_attention", packed(None),
           args(normal(5, 24), normal(3, 2), normal(3, 2)), covers=[PackedAttention]),
    OpSpec("fast.packed_attention_window", packed(1),
           args(normal(5, 24), normal(4, 2), normal(4, 2)), covers=[PackedAttention]),
    OpSpec("fast.packed_attention_vjp_node", backward,
           args(normal(5, 24), normal(3, 2), normal(3, 2), normal(5, 8), normal(2, 5),
                normal(5, 8), normal(2, 5)), covers=[PackedAttentionVjp]),
]
