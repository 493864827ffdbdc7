"""paged_attention and paged_write: values against float64 formulas (clamped block ids and
lengths, dropped slots), every rejected input, GPU nodes through a fake GPU backend."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from fast_refs import DTYPE_IDS, DTYPES, TOL, nodes, sample
from nuvec.fast.paged import PagedAttention, PagedWrite
from nuvec.graph.array import record
from nuvec.graph.device import to_stream
from nuvec.testing import assert_allclose


def reference(q, kc, vc, tables, lengths, scale):
    """Per sequence: its listed blocks (ids clamped to the cache) as positions; query `l` of
    `L` sees positions up to `length - L + l` (length clamped to the capacity); a query
    that sees none averages every listed position."""
    scale = float(np.float32(scale))
    b, hq, lq, _ = q.shape
    blocks, hkv, bs, _ = kc.shape
    out = np.zeros(q.shape[:3] + (vc.shape[3],))
    for i in range(b):
        ids = np.clip(tables[i], 0, blocks - 1)
        k = np.concatenate([kc[j] for j in ids], axis=1)  # [Hkv, S, D]
        v = np.concatenate([vc[j] for j in ids], axis=1)
        k, v = np.repeat(k, hq // hkv, 0), np.repeat(v, hq // hkv, 0)
        s_len = k.shape[1]
        n = min(max(int(lengths[i]), 0), s_len)
        s = q[i] @ np.swapaxes(k, -1, -2) * scale  # [Hq, L, S]
        seen = np.arange(s_len)[None, :] <= n - lq + np.arange(lq)[:, None]
        s = np.where(seen, s, -np.inf)
        m = np.max(s, -1, keepdims=True)
        e = np.exp(s - np.where(np.isfinite(m), m, 0))
        with np.errstate(invalid="ignore"):
            p = e / e.sum(-1, keepdims=True)
        p = np.where(seen.any(-1, keepdims=True), p, 1.0 / s_len)
        out[i] = p @ v
    return out


CASES = {
    # (q shape, cache shape, tables, lengths)
    "decode_gqa2_kernel_shape": ((2, 4, 1, 64), (5, 2, 4, 64), [[0, 3, 1], [2, 4, 0]], [9, 5]),
    "prefill_past_capacity": ((2, 2, 3, 8), (4, 2, 4, 8), [[1, 2], [3, 0]], [7, 50]),
    "out_of_range_ids": ((2, 2, 2, 8), (3, 1, 2, 8), [[-4, 7, 1], [2, 9, -1]], [5, 6]),
    "short_lengths": ((3, 2, 2, 8), (3, 2, 3, 8), [[0, 1], [1, 2], [2, 0]], [0, -3, 1]),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", list(CASES), ids=str)
def test_paged_attention(case, dtype):
    qs, cs, tables, lengths = CASES[case]
    rng = np.random.default_rng(0)
    q, qr = sample(rng, qs, dtype)
    kc, kr = sample(rng, cs, dtype)
    vc, vr = sample(rng, cs, dtype)
    out = mx.fast.paged_attention(q, kc, vc, mx.array(tables, mx.int64),
                                  mx.array(lengths, mx.uint32 if min(lengths) >= 0
                                           else mx.int32), scale=0.3)
    want = reference(qr, kr, vr, np.array(tables), np.array(lengths), 0.3)
    tol = TOL[dtype.name]
    assert_allclose(out, want, dtype=dtype, rtol=tol, atol=tol)


def test_paged_attention_gpu_node(fake_gpu):
    qs, cs, tables, lengths = CASES["decode_gqa2_kernel_shape"]
    rng = np.random.default_rng(1)
    q, qr = sample(rng, qs, mx.float32)
    kc, kr = sample(rng, cs, mx.float32)
    with mx.stream(fake_gpu):
        out = mx.fast.paged_attention(q, kc, kc, mx.array(tables), mx.array(lengths), scale=0.3)
        assert nodes(out, PagedAttention) == 1
        want = reference(qr, kr, kr, np.array(tables), np.array(lengths), 0.3)
        assert_allclose(out, want, dtype=mx.float32, rtol=1e-5, atol=1e-5)
        # Head size 8 has no kernel: the fallback graph is built.
        q8, _ = sample(rng, (1, 1, 1, 8), mx.float32)
        c8, _ = sample(rng, (2, 1, 4, 8), mx.float32)
        out = mx.fast.paged_attention(q8, c8, c8, mx.array([[0]]), mx.array([2]), scale=1.0)
        assert nodes(out, PagedAttention) == 0


def write_reference(cache, new, slots):
    out = cache.copy()
    blocks, _, bs, _ = cache.shape
    for t, s in enumerate(slots):
        if 0 <= s < blocks * bs:
            out[s // bs, :, s % bs] = new[t]
    return out


@pytest.mark.parametrize("dtype", [*DTYPES, mx.int32], ids=[*DTYPE_IDS, "int32"])
def test_paged_write(dtype):
    rng = np.random.default_rng(2)
    cache = rng.standard_normal((3, 2, 4, 5)).round(2)
    new = rng.standard_normal((5, 2, 5)).round(2)
    slots = np.array([0, 11, -1, 12, 6])
    want = write_reference(np.asarray(mx.array(cache, dtype)).astype(np.float64),
                           np.asarray(mx.array(new, dtype)).astype(np.float64), slots)
    out = mx.fast.paged_write(mx.array(cache, dtype), mx.array(new, mx.float64),
                              mx.array(slots, mx.int64))
    assert_allclose(out, want, dtype=dtype, rtol=0, atol=0)


def test_paged_write_gpu_node_and_nothing_to_write(fake_gpu):
    cache = mx.zeros((2, 1, 2, 3))
    with mx.stream(fake_gpu):
        out = mx.fast.paged_write(cache, mx.ones((1, 1, 3)), mx.array([3]))
        assert nodes(out, PagedWrite) == 1
        want = np.zeros((2, 1, 2, 3))
        want[1, 0, 1] = 1
        assert_allclose(out, want, dtype=mx.float32)
    out = mx.fast.paged_write(cache, mx.zeros((0, 1, 3)), mx.zeros((0,), mx.int32))
    assert_allclose(out, np.zeros((2, 1, 2, 3)), dtype=mx.float32)


def _z(*shape, dtype=mx.float32):
    return mx.zeros(shape, dtype)


PA_BAD = [
    ((_z(1, 2, 1, 8, dtype=mx.int32), _z(2, 2, 4, 8), _z(2, 2, 4, 8), _z(1, 2, dtype=mx.int32),
      _z(1, dtype=mx.int32)), TypeError, "unsupported dtype int32"),
    ((_z(2, 1, 8), _z(2, 2, 4, 8), _z(2, 2, 4, 8), _z(1, 2, dtype=mx.int32),
      _z(1, dtype=mx.int32)), ValueError, "q must be \\[B, Hq, L, D\\] and the caches"),
    ((_z(1, 2, 1, 8), _z(2, 2, 4, 8), _z(2, 2, 2, 8), _z(1, 2, dtype=mx.int32),
      _z(1, dtype=mx.int32)), ValueError, "q must be"),
    ((_z(1, 3, 1, 8), _z(2, 2, 4, 8), _z(2, 2, 4, 8), _z(1, 2, dtype=mx.int32),
      _z(1, dtype=mx.int32)), ValueError,
     "q's heads \\(3\\) must be a multiple of the caches' \\(2\\)"),
    ((_z(1, 2, 1, 8), _z(2, 2, 4, 4), _z(2, 2, 4, 4), _z(1, 2, dtype=mx.int32),
      _z(1, dtype=mx.int32)), ValueError,
     "the caches' head size \\(4\\) must be q's \\(8\\), got q \\[1, 2, 1, 8\\] and "
     "caches \\[2, 2, 4, 4\\]"),
    ((_z(1, 2, 1, 8), _z(2, 2, 4, 8), _z(2, 2, 4, 8), _z(1, 2), _z(1, dtype=mx.int32)),
     ValueError, "block_tables must be \\[1, max_blocks\\] integers, got float32 \\[1, 2\\]"),
    ((_z(1, 2, 1, 8), _z(2, 2, 4, 8), _z(2, 2, 4, 8), _z(2, 2, dtype=mx.int32),
      _z(1, dtype=mx.int32)), ValueError, "block_tables must be"),
    ((_z(1, 2, 1, 8), _z(2, 2, 4, 8), _z(2, 2, 4, 8), _z(2, dtype=mx.int32),
      _z(1, dtype=mx.int32)), ValueError, "block_tables must be"),
    ((_z(1, 2, 1, 8), _z(2, 2, 4, 8), _z(2, 2, 4, 8), _z(1, 2, dtype=mx.int32),
      _z(1, dtype=mx.bool_)), ValueError, "lengths must be \\[1\\] integers, got bool \\[1\\]"),
    ((_z(1, 2, 1, 8), _z(2, 2, 4, 8), _z(2, 2, 4, 8), _z(1, 2, dtype=mx.int32),
      _z(2, dtype=mx.int32)), ValueError, "lengths must be"),
    ((_z(1, 2, 1, 8), _z(0, 2, 4, 8), _z(0, 2, 4, 8), _z(1, 2, dtype=mx.int32),
      _z(1, dtype=mx.int32)), ValueError, "the caches hold no blocks"),
]


@pytest.mark.parametrize("inputs,exc,message", PA_BAD, ids=range(len(PA_BAD)))
def test_paged_attention_rejects(inputs, exc, message):
    with pytest.raises(exc, match=f"^paged_attention: {message}"):
        mx.fast.paged_attention(*inputs, scale=1.0)


PW_BAD = [
    ((_z(2, 4, 8), _z(1, 2, 8), _z(1, dtype=mx.int32)), "cache must be \\[blocks, Hkv, "
     "block_size, D\\], new \\[T, Hkv, D\\] and slots \\[T\\], got \\[2, 4, 8\\]"),
    ((_z(2, 2, 4, 8), _z(1, 3, 8), _z(1, dtype=mx.int32)), "cache must be"),
    ((_z(2, 2, 4, 8), _z(1, 2, 4), _z(1, dtype=mx.int32)), "cache must be"),
    ((_z(2, 2, 4, 8), _z(2, 2, 8), _z(1, dtype=mx.int32)), "cache must be"),
]


@pytest.mark.parametrize("inputs,message", PW_BAD, ids=range(len(PW_BAD)))
def test_paged_write_rejects(inputs, message):
    with pytest.raises(ValueError, match=f"^paged_write: {message}"):
        mx.fast.paged_write(*inputs)


def test_paged_write_rejects_slots_that_are_not_integers():
    with pytest.raises(TypeError, match="^paged_write: slots must be integers, got float32"):
        mx.fast.paged_write(_z(2, 2, 4, 8), _z(1, 2, 8), _z(1))


def _node(op, *inputs):
    return record(op, inputs, to_stream(None))[0]


NODE_BAD = [
    (PagedAttention(1.0), (_z(1, 2, 1, 8), _z(2, 2, 4, 8), _z(2, 2, 4, 8),
                           _z(1, 2, dtype=mx.int32), _z(1, dtype=mx.int32))),  # head size 8
    (PagedAttention(1.0), (_z(1, 2, 1, 64), _z(2, 2, 3, 64), _z(2, 2, 3, 64),
                           _z(1, 2, dtype=mx.int32), _z(1, dtype=mx.int32))),  # block size 3
    (PagedAttention(1.0), (_z(1, 2, 1, 64), _z(2, 2, 4, 64), _z(2, 2, 4, 64),
                           _z(1, 2, dtype=mx.int64), _z(1, dtype=mx.int32))),
    (PagedWrite(), (_z(2, 2, 4, 8), _z(1, 2, 8), _z(1, dtype=mx.int64))),
    (PagedWrite(), (_z(2, 2, 4, 8), _z(1, 2, 8, dtype=mx.float16), _z(1, dtype=mx.int32))),
    (PagedAttention(1.0), (_z(2, 64), _z(2, 2, 4, 64), _z(2, 2, 4, 64),
                           _z(1, 2, dtype=mx.int32), _z(1, dtype=mx.int32))),  # q 2-D
    (PagedAttention(1.0), (_z(1, 2, 1, 64), _z(2, 2, 4, 64), _z(2, 2, 8, 64),
                           _z(1, 2, dtype=mx.int32), _z(1, dtype=mx.int32))),  # k, v differ
    (PagedAttention(1.0), (_z(1, 2, 1, 64), _z(2, 2, 4, 64, dtype=mx.float16),
                           _z(2, 2, 4, 64, dtype=mx.float16), _z(1, 2, dtype=mx.int32),
                           _z(1, dtype=mx.int32))),  # cache dtype
    (PagedAttention(1.0), (_z(1, 3, 1, 64), _z(2, 2, 4, 64), _z(2, 2, 4, 64),
                           _z(1, 2, dtype=mx.int32), _z(1, dtype=mx.int32))),  # Hq % Hkv
    (PagedAttention(1.0), (_z(1, 2, 1, 64), _z(2, 2, 4, 128), _z(2, 2, 4, 128),
                           _z(1, 2, dtype=mx.int32), _z(1, dtype=mx.int32))),  # head sizes
    (PagedAttention(1.0), (_z(1, 2, 1, 64), _z(2, 2, 4, 64), _z(2, 2, 4, 64),
                           _z(2, dtype=mx.int32), _z(1, dtype=mx.int32))),  # tables 1-D
    (PagedAttention(1.0), (_z(1, 2, 1, 64), _z(2, 2, 4, 64), _z(2, 2, 4, 64),
                           _z(2, 2, dtype=mx.int32), _z(1, dtype=mx.int32))),  # tables rows
    (PagedAttention(1.0), (_z(1, 2, 1, 64), _z(2, 2, 4, 64), _z(2, 2, 4, 64),
                           _z(1, 2, dtype=mx.int32), _z(2, dtype=mx.int32))),  # lengths
    (PagedAttention(1.0), (_z(1, 2, 1, 64), _z(2, 2, 4, 64), _z(2, 2, 4, 64),
                           _z(1, 2, dtype=mx.int32), _z(1, dtype=mx.uint32))),
    (PagedWrite(), (_z(2, 4, 8), _z(1, 2, 8), _z(1, dtype=mx.int32))),  # cache 3-D
    (PagedWrite(), (_z(2, 2, 4, 8), _z(1, 3, 8), _z(1, dtype=mx.int32))),  # heads
    (PagedWrite(), (_z(2, 2, 4, 8), _z(1, 2, 4), _z(1, dtype=mx.int32))),  # head size
    (PagedWrite(), (_z(2, 2, 4, 8), _z(2, 2, 8), _z(1, dtype=mx.int32))),  # one slot per token
]


@pytest.mark.parametrize("op,inputs", NODE_BAD, ids=range(len(NODE_BAD)))
def test_nodes_built_directly_are_checked(op, inputs):
    with pytest.raises(ValueError, match=f"^{op.op}: invalid inputs"):
        _node(op, *inputs)


def test_paged_write_rejects_more_than_2_to_the_31_slots():
    # Shapes only: the broadcast cache is never materialised.
    cache = mx.broadcast_to(mx.zeros((1, 1, 1, 1)), (2**20, 1, 2**11, 1))
    with pytest.raises(ValueError, match=r"^paged_write: more than 2\^31 slots"):
        mx.fast.paged_write(cache, mx.zeros((1, 1, 1)), mx.array([0]))
