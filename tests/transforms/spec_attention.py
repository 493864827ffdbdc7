"""Rule rows of `nuvec.fast`'s attention: the public compositions (causal, windows, sinks,
masks, row blocks) and the kernel nodes built directly (float64 nodes compute through their
fallback graphs; their rules are the ones under test)."""

from __future__ import annotations

import numpy as np

import nuvec as mx
from nuvec.fast.attention import Attention, AttentionRows
from nuvec.fast.attention_grad import AttentionRowsVjp, AttentionVjp
from nuvec.fast.paged import PagedAttention, PagedWrite
from nuvec.graph.array import record
from nuvec.graph.device import to_stream
from nuvec.testing import OpSpec


def node(op, *inputs):
    """Records `op` directly on the current stream (its one output)."""
    return record(op, inputs, to_stream(None))[0]


def normal(*shape):
    return lambda rng: rng.standard_normal(shape)


def args(*makers):
    return lambda rng: [m(rng) for m in makers]


def sdpa(**options):
    return lambda q, k, v, *rest: mx.fast.scaled_dot_product_attention(
        q, k, v, scale=0.5, **options, **dict(zip(("sinks",), rest)))


_BOOL = np.array([[True, False, True, True], [False, True, True, False],
                  [True, True, False, True]])
_TABLES = mx.array([[1, 0], [2, 5]], mx.int32)
_LENGTHS = mx.array([3, 9], mx.int32)
_SLOTS = mx.array([5, 0, 40], mx.int32)

SPECS = [
    OpSpec("fast.sdpa_gqa", sdpa(), args(normal(1, 4, 3, 2), normal(1, 2, 4, 2),
                                        normal(1, 2, 4, 3)), covers=[AttentionRows]),
    OpSpec("fast.sdpa_causal_blocks", sdpa(mask="causal", max_score_bytes=64),
           args(normal(1, 2, 5, 2), normal(1, 1, 6, 2), normal(1, 1, 6, 2)),
           covers=[AttentionRows]),
    OpSpec("fast.sdpa_window_sinks", sdpa(mask="causal", window=2, max_score_bytes=100),
           args(normal(1, 2, 4, 2), normal(1, 2, 4, 2), normal(1, 2, 4, 2), normal(2)),
           covers=[AttentionRows]),
    OpSpec("fast.sdpa_bool_mask",
           lambda q, k, v: mx.fast.scaled_dot_product_attention(
               q, k, v, scale=0.5, mask=mx.array(_BOOL)),
           args(normal(2, 1, 3, 2), normal(2, 1, 4, 2), normal(2, 1, 4, 2)),
           covers=[AttentionRows]),
    OpSpec("fast.sdpa_additive_mask", lambda q, k, v, m: mx.fast.scaled_dot_product_attention(
        q, k, v, scale=0.5, mask=m),
           args(normal(1, 2, 3, 2), normal(1, 2, 4, 2), normal(1, 2, 4, 2), normal(1, 3, 4)),
           covers=[AttentionRows]),
    OpSpec("fast.attention_vector_node",
           lambda q, k, v, s: node(Attention(0.125, True, False, True, 1), q, k, v, s),
           args(normal(1, 2, 2, 64), normal(1, 1, 3, 64), normal(1, 1, 3, 64), normal(2)),
           covers=[Attention]),
    OpSpec("fast.attention_tiled_node",
           lambda q, k, v, m: node(Attention(0.125, False, True, False, 0), q, k, v, m),
           args(normal(1, 1, 9, 64), normal(1, 1, 10, 64), normal(1, 1, 10, 64),
                normal(1, 1, 9, 10)), covers=[Attention]),
    OpSpec("fast.attention_tiled_window_lse_node",
           lambda q, k, v, s: node(Attention(0.125, True, False, True, 0, window=2, lse=True),
                                   q, k, v, s),
           args(normal(1, 2, 9, 64), normal(1, 1, 10, 64), normal(1, 1, 10, 64), normal(2)),
           covers=[Attention]),
    OpSpec("fast.attention_vjp_node",
           lambda q, k, v, m, o, lse, do: record(AttentionVjp(0.125, False, True), [
               q, k, v, m, o, lse, do], to_stream(None))[1],
           args(normal(1, 2, 5, 64), normal(1, 1, 6, 64), normal(1, 1, 6, 64),
                normal(1, 2, 5, 6), normal(1, 2, 5, 64), normal(1, 2, 5), normal(1, 2, 5, 64)),
           covers=[AttentionVjp]),
    OpSpec("fast.attention_rows_vjp_node",
           lambda q, k, v, o, do: record(AttentionRowsVjp(0.5, True, window=2), [
               q, k, v, o, do], to_stream(None))[1],
           args(normal(1, 2, 5, 3), normal(1, 1, 6, 3), normal(1, 1, 6, 3),
                normal(1, 2, 5, 3), normal(1, 2, 5, 3)), covers=[AttentionRowsVjp]),
    OpSpec("fast.attention_rows_vjp_plain_node",
           lambda q, k, v, o, do: record(AttentionRowsVjp(0.5, False), [
               q, k, v, o, do], to_stream(None))[0],
           args(normal(2, 2, 3, 2), normal(2, 2, 4, 2), normal(2, 2, 4, 2),
                normal(2, 2, 3, 2), normal(2, 2, 3, 2)), covers=[AttentionRowsVjp]),
    OpSpec("fast.paged_attention_node",
           lambda q, kc, vc: node(PagedAttention(0.125), q, kc, vc, _TABLES, _LENGTHS),
           args(normal(2, 2, 2, 64), normal(3, 1, 4, 64), normal(3, 1, 4, 64)),
           covers=[PagedAttention]),
    OpSpec("fast.paged_write_node", lambda c, n: node(PagedWrite(), c, n, _SLOTS),
           args(normal(3, 2, 4, 2), normal(3, 2, 2)), covers=[PagedWrite]),
]
