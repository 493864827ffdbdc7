"""scaled_dot_product_attention: values against a float64 formula, every rejected input, the
row-blocked composition, GPU nodes (through a fake GPU backend), derivatives."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from fast_refs import DTYPE_IDS, DTYPES, TOL, nodes, normal64, reference, sample
from nuvec.fast.attention import Attention, AttentionRows, plan_attention
from nuvec.fast.planner import CPU_TILE_ROWS
from nuvec.graph.array import record
from nuvec.graph.device import to_stream
from nuvec.testing import assert_allclose, check_grads, check_jvp_vjp

sdpa = mx.fast.scaled_dot_product_attention


def build(dtype, qs, ks, vs, *, seed=0, mask=None, sinks=False, window=None, cap=None):
    """The op's (unevaluated) result on random inputs and the reference's."""
    rng = np.random.default_rng(seed)
    q, qr = sample(rng, qs, dtype)
    k, kr = sample(rng, ks, dtype)
    v, vr = sample(rng, vs, dtype)
    m, mr = mask, mask
    if isinstance(mask, tuple):  # ("bool" | "add", shape)
        if mask[0] == "bool":
            mr = rng.random(mask[1]) < 0.6
            m = mx.array(mr)
        else:
            m, mr = sample(rng, mask[1], dtype)
    s, sr = sample(rng, (qs[1],), dtype) if sinks else (None, None)
    out = sdpa(q, k, v, scale=0.4, mask=m, sinks=s, window=window, max_score_bytes=cap)
    return out, reference(qr, kr, vr, 0.4, mr, sr, window)


def run(dtype, *shapes, **options):
    out, want = build(dtype, *shapes, **options)
    tol = TOL[dtype.name]
    assert_allclose(out, want, dtype=dtype, rtol=tol, atol=tol)


CASES = {
    "plain": dict(qs=(1, 2, 5, 8), ks=(1, 2, 5, 8), vs=(1, 2, 5, 8)),
    "gqa2_decode": dict(qs=(2, 4, 1, 8), ks=(2, 2, 9, 8), vs=(2, 2, 9, 6)),
    "gqa3_causal_prefill": dict(qs=(1, 6, 7, 4), ks=(1, 2, 7, 4), vs=(1, 2, 7, 4),
                                mask="causal"),
    "causal_lq_lt_lk": dict(qs=(1, 2, 3, 4), ks=(1, 2, 8, 4), vs=(1, 2, 8, 4), mask="causal"),
    "causal_lq_gt_lk": dict(qs=(1, 2, 6, 4), ks=(1, 2, 3, 4), vs=(1, 2, 3, 4), mask="causal"),
    "window": dict(qs=(1, 2, 4, 4), ks=(1, 2, 9, 4), vs=(1, 2, 9, 4), mask="causal",
                   window=3),
    "window_blocks": dict(qs=(2, 4, 9, 4), ks=(2, 2, 9, 4), vs=(2, 2, 9, 4), mask="causal",
                          window=2, cap=200),
    "bool_mask": dict(qs=(2, 2, 3, 4), ks=(2, 2, 5, 4), vs=(2, 2, 5, 4),
                      mask=("bool", (3, 5))),
    "bool_mask_gqa": dict(qs=(1, 4, 3, 4), ks=(1, 2, 5, 4), vs=(1, 2, 5, 4),
                          mask=("bool", (1, 4, 3, 5))),
    "additive_mask": dict(qs=(1, 2, 3, 4), ks=(1, 2, 5, 4), vs=(1, 2, 5, 4),
                          mask=("add", (2, 1, 5))),
    "sinks_causal_gqa": dict(qs=(1, 4, 3, 4), ks=(1, 2, 5, 4), vs=(1, 2, 5, 4),
                             mask="causal", sinks=True),
    "sinks_bool_mask": dict(qs=(1, 2, 3, 4), ks=(1, 2, 5, 4), vs=(1, 2, 5, 4),
                            mask=("bool", (3, 5)), sinks=True),
    "sinks_blind_rows": dict(qs=(1, 2, 5, 4), ks=(1, 2, 2, 4), vs=(1, 2, 2, 4),
                             mask="causal", sinks=True, cap=40),
    "causal_blocks": dict(qs=(1, 2, 17, 4), ks=(1, 2, 20, 4), vs=(1, 2, 20, 4),
                          mask="causal", cap=300),
    "causal_tiles": dict(qs=(1, 2, 150, 8), ks=(1, 2, 150, 8), vs=(1, 2, 150, 8),
                         mask="causal"),
    "causal_tiles_gqa_window_lq_lt_lk": dict(qs=(1, 4, 140, 8), ks=(1, 2, 170, 8),
                                             vs=(1, 2, 170, 6), mask="causal", window=40),
    "empty_queries": dict(qs=(1, 2, 0, 4), ks=(1, 2, 3, 4), vs=(1, 2, 3, 5), mask="causal"),
    "empty_keys": dict(qs=(1, 2, 3, 4), ks=(1, 2, 0, 4), vs=(1, 2, 0, 5)),
    "empty_keys_causal_sinks": dict(qs=(1, 2, 3, 4), ks=(1, 2, 0, 4), vs=(1, 2, 0, 5),
                                    mask="causal", sinks=True),
    "empty_batch": dict(qs=(0, 2, 3, 4), ks=(0, 1, 3, 4), vs=(0, 1, 3, 4)),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", list(CASES), ids=str)
def test_values(case, dtype):
    run(dtype, **CASES[case])


@pytest.mark.parametrize("mask", [None, "causal"], ids=str)
def test_large_scores_take_the_exact_path(mask):
    """Scores too large for `exp` without the row maximum still give the softmax."""
    rng = np.random.default_rng(8)
    q, qr = sample(rng, (1, 2, 70, 8), mx.float32)
    k, kr = sample(rng, (1, 2, 70, 8), mx.float32)
    out = sdpa(q * 60, k, k, scale=0.5, mask=mask)
    want = reference(qr * 60, kr, kr, 0.5, mask)
    assert np.max(np.abs(qr * 60 @ np.swapaxes(kr, -1, -2) * 0.5)) > 100
    assert_allclose(out, want, dtype=mx.float32, rtol=1e-4, atol=1e-4)


def test_promotes_and_converts():
    rng = np.random.default_rng(3)
    q, qr = sample(rng, (1, 1, 2, 3), mx.float16)
    k, kr = sample(rng, (1, 1, 4, 3), mx.float32)
    out = sdpa(q, k, np.asarray(k), scale=1.0, mask=[[True, False, True, True]] * 2)
    mask = np.array([[True, False, True, True]] * 2)
    assert_allclose(out, reference(qr, kr, kr, 1.0, mask), dtype=mx.float32, rtol=1e-5)


@pytest.mark.parametrize("cap", [64, 300, 1000, 5000])
def test_capped_tiles_match_and_stay_under_the_cap(cap):
    rng = np.random.default_rng(4)
    q, _ = sample(rng, (1, 4, 12, 4), mx.float32)
    k, _ = sample(rng, (1, 2, 15, 4), mx.float32)
    whole = sdpa(q, k, k, scale=0.5, mask="causal", window=5)
    capped = sdpa(q, k, k, scale=0.5, mask="causal", window=5, max_score_bytes=cap)
    (op,) = _row_nodes(capped)  # one node of the CPU kernel, its tiles under the cap
    assert_allclose(capped, np.asarray(whole), rtol=1e-6, atol=1e-6)
    plan = plan_attention(q.shape, k.shape, k.shape, mx.float32, mask="causal", window=5,
                          max_score_bytes=cap)
    tiles = plan.kernel
    assert (op.tile_rows, op.tile_keys, op.live) == (tiles.rows, tiles.keys, tiles.live)
    tile = 2 * tiles.rows * tiles.keys * 4  # two query heads per key head, stacked
    assert plan.max_intermediate_bytes == tiles.live * tile <= cap
    assert plan.capped == (cap < 5000)


def _row_nodes(out) -> list[AttentionRows]:
    """The `AttentionRows` primitives of the graph of `out`."""
    seen, stack, ops = set(), [out], []
    while stack:
        a = stack.pop()
        if id(a._node) in seen:
            continue
        seen.add(id(a._node))
        if isinstance(a._node.primitive, AttentionRows):
            ops.append(a._node.primitive)
        stack.extend(a._node.inputs)
    return ops


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("options", [
    dict(mask="causal", window=3), dict(mask="causal", sinks=True),
    dict(mask="causal", offset=-2), dict(mask="bool"), dict(mask="add", sinks=True),
], ids=["window", "sinks", "blind_rows", "bool", "additive_sinks"])
def test_row_block_kernel_matches_its_fallback(dtype, options):
    rng = np.random.default_rng(8)
    q, _ = sample(rng, (2, 4, 3, 4), dtype)
    k, _ = sample(rng, (2, 2, 6, 4), dtype)
    inputs = [q, k, k]
    kind = options["mask"]
    if kind == "bool":
        inputs.append(mx.array(rng.random((2, 4, 3, 6)) < 0.5))
    elif kind == "add":
        inputs.append(sample(rng, (2, 4, 3, 6), dtype)[0])
    if options.get("sinks"):
        inputs.append(sample(rng, (4,), dtype)[0])
    op = AttentionRows(0.6, kind == "causal", kind != "causal", bool(options.get("sinks")),
                       options.get("offset", 2), options.get("window"))
    tol = TOL[dtype.name]
    assert_allclose(_node(op, *inputs), np.asarray(op.fallback(inputs)[0]).astype(np.float64),
                    dtype=dtype, rtol=tol, atol=tol)


def test_peak_memory_under_the_cap(monkeypatch):
    """NumPy reports its buffers to tracemalloc: the peak includes the BLAS tiles' scores (of
    at most `live` threads), never every score at once. (The fused C kernel's scratch, a
    block of 64 keys per row, is C's own, outside tracemalloc.)"""
    import tracemalloc

    from nuvec.backends.numpy import fast_attention

    monkeypatch.setattr(fast_attention, "fused_kernel", lambda: None)

    rng = np.random.default_rng(5)
    q, _ = sample(rng, (1, 4, 512, 8), mx.float32)
    mx.eval(q)
    peaks = []
    for cap in (None, 1 << 14):
        out = sdpa(q, q, q, scale=0.5, mask="causal", max_score_bytes=cap)
        tracemalloc.start()
        mx.eval(out)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    full_scores = 4 * 512 * 512 * 4
    tile_scores = CPU_TILE_ROWS * 256 * 4  # a tile of one thread has at least 256 keys
    assert full_scores > peaks[0] >= tile_scores and full_scores > 8 * peaks[1]


# -- rejected inputs ---------------------------------------------------------------------
def _qkv(qs=(1, 2, 3, 4), ks=(1, 2, 5, 4), vs=(1, 2, 5, 4), dtype=mx.float32):
    return mx.zeros(qs, dtype), mx.zeros(ks, dtype), mx.zeros(vs, dtype)


BAD = [
    (dict(qs=(2, 3, 4)), {}, ValueError, "q, k and v must be 4-D, got \\[2, 3, 4\\]"),
    (dict(ks=(2, 2, 5, 4)), {}, ValueError, "incompatible shapes"),
    (dict(ks=(1, 2, 5, 3)), {}, ValueError, "incompatible shapes"),
    (dict(vs=(1, 2, 6, 4)), {}, ValueError, "incompatible shapes"),
    (dict(qs=(1, 3, 3, 4)), {}, ValueError,
     "the query heads \\(3\\) must be a multiple of the key heads \\(2\\)"),
    (dict(qs=(1, 0, 3, 4), ks=(1, 0, 5, 4), vs=(1, 0, 5, 4)), {}, ValueError,
     "the query heads \\(0\\) must be a multiple of the key heads \\(0\\)"),
    (dict(dtype=mx.int32), {}, TypeError, "unsupported dtype int32"),
    ({}, dict(mask="full"), ValueError, "the mask must be None, 'causal' or an array"),
    ({}, dict(mask=mx.zeros((1, 1, 1, 3, 5))), ValueError,
     "the mask must have at most 4 dimensions"),
    ({}, dict(mask=mx.zeros((3, 4))), ValueError, "the mask \\[3, 4\\] does not broadcast to "
                                                  "\\[1, 2, 3, 5\\]"),
    (dict(dtype=mx.float16), dict(mask=mx.zeros((3, 5))), ValueError,
     "a float32 mask does not promote to float16"),
    ({}, dict(sinks=mx.zeros((3,))), ValueError, "sinks must be \\[2\\] of a type promoting"),
    ({}, dict(sinks=mx.zeros((1, 2))), ValueError, "sinks must be \\[2\\]"),
    (dict(dtype=mx.float16), dict(sinks=mx.zeros((2,))), ValueError, "sinks must be"),
    ({}, dict(mask="causal", window=0), ValueError, "window must be >= 1, got 0"),
    ({}, dict(mask="causal", window=1.5), TypeError, "window must be an int, got 1.5"),
    ({}, dict(window=2), ValueError, "a window needs the causal mask"),
    ({}, dict(max_score_bytes=0), ValueError, "max_score_bytes must be >= 1, got 0"),
]


@pytest.mark.parametrize("shapes,options,exc,message", BAD, ids=[b[3][:30] for b in BAD])
def test_rejects(shapes, options, exc, message):
    with pytest.raises(exc, match=f"^scaled_dot_product_attention: {message}"):
        sdpa(*_qkv(**shapes), scale=1.0, **options)


def test_rejects_a_scale_that_is_not_a_number():
    with pytest.raises(TypeError, match="^scaled_dot_product_attention: scale must be a real "
                                        "number, got str"):
        sdpa(*_qkv(), scale="0.5")


def test_plan_rejects_negative_dimensions():
    with pytest.raises(ValueError, match="^plan_attention: dimensions must not be negative"):
        plan_attention((1, 1, -1, 4), (1, 1, 2, 4), (1, 1, 2, 4), mx.float32)
    with pytest.raises(ValueError, match="^plan_attention: incompatible"):
        plan_attention((1, 1, 1, 4), (1, 1, 2, 4), (1, 1, 3, 4), mx.float32)


def _node(op, *inputs):
    return record(op, inputs, to_stream(None))[0]


NODE_BAD = [
    (Attention(1.0, passes=1), _qkv((1, 1, 2, 64), (1, 1, 3, 64), (1, 1, 3, 64))[:2],
     "3 inputs expected, got 2"),
    (Attention(1.0, passes=1), [*_qkv((1, 1, 2, 64), (1, 1, 3, 64))[:2],
                                mx.zeros((1, 1, 3, 64), mx.float16)],
     "q, k and v must be 4-D arrays of one dtype"),
    (Attention(1.0, passes=1), _qkv((1, 1, 9, 64), (1, 1, 9, 64), (1, 1, 9, 64)),
     "invalid inputs"),  # the vector kernels take at most 8 queries
    (Attention(1.0, passes=0), _qkv((1, 1, 9, 96), (1, 1, 9, 96), (1, 1, 9, 96)),
     "invalid inputs"),  # no tiled kernel for head size 96
    (Attention(1.0, causal=True, passes=0), _qkv((1, 1, 9, 64), (1, 1, 4, 64), (1, 1, 4, 64)),
     "invalid inputs"),  # causal with more queries than keys
    (Attention(1.0, passes=3), _qkv((1, 1, 2, 64), (1, 1, 3, 64), (1, 1, 3, 64)),
     "invalid inputs"),
    (Attention(1.0, passes=2, blocks=4, gqa_kernel=True),
     _qkv((1, 4, 1, 64), (1, 1, 3, 64), (1, 1, 3, 64)), "invalid inputs"),  # gqa 4
    (Attention(1.0, passes=1, tk1=True), _qkv((1, 1, 1, 64), (1, 1, 3, 64), (1, 1, 3, 64)),
     "invalid inputs"),
    (Attention(1.0, mask=True, passes=1),
     [*_qkv((1, 1, 2, 64), (1, 1, 3, 64), (1, 1, 3, 64)), mx.zeros((1, 1, 2, 2))],
     "invalid inputs"),
    (Attention(1.0, sinks=True, passes=1),
     [*_qkv((1, 2, 2, 64), (1, 1, 3, 64), (1, 1, 3, 64)), mx.zeros((1,))], "invalid inputs"),
    (Attention(1.0, passes=1), _qkv((1, 1, 0, 64), (1, 1, 3, 64), (1, 1, 3, 64)),
     "invalid inputs"),
    (Attention(1.0, passes=1), _qkv((1, 2, 2, 64), (1, 2, 3, 64), (1, 2, 4, 64)),
     "invalid inputs"),  # keys and values of different lengths
    (Attention(1.0, passes=1), _qkv((1, 2, 2, 64), (2, 2, 3, 64), (2, 2, 3, 64)),
     "invalid inputs"),  # batch sizes
    (Attention(1.0, passes=1), _qkv((1, 2, 2, 64), (1, 2, 3, 32), (1, 2, 3, 64)),
     "invalid inputs"),  # head sizes of q and k
    (Attention(1.0, passes=1), _qkv((1, 2, 2, 64), (1, 0, 3, 64), (1, 0, 3, 64)),
     "invalid inputs"),  # no key heads
    (Attention(1.0, mask=True, passes=1),
     [*_qkv((1, 1, 2, 64), (1, 1, 3, 64), (1, 1, 3, 64)), mx.zeros((1, 1, 2, 3), mx.int32)],
     "invalid inputs"),  # an integer mask
    (Attention(1.0, sinks=True, passes=1),
     [*_qkv((1, 2, 2, 64), (1, 1, 3, 64), (1, 1, 3, 64)), mx.zeros((2,), mx.float16)],
     "invalid inputs"),  # sinks of another dtype
    (AttentionRows(1.0, False, False, False, 0, 2), _qkv(), "invalid inputs"),  # no causal
    (AttentionRows(1.0, True, False, False, 0, 0), _qkv(), "invalid inputs"),
    (AttentionRows(1.0, False, True, False, 0, None), [*_qkv(), mx.zeros((1, 2, 3, 4))],
     "invalid inputs"),
]


@pytest.mark.parametrize("op,inputs,message", NODE_BAD, ids=range(len(NODE_BAD)))
def test_nodes_built_directly_are_checked(op, inputs, message):
    with pytest.raises(ValueError, match=f"^scaled_dot_product_attention: {message}"):
        _node(op, *inputs)


# -- nodes on a GPU stream ----------------------------------------------------------------
GPU_CASES = [
    # (q, k shapes, mask, expected Attention nodes)
    ((1, 4, 1, 64), (1, 2, 1100, 64), None, 1),  # two-pass decode
    ((1, 2, 3, 64), (1, 2, 7, 64), "causal", 1),  # one-pass vector
    ((1, 2, 4, 64), (1, 2, 2, 64), "causal", 1),  # rows that see no key are composed
    ((1, 1, 12, 64), (1, 1, 12, 64), ("bool", (12, 12)), 1),  # tiled
    ((1, 1, 12, 96), (1, 1, 12, 96), "causal", 0),  # composed
]


@pytest.mark.parametrize("qs,ks,mask,count", GPU_CASES, ids=range(len(GPU_CASES)))
def test_gpu_nodes(fake_gpu, qs, ks, mask, count):
    with mx.stream(fake_gpu):
        out, want = build(mx.float32, qs, ks, ks, mask=mask, sinks=mask is None)
        assert nodes(out, Attention) == count
        assert_allclose(out, want, dtype=mx.float32, rtol=1e-5, atol=1e-5)


def test_gpu_float64_composes(fake_gpu):
    with mx.stream(fake_gpu):
        out, want = build(mx.float64, (1, 1, 2, 64), (1, 1, 3, 64), (1, 1, 3, 64))
        assert nodes(out, Attention) == 0
        assert_allclose(out, want, dtype=mx.float64, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("qs,ks,mask,count", GPU_CASES[:4], ids=range(4))
def test_force_fused_keeps_the_planned_kernel_on_a_gpu(fake_gpu, qs, ks, mask, count):
    with mx.stream(fake_gpu):
        q, k = mx.ones(qs), mx.ones(ks)
        m = mx.ones(mask[1], mx.bool_) if isinstance(mask, tuple) else mask
        out = sdpa(q, k, k, scale=0.5, mask=m, force_fused=True)
        assert nodes(out, Attention) == count
        assert_allclose(out, sdpa(q, k, k, scale=0.5, mask=m), dtype=mx.float32, rtol=0, atol=0)


@pytest.mark.parametrize(
    "shape,dtype,reasons",
    [((1, 1, 12, 96), mx.float32, r"12 queries, the vector kernels take at most 8; head sizes "
      r"\(96, 96\) not supported by the tiled kernel"),
     ((1, 1, 2, 64), mx.float64, "a GPU kernel: the CPU runs CpuTiles")],
    ids=["composed", "float64"],
)
def test_force_fused_raises_where_a_gpu_stream_would_compose(fake_gpu, shape, dtype, reasons):
    with mx.stream(fake_gpu):
        q = mx.ones(shape, dtype)
        message = rf"force_fused=True but no fused kernel takes this call \({reasons}\)$"
        with pytest.raises(ValueError, match=f"^scaled_dot_product_attention: {message}"):
            sdpa(q, q, q, scale=0.5, mask="causal", force_fused=True)


def test_force_fused_raises_on_the_cpu():
    q = mx.ones((1, 2, 3, 64))
    assert sdpa(q, q, q, scale=0.5, force_fused=False, stream=mx.cpu).shape == (1, 2, 3, 64)
    with pytest.raises(ValueError, match=r"^scaled_dot_product_attention: force_fused=True but "
                                         r"no fused kernel takes this call \(a GPU kernel: "):
        sdpa(q, q, q, scale=0.5, force_fused=True, stream=mx.cpu)
    with pytest.raises(TypeError, match="^scaled_dot_product_attention: force_fused must be a "
                                        "bool, got NoneType"):
        sdpa(q, q, q, scale=0.5, force_fused=None)


@pytest.mark.parametrize("scale", [mx.array(0.4), mx.array([0.4]), mx.array([[0.4]], mx.float64),
                                   mx.array(0.4, mx.float16), mx.array(2)],
                         ids=["0-d", "1-d", "2-d-float64", "float16", "int"])
def test_scale_may_be_a_one_element_real_array(scale):
    # As MLX (whose scale is a float parameter): the array's value, read at the call.
    rng = np.random.default_rng(3)
    q, k, v = (sample(rng, s, mx.float32)[0] for s in ((1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)))
    got = sdpa(q, k, v, scale=scale)
    assert_allclose(got, sdpa(q, k, v, scale=scale.item()), dtype=mx.float32, rtol=0, atol=0)
    assert mx.grad(lambda s: mx.sum(sdpa(q, k, v, scale=s)))(mx.array(0.4)).item() == 0.0


@pytest.mark.parametrize("scale", [mx.array([0.4, 0.4]), mx.array(True), mx.array(1j)],
                         ids=["two-elements", "bool", "complex"])
def test_rejects_a_scale_array_that_is_not_one_real_number(scale):
    with pytest.raises(TypeError, match="^scaled_dot_product_attention: scale must be a real "
                                        "number or a one-element real array, got shape"):
        sdpa(*_qkv(), scale=scale)


# -- derivatives ---------------------------------------------------------------------------
@pytest.mark.parametrize("options", [dict(mask="causal", window=2, max_score_bytes=64),
                                     dict(sinks=True)], ids=["window_blocks", "sinks"])
def test_grad_of_grad(options):
    rng = np.random.default_rng(6)
    q, k, v = normal64(rng, (1, 2, 4, 3)), normal64(rng, (1, 1, 4, 3)), normal64(rng, (1, 1, 4, 3))
    options = dict(options)
    sinks = normal64(rng, (2,)) if options.pop("sinks", False) else None

    def loss(q, k, v):
        return mx.sum(sdpa(q, k, v, scale=0.7, sinks=sinks, **options) ** 2)

    def grad_norm(q, k, v):
        g = mx.grad(loss, argnums=(0, 1, 2))(q, k, v)
        return sum(mx.sum(x * x) for x in g)

    check_grads(grad_norm, [q, k, v], rtol=1e-4, atol=1e-6)
    check_jvp_vjp(lambda q: mx.grad(loss)(q, k, v), [q])


def test_vmap_of_public_op_matches_loop():
    rng = np.random.default_rng(7)
    q, k = normal64(rng, (3, 1, 2, 5, 4)), normal64(rng, (3, 1, 1, 6, 4))
    f = mx.vmap(lambda q, k: sdpa(q, k, k, scale=0.5, mask="causal", max_score_bytes=50))
    want = np.stack([np.asarray(sdpa(q[i], k[i], k[i], scale=0.5, mask="causal"))
                     for i in range(3)])
    assert_allclose(f(q, k), want, rtol=1e-12, atol=1e-12)
