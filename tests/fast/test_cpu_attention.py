"""The CPU attention kernel (`AttentionRows` in `nuvec/backends/numpy/fast_attention.py`):
its tiles and key chunks (the online softmax) against float64 NumPy for every mask kind, the
same numbers on one thread as on several, and its live scores under the cap; both its paths
for float32 (the fused C kernel of `attention.c` where it is built, the BLAS tiles)."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

import nuvec as mx
from fast_refs import TOL, nodes, reference, sample
from helpers import has_avx512
from nuvec.backends import vector_math
from nuvec.backends.numpy import fast_attention
from nuvec.backends.numpy.fast_attention import Tiles
from nuvec.fast.attention import AttentionRows, plan_attention
from nuvec.fast.attention_grad import AttentionRowsVjp
from nuvec.fast.planner import CPU_TILE_ROWS
from nuvec.testing import assert_allclose

sdpa = mx.fast.scaled_dot_product_attention


def inputs(rng, dtype, qs, ks, mask=None, sinks=False, scale=1.0):
    """Random q, k, v (k's shape for v too), mask and sinks with their float64 values; mask
    is None, "causal", "bool" or "add" (an additive mask hiding some keys with -inf)."""
    q, qr = sample(rng, qs, dtype, scale)
    k, kr = sample(rng, ks, dtype)
    v, vr = sample(rng, ks, dtype)
    m = mr = mask
    shape = (qs[0], qs[1], qs[2], ks[2])
    if mask == "bool":
        mr = rng.random(shape) < 0.7
        mr[..., 0, :] = False  # a row that sees no key averages every key
        m = mx.array(mr)
    elif mask == "add":
        mr = np.where(rng.random(shape) < 0.8, rng.standard_normal(shape), -np.inf)
        mr[..., 0] = 0.0  # every row sees a key
        m = mx.array(mr, dtype)
        mr = np.asarray(m).astype(np.float64)
    s, sr = sample(rng, (qs[1],), dtype) if sinks else (None, None)
    return (q, k, v, m, s), (qr, kr, vr, mr, sr)


CASES = {
    "plain": dict(qs=(1, 4, 40, 8), ks=(1, 2, 300, 8)),
    "causal": dict(qs=(1, 4, 40, 8), ks=(1, 2, 300, 8), mask="causal"),
    "causal_square": dict(qs=(2, 2, 200, 8), ks=(2, 2, 200, 8), mask="causal"),
    "causal_window": dict(qs=(1, 4, 200, 8), ks=(1, 2, 260, 8), mask="causal", window=50),
    "causal_short_window": dict(qs=(1, 2, 90, 8), ks=(1, 2, 90, 8), mask="causal", window=3),
    "causal_blind_rows_sinks": dict(qs=(1, 4, 330, 8), ks=(1, 2, 300, 8), mask="causal",
                                    sinks=True),
    "causal_blind_rows": dict(qs=(1, 2, 150, 8), ks=(1, 2, 140, 8), mask="causal"),
    "bool": dict(qs=(1, 4, 40, 8), ks=(1, 2, 300, 8), mask="bool"),
    "bool_sinks": dict(qs=(1, 4, 40, 8), ks=(1, 2, 300, 8), mask="bool", sinks=True),
    "additive": dict(qs=(1, 4, 40, 8), ks=(1, 2, 300, 8), mask="add"),
    "sinks_causal": dict(qs=(1, 4, 40, 8), ks=(1, 2, 300, 8), mask="causal", sinks=True),
    "large_scores_causal": dict(qs=(1, 4, 40, 8), ks=(1, 2, 300, 8), mask="causal",
                                scale=40.0),
}


@pytest.fixture
def blas_path(monkeypatch):
    """The BLAS tiles for float32 calls the fused C kernel would take."""
    monkeypatch.setattr(fast_attention, "fused_kernel", lambda: None)


@pytest.fixture(params=["fused", "blas"])
def path(request, monkeypatch):
    """Each of the float32 paths (`fused`: the default one, the fused kernel where built)."""
    if request.param == "blas":
        monkeypatch.setattr(fast_attention, "fused_kernel", lambda: None)
    return request.param


def run_case(rng, dtype, qs, ks, mask=None, sinks=False, window=None, scale=1.0, cap=None):
    (q, k, v, m, s), (qr, kr, vr, mr, sr) = inputs(rng, dtype, qs, ks, mask, sinks, scale)
    out = sdpa(q, k, v, scale=0.4, mask=m, sinks=s, window=window, max_score_bytes=cap)
    return out, reference(qr, kr, vr, 0.4, mr, sr, window)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64, mx.float16, mx.bfloat16], ids=str)
@pytest.mark.parametrize("cap", [None, 4096], ids=["default", "online"])
@pytest.mark.parametrize("case", list(CASES), ids=str)
def test_tiles_match_float64(case, cap, dtype, path):
    """Under a 4 KiB cap the tiles take a few rows and 128-key chunks (the online softmax)."""
    rng = np.random.default_rng(len(case))
    out, want = run_case(rng, dtype, **CASES[case], cap=cap)
    tol = TOL[dtype.name]
    if CASES[case].get("scale") and dtype in (mx.float32, mx.float64):
        tol *= 40  # scores near 100: exp's relative error grows with its argument
    assert_allclose(out, want, dtype=dtype, rtol=tol, atol=tol)


@pytest.mark.parametrize("scale", [1.0, 30.0], ids=["bounded", "exact"])
@pytest.mark.parametrize("sinks", [False, True], ids=["", "sinks"])
def test_long_keys_take_the_online_softmax(scale, sinks):
    qs, ks = (1, 2, 3, 16), (1, 1, 5000, 16)
    plan = plan_attention(qs, ks, ks, mx.float32, max_score_bytes=1 << 14)
    assert plan.kernel.keys < 5000 and plan.max_intermediate_bytes <= 1 << 14
    rng = np.random.default_rng(9)
    out, want = run_case(rng, mx.float32, qs, ks, sinks=sinks, scale=scale, cap=1 << 14)
    assert_allclose(out, want, dtype=mx.float32, rtol=1e-4, atol=1e-5)


THREADED = {
    "causal": dict(mask="causal"),
    "causal_window": dict(mask="causal", window=70),
    "bool_sinks": dict(mask="bool", sinks=True),
    "additive": dict(mask="add"),
    "online_exact": dict(mask="causal", scale=30.0, cap=1 << 15),
    "online_bounded": dict(cap=1 << 15),
}


@pytest.mark.parametrize("case", list(THREADED), ids=str)
def test_threads_give_the_numbers_of_one_thread(num_threads, case, path):
    """Threads split the items (batch, key head, query tile), never a row's sums."""
    options = dict(THREADED[case])
    cap = options.pop("cap", None)
    qs, ks = (1, 4, 300, 32), (1, 2, 330, 32)
    plan = plan_attention(qs, ks, ks, mx.float32, mask="causal" if options.get(
        "mask") == "causal" else None, window=options.get("window"), max_score_bytes=cap)
    assert plan.kernel.live > 1
    rng = np.random.default_rng(3)
    (q, k, v, m, s), _ = inputs(rng, mx.float32, qs, ks, options.get("mask"),
                                options.get("sinks", False), options.get("scale", 1.0))
    results = []
    for n in (1, 2, 3):
        num_threads(n)
        results.append(np.asarray(sdpa(q, k, v, scale=0.3, mask=m, sinks=s,
                                       window=options.get("window"), max_score_bytes=cap)))
    assert np.array_equal(results[0], results[1]) and np.array_equal(results[0], results[2])


@pytest.mark.parametrize("cap", [1 << 12, 1 << 15, 1 << 18], ids=str)
def test_live_scores_stay_under_the_cap(num_threads, cap, blas_path):
    """Every thread's score buffer holds one tile of the plan, and at most `live` threads
    hold one: their bytes together stay under the cap."""
    num_threads(3)
    qs, ks = (1, 4, 300, 32), (1, 2, 330, 32)
    plan = plan_attention(qs, ks, ks, mx.float32, mask="causal", max_score_bytes=cap)
    tiles = plan.kernel
    assert plan.capped and plan.max_intermediate_bytes <= cap
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in (qs, ks, ks)]
    op = AttentionRows(0.3, True, False, False, ks[2] - qs[2], None, tiles)
    call = Tiles(op, *arrays, ())
    out = call.run()
    live = sum(b.s.nbytes for b in call.scratch.values())
    assert 0 < len(call.scratch) <= tiles.live and live <= plan.max_intermediate_bytes
    want = reference(*(a.astype(np.float64) for a in arrays), 0.3, "causal")
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_one_node_and_row_blocks_under_a_transform():
    """Outside a transform the call is one node; traced for a gradient too, differentiated by
    one `AttentionRowsVjp` node. Where the backward is the fallback graph's (a boolean mask),
    the call is split into row blocks of at most the cap of scores, since that graph holds
    each block's scores."""
    rng = np.random.default_rng(1)
    q, qr = sample(rng, (1, 2, 64, 8), mx.float64)
    assert nodes(sdpa(q, q, q, scale=0.5, mask="causal", max_score_bytes=1024), AttentionRows) == 1
    counts = []

    def loss(q, mask="causal"):
        out = sdpa(q, q, q, scale=0.5, mask=mask, max_score_bytes=1024)
        counts.append(nodes(out, AttentionRows))
        return mx.sum(out * out)

    g = mx.grad(loss)(q)
    assert counts == [1] and nodes(g, AttentionRowsVjp) == 1

    eps = 1e-6  # a central difference of the float64 formula along one direction
    d = rng.standard_normal(qr.shape)
    f = [np.sum(reference(x, x, x, 0.5, "causal") ** 2) for x in (qr + eps * d, qr - eps * d)]
    np.testing.assert_allclose(np.sum(np.asarray(g) * d), (f[0] - f[1]) / (2 * eps), rtol=1e-6)

    mx.grad(loss)(q, mx.array(np.tril(np.ones((64, 64), bool))))
    assert counts[-1] == 64  # blocks of one row: 2 heads x 64 keys x 8 bytes = 1024


def _peak(fn):
    """`fn()` evaluated and the peak memory above what was live before it."""
    gc.collect()
    mx.reset_peak_memory()
    base = mx.get_active_memory()
    out = fn()
    mx.eval(out)
    return out, mx.get_peak_memory() - base


@pytest.mark.parametrize("window", [None, 40], ids=["causal", "window"])
def test_rules_of_the_traced_node_hold_blocks_of_scores(window):
    """The rules of a traced CPU node that need a graph (`jvp`, `vmap`, the backward node's
    own backward for a second derivative) take its row blocks, one after another, as row
    blocks recorded for the call would: each holds a block's scores, never all of them. So
    does the backward kernel's BLAS path (float64 here; its buffers are no node's, so
    `tracemalloc` counts them), where the fused kernel needs none. Each result against the
    float64 formula (central differences for the derivatives)."""
    rng = np.random.default_rng(7)
    shape, scale, cap = (1, 2, 384, 8), 0.4, 1 << 16
    (q, k, v), (qr, kr, vr) = zip(*(sample(rng, shape, mx.float64) for _ in range(3)))
    w, d = rng.standard_normal(shape), rng.standard_normal(shape)
    wa, da = mx.array(w, mx.float64), mx.array(d, mx.float64)
    scores = 2 * 384 * 384 * 8  # one float64 score of every head, row and key

    def attend(q, k, v):
        return sdpa(q, k, v, scale=scale, mask="causal", window=window, max_score_bytes=cap)

    def loss(q, k, v):
        return mx.sum(attend(q, k, v) * wa)

    def formula(x):
        return reference(x, kr, vr, scale, "causal", window=window)

    def grad_formula(x):
        return _grads_reference(x, kr, vr, w, float(np.float32(scale)), True, window)[0]

    eps = 1e-6
    (_, (tangent,)), peak = _peak(lambda: mx.jvp(lambda x: attend(x, k, v), [q], [da]))
    np.testing.assert_allclose(np.asarray(tangent),
                               (formula(qr + eps * d) - formula(qr - eps * d)) / (2 * eps),
                               rtol=1e-6, atol=1e-7)
    assert peak < scores / 4, peak / scores

    tracemalloc.start()  # the backward kernel's own buffers too, which no node owns
    try:
        grads, peak = _peak(lambda: mx.grad(loss, argnums=(0, 1, 2))(q, k, v))
        allocated = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    for got, want in zip(grads, _grads_reference(qr, kr, vr, w, float(np.float32(scale)),
                                                 True, window)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    assert peak < scores / 4 and allocated < scores / 2, (peak / scores, allocated / scores)

    hvp, peak = _peak(lambda: mx.grad(
        lambda x: mx.sum(mx.grad(loss)(x, k, v) * da))(q))  # the Hessian (symmetric) times d
    np.testing.assert_allclose(np.asarray(hvp), (grad_formula(qr + eps * d)
                                                 - grad_formula(qr - eps * d)) / (2 * eps),
                               rtol=1e-5, atol=1e-6)
    assert peak < scores / 4, peak / scores

    batched, peak = _peak(lambda: mx.vmap(lambda x: attend(x[None], k, v)[0])(q[0][None]))
    np.testing.assert_allclose(np.asarray(batched), formula(qr), rtol=1e-12, atol=1e-12)
    assert peak < scores / 4, peak / scores


def test_tiles_choose_their_path_by_their_own_bound(blas_path):
    """One key head's queries score up to about 100 (the exact path, with the row maximum),
    the other's stay small (the bounded path): both match the formula."""
    rng = np.random.default_rng(12)
    q, qr = sample(rng, (1, 4, 150, 8), mx.float32)
    k, kr = sample(rng, (1, 2, 150, 8), mx.float32)
    boost = np.array([1.0, 1.0, 40.0, 40.0]).reshape(1, 4, 1, 1)  # key head 1's queries
    out = sdpa(q * mx.array(boost, mx.float32), k, k, scale=0.5, mask="causal")
    want = reference(qr * boost, kr, kr, 0.5, "causal")
    assert np.max(np.abs(qr * boost @ np.swapaxes(np.repeat(kr, 2, 1), -1, -2))) * 0.5 > 100
    assert_allclose(out, want, dtype=mx.float32, rtol=1e-4, atol=1e-4)


def test_each_tile_of_a_key_head_has_its_own_bound(blas_path):
    """The middle tile's queries score up to about 100 (the exact path), the others' stay
    small (bounded): the bound is decided per tile, from its own rows, and every tile matches
    the formula (a tile taken as bounded with such scores would overflow `exp`)."""
    qs = (1, 2, 2 * CPU_TILE_ROWS + 44, 8)
    plan = plan_attention(qs, qs, qs, mx.float32, mask="causal")
    tiles = plan.kernel
    r = tiles.rows
    assert r == CPU_TILE_ROWS
    rng = np.random.default_rng(13)
    q, k = (rng.standard_normal(qs).astype(np.float32) for _ in range(2))
    q[:, :, r:2 * r] *= 40.0
    op = AttentionRows(0.5, True, False, False, 0, None, tiles)
    call = Tiles(op, q, k, k, ())
    out = call.run()
    assert call.prepare(0, 0) == (True, False, True) == call.prepare(0, 1)
    want = reference(q.astype(np.float64), k.astype(np.float64), k.astype(np.float64), 0.5,
                     "causal")
    assert np.max(np.abs(q[..., r:2 * r, :] @ np.swapaxes(k, -1, -2))) * 0.5 > 100
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


GROUPED = {
    "causal": dict(qs=(3, 6, 40, 8), ks=(3, 6, 40, 8), mask="causal"),
    "grouped_query_causal": dict(qs=(3, 6, 40, 8), ks=(3, 2, 40, 8), mask="causal"),
    "plain": dict(qs=(3, 4, 30, 8), ks=(3, 4, 50, 8), mask=None),
    "causal_longer_keys": dict(qs=(2, 4, 20, 8), ks=(2, 4, 60, 8), mask="causal"),
    "causal_window": dict(qs=(2, 4, 60, 8), ks=(2, 4, 60, 8), mask="causal", window=7),
    "large_scores": dict(qs=(2, 4, 30, 8), ks=(2, 4, 30, 8), mask="causal", scale=40.0),
}


@pytest.mark.parametrize("case", list(GROUPED), ids=str)
def test_small_heads_computed_in_groups_match_float64(num_threads, case, blas_path):
    """A short sequence's heads are grouped, a batched product and one `exp_visible` pass
    each; a group whose scores are not bounded takes every item's exact path."""
    num_threads(1)
    options = dict(GROUPED[case])
    qs, ks, mask = options.pop("qs"), options.pop("ks"), options.pop("mask")
    window, scale = options.pop("window", None), options.pop("scale", 1.0)
    plan = plan_attention(qs, ks, ks, mx.float32, mask=mask, window=window)
    rng = np.random.default_rng(len(case))
    (q, k, v, _, _), (qr, kr, vr, _, _) = inputs(rng, mx.float32, qs, ks, scale=scale)
    op = AttentionRows(0.4, mask == "causal", False, False,
                       ks[2] - qs[2] if mask == "causal" else 0, window, plan.kernel)
    call = Tiles(op, *(np.asarray(a) for a in (q, k, v)), ())
    if vector_math.in_use() == "c":  # (the groups need `exp_visible`)
        assert max(len(unit) for unit in call.units) > 1
    assert sorted(i for unit in call.units for i in unit) == list(range(len(call.items)))
    want = reference(qr, kr, vr, 0.4, mask, None, window)
    np.testing.assert_allclose(call.run(), want, rtol=1e-5 * scale, atol=1e-5 * scale)


def test_groups_give_the_numbers_of_one_thread_and_hold_the_live_tiles(num_threads, blas_path):
    qs = ks = (4, 8, 64, 16)
    rng = np.random.default_rng(12)
    (q, k, v, _, _), _ = inputs(rng, mx.float32, qs, ks)
    results = []
    for n in (1, 2, 3):
        num_threads(n)
        results.append(np.asarray(sdpa(q, k, v, scale=0.3, mask="causal")))
        plan = plan_attention(qs, ks, ks, mx.float32, mask="causal")
        op = AttentionRows(0.3, True, False, False, 0, None, plan.kernel)
        call = Tiles(op, *(np.asarray(a) for a in (q, k, v)), ())
        threads = min(n, plan.kernel.live)
        assert max(len(unit) for unit in call.units) * threads <= max(plan.kernel.live, threads)
    assert np.array_equal(results[0], results[1]) and np.array_equal(results[0], results[2])


def _grads_reference(q, k, v, w, scale, causal, window=None):
    """float64 `d/d(q, k, v) sum(attention(q, k, v) * w)` from the formula (the scores'
    cotangent 0 where masked, as `AttentionVjp`'s fallback graph)."""
    rep = q.shape[1] // k.shape[1]
    k2, v2 = np.repeat(k, rep, 1), np.repeat(v, rep, 1)
    s = scale * q @ k2.swapaxes(-1, -2)
    lq, lk = q.shape[2], k.shape[2]
    keep = True
    if causal:
        qi, ki = np.arange(lk - lq, lk)[:, None], np.arange(lk)[None]
        keep = (ki <= qi) & ((ki > qi - window) if window else True)
        s = np.where(keep, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    ds = p * (w @ v2.swapaxes(-1, -2) - (w * (p @ v2)).sum(-1, keepdims=True))
    ds = np.where(keep, ds, 0.0)  # (the fallback graph's: no NaN of a hidden key passes)
    dq = scale * ds @ k2
    dk = (scale * ds.swapaxes(-1, -2) @ q).reshape(*k.shape[:2], rep, *k.shape[2:]).sum(2)
    dv = (p.swapaxes(-1, -2) @ w).reshape(*v.shape[:2], rep, *v.shape[2:]).sum(2)
    return dq, dk, dv


BACKWARD = {
    "causal": dict(qs=(2, 4, 24, 8), ks=(2, 4, 24, 8), causal=True),
    "grouped_query_longer_keys": dict(qs=(2, 4, 16, 8), ks=(2, 2, 40, 8), causal=True),
    "window": dict(qs=(1, 2, 30, 8), ks=(1, 2, 30, 8), causal=True, window=5),
    "plain": dict(qs=(2, 2, 12, 8), ks=(2, 1, 20, 8), causal=False),
    "many_groups": dict(qs=(8, 8, 128, 16), ks=(8, 8, 128, 16), causal=True),
    "large_scores": dict(qs=(2, 2, 20, 8), ks=(2, 2, 20, 8), causal=True, magnitude=12.0),
    "key_blocks_window": dict(qs=(1, 3, 150, 24), ks=(1, 1, 200, 24), causal=True, window=70),
    "odd_head_plain": dict(qs=(1, 2, 70, 17), ks=(1, 2, 131, 17), causal=False),
}


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64], ids=str)
@pytest.mark.parametrize("case", list(BACKWARD), ids=str)
def test_the_cpu_backward_node_matches_float64(case, dtype, path):
    """Under `grad`, a CPU attention node without a mask array or sinks differentiates through
    one `AttentionRowsVjp` node (scores and softmax recomputed per key head): the fused
    kernel's (float32, where built) and the BLAS one's; key blocks of 64 crossed, a window
    across them, head sizes off the vector width."""
    options = BACKWARD[case]
    rng = np.random.default_rng(len(case))
    q, k, v = (rng.standard_normal(s) * options.get("magnitude", 1.0)
               for s in (options["qs"], options["ks"], options["ks"]))
    w = rng.standard_normal(options["qs"])
    mask = "causal" if options["causal"] else None

    def loss(q, k, v):
        out = sdpa(q, k, v, scale=0.3, mask=mask, window=options.get("window"))
        return mx.sum(out * mx.array(w, dtype))

    grads = mx.grad(loss, argnums=(0, 1, 2))(*(mx.array(a, dtype) for a in (q, k, v)))
    assert nodes(grads[0], AttentionRowsVjp) >= 1
    scale = float(np.float32(0.3))
    want = _grads_reference(q, k, v, w, scale, options["causal"], options.get("window"))
    tol = (1e-5 if dtype is mx.float32 else 1e-12) * options.get("magnitude", 1.0) ** 2
    for got, ref in zip(grads, want):
        np.testing.assert_allclose(np.asarray(got), ref, rtol=tol, atol=tol * np.abs(ref).max())


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16], ids=str)
@pytest.mark.parametrize("case", ["causal", "grouped_query_longer_keys", "window", "plain",
                                  "many_groups"], ids=str)
def test_the_cpu_backward_node_takes_half_types(case, dtype, path):
    """Half types differentiate through the same one node, computed in float32 and rounded
    once: against the float64 formula of their rounded inputs, to their own precision."""
    options = BACKWARD[case]
    rng = np.random.default_rng(len(case))
    q, k, v = (mx.array(rng.standard_normal(s), dtype)
               for s in (options["qs"], options["ks"], options["ks"]))
    w = mx.array(rng.standard_normal(options["qs"]), dtype)
    mask = "causal" if options["causal"] else None
    grads = mx.grad(lambda q, k, v: mx.sum(sdpa(q, k, v, scale=0.3, mask=mask,
                                                window=options.get("window")) * w),
                    argnums=(0, 1, 2))(q, k, v)
    assert nodes(grads[0], AttentionRowsVjp) == 1 and grads[0].dtype is dtype
    want = _grads_reference(*(np.asarray(a).astype(np.float64) for a in (q, k, v, w)),
                            float(np.float32(0.3)), options["causal"], options.get("window"))
    tol = 4e-3 if dtype is mx.float16 else 3e-2
    for got, ref in zip(grads, want):
        np.testing.assert_allclose(np.asarray(got).astype(np.float64), ref, rtol=tol,
                                   atol=tol * np.abs(ref).max())


def test_the_cpu_backward_node_gives_the_numbers_of_one_thread(num_threads):
    rng = np.random.default_rng(21)
    q, k, v, w = (mx.array(rng.standard_normal((8, 8, 128, 16)).astype(np.float32))
                  for _ in range(4))
    grad = mx.grad(lambda q, k, v: mx.sum(sdpa(q, k, v, scale=0.25, mask="causal") * w),
                   argnums=(0, 1, 2))
    results = []
    for n in (1, 2, 3):
        num_threads(n)
        results.append([np.asarray(g) for g in grad(q, k, v)])
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert np.array_equal(a, b)


def test_masks_and_sinks_keep_the_fallback_graphs_backward():
    rng = np.random.default_rng(22)
    q, k, v = (mx.array(rng.standard_normal((1, 2, 6, 4)).astype(np.float32)) for _ in range(3))
    sinks = mx.array(rng.standard_normal(2).astype(np.float32))
    boolean = mx.array(rng.random((1, 2, 6, 6)) < 0.7)
    for options in (dict(mask=boolean), dict(mask="causal", sinks=sinks)):
        g = mx.grad(lambda q: mx.sum(sdpa(q, k, v, scale=0.5, **options)))(q)
        assert nodes(g, AttentionRowsVjp) == 0


def test_the_cpu_backward_node_without_exp_visible_takes_the_exact_path(monkeypatch):
    """Bounded groups whose `exp_visible` does not run (a forked child of an MKL process, say)
    subtract the row maximum and add the mask's bias instead: the same gradients."""
    rng = np.random.default_rng(23)
    q, k, v, w = (mx.array(rng.standard_normal((2, 2, 24, 8)).astype(np.float32))
                  for _ in range(4))
    grad = mx.grad(lambda q, k, v: mx.sum(sdpa(q, k, v, scale=0.3, mask="causal") * w),
                   argnums=(0, 1, 2))
    want = [np.asarray(g) for g in grad(q, k, v)]
    monkeypatch.setattr(vector_math, "exp_visible", lambda *args: False)
    for got, ref in zip(grad(q, k, v), want):
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-6)


def test_the_diagonal_pieces_are_kept_read_only_and_equal_to_new_ones(monkeypatch):
    """A call's causal diagonal pieces (and their 0/1 forms) are made once per tile height,
    window and dtype, read-only, equal to new ones; pieces over `DIAGONAL_BYTES` are made
    afresh each call."""
    from nuvec.backends.numpy import fast_attention as fa

    monkeypatch.setattr(fa, "_diagonals", {})
    for window in (None, 3, 40):
        hidden, keep = fa._diagonal(16, window, np.float32)
        assert fa._diagonal(16, window, np.float32) == (hidden, keep)  # the same objects
        fresh = fa.diagonal_hidden(16, window)
        assert [s for s, _ in hidden] == [s for s, _ in fresh] == [s for s, _ in keep]
        for (_, h), (_, want), (_, k) in zip(hidden, fresh, keep):
            np.testing.assert_array_equal(h, want)
            np.testing.assert_array_equal(k, (~want).astype(np.float32))
            assert not h.flags.writeable and not k.flags.writeable
    assert len(fa._diagonals) == 3
    monkeypatch.setattr(fa, "DIAGONAL_BYTES", 0)
    first = fa._diagonal(8, None, np.float32)
    assert fa._diagonal(8, None, np.float32)[0] is not first[0]
    assert len(fa._diagonals) == 3


def test_the_fused_kernel_is_built_where_the_machine_hashas_avx512():
    from nuvec.backends import native

    built = native.compiler() is not None and has_avx512()
    assert (fast_attention.fused_kernel() is not None) == built
    plan = plan_attention((1, 2, 8, 8), (1, 2, 8, 8), (1, 2, 8, 8), mx.float32, mask="causal")
    op = AttentionRows(0.5, True, False, False, 0, None, plan.kernel)
    a = np.zeros((1, 2, 8, 8), np.float32)
    assert (Tiles(op, a, a, a, ()).fused is not None) == built
    assert Tiles(op, *(a.astype(np.float64),) * 3, ()).fused is None  # (float32 only)


FUSED = {  # keys across blocks of 64, D and Dv off the vector width, value tails
    "causal_blocks": dict(qs=(1, 2, 130, 17), ks=(1, 2, 130, 17), dv=70, mask="causal"),
    "causal_offset_gqa": dict(qs=(2, 6, 37, 64), ks=(2, 2, 200, 64), dv=130, mask="causal"),
    "window_across_blocks": dict(qs=(1, 4, 150, 8), ks=(1, 2, 300, 8), dv=24, mask="causal",
                                 window=70),
    "short_window": dict(qs=(1, 2, 90, 16), ks=(1, 2, 90, 16), dv=16, mask="causal", window=3),
    "plain_decode": dict(qs=(3, 4, 1, 32), ks=(3, 4, 257, 32), dv=8, mask=None),
    "gqa_decode_window": dict(qs=(1, 8, 2, 20), ks=(1, 2, 300, 20), dv=20, mask="causal",
                              window=90),
    "sixteen_rows_unpacked": dict(qs=(1, 4, 4, 16), ks=(1, 1, 100, 16), dv=16, mask="causal"),
    "plain_one_key": dict(qs=(1, 2, 5, 4), ks=(1, 2, 1, 4), dv=3, mask=None),
    "large_scores": dict(qs=(1, 2, 100, 8), ks=(1, 2, 100, 8), dv=8, mask="causal",
                         scale=60.0),
}


@pytest.mark.parametrize("case", list(FUSED), ids=str)
def test_the_default_path_matches_float64_across_key_blocks(num_threads, case):
    """float32 calls without a mask array or sinks (the fused kernel where built): every key
    block boundary, D and Dv not multiples of 16, grouped heads, windows, offsets, scores
    far from 0 (the running maximum moves), against float64 NumPy on one and two threads."""
    o = dict(FUSED[case])
    rng = np.random.default_rng(len(case))
    qs, ks, dv, scale = o["qs"], o["ks"], o["dv"], o.get("scale", 1.0)
    q, qr = sample(rng, qs, mx.float32, scale)
    k, kr = sample(rng, ks, mx.float32)
    v, vr = sample(rng, ks[:3] + (dv,), mx.float32)
    want = reference(qr, kr, vr, 0.4, o["mask"], None, o.get("window"))
    for n in (1, 2):
        num_threads(n)
        out = sdpa(q, k, v, scale=0.4, mask=o["mask"], window=o.get("window"))
        assert_allclose(out, want, dtype=mx.float32, rtol=1e-5 * scale, atol=1e-5 * scale)


def test_the_fused_rows_of_an_item_do_not_change_any_bit(monkeypatch):
    """Each row's sums run over the key blocks in order whatever rows share its item: items
    of 24 and of 128 stacked rows (both above `UNPACKED_ROWS`: packed keys), and strided and
    float16 inputs (copied once a call), give the same bits."""
    rng = np.random.default_rng(31)
    q, k, v = (rng.standard_normal((2, 4, 100, 24)).astype(np.float32) for _ in range(3))
    args = dict(scale=0.3, mask="causal", window=40)
    want = np.asarray(sdpa(mx.array(q), mx.array(k), mx.array(v), **args))
    monkeypatch.setattr(fast_attention, "FUSED_ROWS", 24)
    got = sdpa(mx.array(q), mx.array(k), mx.array(v), **args)
    assert np.array_equal(np.asarray(got), want)
    strided = [mx.swapaxes(mx.array(np.swapaxes(a, 1, 2).copy()), 1, 2) for a in (q, k, v)]
    assert np.array_equal(np.asarray(sdpa(*strided, **args)), want)
    half = [mx.array(a.astype(np.float16)) for a in (q, k, v)]
    ref = reference(*(np.asarray(a).astype(np.float64) for a in half), 0.3, "causal", None, 40)
    assert_allclose(sdpa(*half, **args), ref, dtype=mx.float16, rtol=2e-3, atol=2e-3)


@pytest.mark.skipif(not has_avx512(), reason="the fused kernel needs AVX-512")
@pytest.mark.parametrize("threads", [1, 2])
def test_short_sequences_batch_their_items_in_one_call(threads, num_threads, monkeypatch):
    """Where every key head is one item (a short sequence), runs of items go to the fused
    kernel in one call each (`nuvec_attention_items_f32`), each packing its head's keys or,
    for a few rows, reading them unpacked: the bits of one call an item, float64's values."""
    num_threads(threads)
    rng = np.random.default_rng(43)
    runs = []
    monkeypatch.setattr(fast_attention.Tiles, "fused_run",
                        lambda self, unit, run=fast_attention.Tiles.fused_run:
                        runs.append(len(unit)) or run(self, unit))
    for qs, ks in (((8, 8, 60, 24), (8, 4, 60, 24)), ((16, 4, 4, 32), (16, 4, 300, 32))):
        (q, k, v, _, _), (qr, kr, vr, _, _) = inputs(rng, mx.float32, qs, ks)
        runs.clear()
        got = np.asarray(sdpa(q, k, v, scale=0.3, mask="causal"))
        assert sum(runs) == qs[0] * ks[1] and max(runs) > 1
        with monkeypatch.context() as one_each:
            one_each.setattr(fast_attention.Tiles, "fused_units",
                             lambda self: [(i,) for i in range(len(self.items))])
            assert np.array_equal(np.asarray(sdpa(q, k, v, scale=0.3, mask="causal")), got)
        np.testing.assert_allclose(got, reference(qr, kr, vr, 0.3, "causal"), rtol=1e-5,
                                   atol=1e-5)


def test_inputs_read_where_they_are():
    """Queries reversed along their rows (a negative stride), keys broadcast over the batch (a
    zero stride) and values as a transposed `[B, T, H, D]` view are read in place: the bits of
    contiguous copies, and float64's values."""
    rng = np.random.default_rng(41)
    q = rng.standard_normal((2, 4, 90, 16)).astype(np.float32)
    k = rng.standard_normal((1, 2, 90, 16)).astype(np.float32)
    v = rng.standard_normal((2, 90, 2, 16)).astype(np.float32)
    views = (mx.array(q)[:, :, ::-1], mx.broadcast_to(mx.array(k), (2, 2, 90, 16)),
             mx.swapaxes(mx.array(v), 1, 2))
    copies = [mx.contiguous(a) for a in views]
    args = dict(scale=0.3, mask="causal")
    got = np.asarray(sdpa(*views, **args))
    assert np.array_equal(got, np.asarray(sdpa(*copies, **args)))
    want = reference(q[:, :, ::-1].astype(np.float64), np.repeat(k, 2, 0).astype(np.float64),
                     np.swapaxes(v, 1, 2).astype(np.float64), 0.3, "causal")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _with_specials(rng, shape, dtype, hidden_key: int):
    """q, k and v with a NaN, +inf and -inf each (in rows and keys from 8 on: a row whose few
    visible scores are all -inf is a corner where the fallback graph, whose masked scores
    are the lowest float, averages the keys it does not see, and the formula gives NaN), one
    NaN in a key and a value only the last query rows see (`hidden_key`), and their float64
    values."""
    arrays = [rng.standard_normal(shape) for _ in range(3)]
    for a in arrays:
        for value in (np.nan, np.inf, -np.inf):
            where = [int(rng.integers(0, n)) for n in shape]
            where[2] = int(rng.integers(8, shape[2]))
            a[tuple(where)] = value
    arrays[1][0, 0, hidden_key, 1] = arrays[2][0, 1, hidden_key, 2] = np.nan
    out = [mx.array(a, dtype) for a in arrays]
    return out, [np.asarray(a).astype(np.float64) for a in out]


def _same_specials(got, want):
    """NaN where `want` has NaN, the same infinities, the rest close."""
    got = np.asarray(got).astype(np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isposinf(got), np.isposinf(want))
    assert np.array_equal(np.isneginf(got), np.isneginf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64], ids=str)
@pytest.mark.parametrize("seed", range(6))
def test_nan_and_infinities_spread_as_the_formula(seed, dtype, path):
    """NaN and infinities in q, k and v give NaN and infinities where the float64 formula
    has them, on each path: a NaN in a key a row does not see (a cache slot past the causal
    mask) stays out of that row's scores, as the formula's `where` keeps it."""
    rng = np.random.default_rng(seed)
    (q, k, v), (qr, kr, vr) = _with_specials(rng, (1, 2, 80, 8), dtype, hidden_key=70)
    with np.errstate(all="ignore"):
        want = reference(qr, kr, vr, 0.4, "causal")
    _same_specials(sdpa(q, k, v, scale=0.4, mask="causal"), want)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64], ids=str)
@pytest.mark.parametrize("trial", range(12))
def test_gradients_spread_nan_and_infinities_as_the_formula(trial, dtype, path):
    """Two NaN or infinite entries in one of q, k and v: the gradients' NaN and infinities
    are the float64 formula's, whose scores' cotangent is 0 where masked (a NaN `dP - D`
    times a masked probability's 0 would be NaN), on each path."""
    rng = np.random.default_rng(100 + trial)
    shape, scale = (1, 2, 48, 8), float(np.float32(0.4))
    arrays = [rng.standard_normal(shape) for _ in range(4)]
    for _ in range(2):
        where = tuple(int(rng.integers(0, n)) for n in shape)
        arrays[trial % 3][where] = (np.nan, np.inf, -np.inf)[int(rng.integers(0, 3))]
    q, k, v = (mx.array(a, dtype) for a in arrays[:3])
    w = arrays[3]
    grads = mx.grad(lambda q, k, v: mx.sum(sdpa(q, k, v, scale=0.4, mask="causal")
                                           * mx.array(w, dtype)), argnums=(0, 1, 2))(q, k, v)
    assert nodes(grads[0], AttentionRowsVjp) == 1
    with np.errstate(all="ignore"):
        want = _grads_reference(*(np.asarray(a).astype(np.float64) for a in (q, k, v)), w,
                                scale, True)
    for got, ref in zip(grads, want):
        _same_specials(got, ref)
