"""The vector attention kernels in the emulator against the fallback graph, the planner's
choice mapped to the kernels launched, and (marked `gpu`) the same cases on a device."""

import numpy as np
import pytest
from kernel_checks import DTYPES, TOL, check, random

from nuvec.backends.cuda.launchers import attention as launcher
from nuvec.backends.cuda.launchers import takes
from nuvec.backends.cuda.runner import EmulatorRunner
from nuvec.fast.attention import Attention, attention_key
from nuvec.fast.base import run_on_cpu
from nuvec.fast.paged import PagedAttention
from nuvec.fast.planner import AttentionOptions, Target, plan
from nuvec.graph import dtypes as dt

DT = list(DTYPES)
NP_DT = {"float32": dt.float32, "float16": dt.float16, "bfloat16": dt.bfloat16}


def _inputs(dtype, b, hq, hkv, lq, lk, d, mask=None, sinks=False, seed=0):
    q = random((b, hq, lq, d), dtype, seed)
    k = random((b, hkv, lk, d), dtype, seed + 1)
    v = random((b, hkv, lk, d), dtype, seed + 2)
    out = [q, k, v]
    rng = np.random.default_rng(seed + 3)
    if mask == "bool":
        m = rng.random((b, hq, lq, lk)) < 0.7
        m[0, 0, 0] = False  # a row that sees no key averages every key
        out.append(m)
    elif mask == "add":
        m = (rng.standard_normal((b, hq, lq, lk)) * 2).astype(DTYPES[dtype])
        m[..., ::5] = -np.inf
        out.append(m)
    if sinks:
        out.append(random((hq,), dtype, seed + 4))
    return out


def _op(causal=False, mask=None, sinks=False, passes=1, blocks=1, gqa_kernel=False, tk1=False,
        window=None):
    return Attention(0.125, causal, mask is not None, sinks, passes, blocks, gqa_kernel, tk1,
                     window)


# (hq, hkv, lq, lk, d, causal, mask, sinks)
ONE_PASS = [
    (1, 1, 1, 5, 64, False, None, False),
    (4, 1, 3, 37, 64, True, None, False),
    (8, 1, 8, 20, 64, True, None, True),
    (4, 4, 2, 19, 96, False, "bool", False),
    (4, 1, 5, 23, 64, False, "add", True),
    (8, 8, 1, 9, 512, False, None, True),
    (2, 2, 8, 8, 128, True, None, False),
]


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("case", ONE_PASS, ids=str)
def test_one_pass(dtype, case):
    hq, hkv, lq, lk, d, causal, mask, sinks = case
    inputs = _inputs(dtype, 1, hq, hkv, lq, lk, d, mask, sinks)
    check(_op(causal, mask, sinks), *inputs)


# (hq, hkv, lq, lk, d, causal, mask, sinks, blocks, tk1); blocks not dividing the keys leave
# ragged and empty partitions.
TWO_PASS = [
    (4, 1, 1, 45, 64, False, None, False, 4, False),
    (8, 1, 3, 50, 64, True, None, True, 7, False),
    (4, 4, 2, 33, 128, False, "bool", False, 5, False),
    (4, 1, 4, 40, 64, False, "add", True, 3, False),
    (4, 1, 2, 70, 64, True, None, True, 3, True),
    (1, 1, 1, 9, 128, False, "bool", False, 16, True),
]


# The one-key-per-lane variant is 16-bit only (the planner's `tk1_variant`).
@pytest.mark.parametrize("dtype,case", [(t, c) for c in TWO_PASS for t in DT
                                        if not (c[-1] and t == "float32")], ids=str)
def test_two_pass(dtype, case):
    hq, hkv, lq, lk, d, causal, mask, sinks, blocks, tk1 = case
    inputs = _inputs(dtype, 2, hq, hkv, lq, lk, d, mask, sinks, seed=blocks)
    check(_op(causal, mask, sinks, 2, blocks, False, tk1), *inputs)


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("gqa,d,lk,blocks", [(8, 64, 70, 3), (8, 128, 33, 2), (12, 128, 10, 4),
                                             (16, 128, 40, 1)])
def test_gqa_decode(dtype, gqa, d, lk, blocks):
    inputs = _inputs(dtype, 2, gqa * (2 if gqa == 8 else 1), 2 if gqa == 8 else 1, 1, lk, d)
    check(_op(True, passes=2, blocks=blocks, gqa_kernel=True), *inputs)


# (hq, hkv, lq, lk, d, sinks, passes, blocks, gqa_kernel, tk1, window) under the causal mask:
# windows of one key, shorter than the queries, past the keys; two-pass chunks from the first
# query's window start (ragged and empty for some rows); the grouped-query decode kernel.
WINDOWED = [
    (4, 1, 3, 37, 64, False, 1, 1, False, False, 5),
    (8, 8, 8, 20, 64, True, 1, 1, False, False, 1),
    (2, 2, 1, 9, 128, False, 1, 1, False, False, 20),
    (4, 1, 2, 70, 64, False, 2, 3, False, False, 10),
    (8, 1, 3, 50, 64, True, 2, 7, False, False, 4),
    (4, 1, 2, 70, 64, False, 2, 3, False, True, 30),
    (16, 2, 1, 70, 64, False, 2, 3, True, False, 20),
]


@pytest.mark.parametrize("dtype,case", [(t, c) for c in WINDOWED for t in DT
                                        if not (c[-2] and t == "float32")], ids=str)
def test_sliding_window(dtype, case):
    hq, hkv, lq, lk, d, sinks, passes, blocks, gqa_kernel, tk1, window = case
    inputs = _inputs(dtype, 2, hq, hkv, lq, lk, d, None, sinks, seed=window)
    op = _op(True, None, sinks, passes, blocks, gqa_kernel, tk1, window)
    assert takes(op, inputs)
    check(op, *inputs)


class Recording(EmulatorRunner):
    def __init__(self):
        super().__init__()
        self.launched = []

    def launch(self, kernel, expression, grid, block, shared_mem, args):
        self.launched.append(expression.split("<")[0] + ("[tk1]" if ", 1>" in expression
                                                          and "2pass_1" in expression else ""))
        super().launch(kernel, expression, grid, block, shared_mem, args)


# (dtype, hq, hkv, lq, lk, mask, window, kernels launched); a window shorter than the
# two-pass threshold takes one pass however long the keys.
PLANNED = [
    ("float32", 8, 1, 1, 40, None, None, ["sdpa_vector"]),
    ("float16", 4, 1, 3, 40, "causal", None, ["sdpa_vector"]),
    ("bfloat16", 8, 1, 1, 1100, None, None, ["sdpa_gqa_decode_1", "sdpa_vector_2pass_2"]),
    ("bfloat16", 4, 1, 1, 1100, None, None, ["sdpa_vector_2pass_1[tk1]", "sdpa_vector_2pass_2"]),
    ("float32", 4, 1, 1, 1100, None, None, ["sdpa_vector_2pass_1", "sdpa_vector_2pass_2"]),
    ("float16", 4, 1, 3, 40, "causal", 8, ["sdpa_vector"]),
    ("bfloat16", 8, 1, 1, 1100, "causal", 64, ["sdpa_vector"]),
    ("bfloat16", 8, 1, 1, 1100, "causal", 1050, ["sdpa_gqa_decode_1", "sdpa_vector_2pass_2"]),
    ("float32", 4, 1, 2, 1100, "causal", 1030, ["sdpa_vector_2pass_1", "sdpa_vector_2pass_2"]),
]


@pytest.mark.parametrize("case", PLANNED, ids=str)
def test_planner_choice_is_the_kernel_launched(case):
    dtype, hq, hkv, lq, lk, mask, window, want = case
    shapes = ((1, hq, lq, 64), (1, hkv, lk, 64), (1, hkv, lk, 64))
    options = AttentionOptions(mask=mask, window=window)
    key = attention_key(*shapes, NP_DT[dtype], options, Target("gpu"))
    (group,) = plan(key).route.groups
    g = group.kind
    op = Attention(0.125, mask == "causal", False, False, g.passes, g.blocks, g.gqa_kernel,
                   g.tk1, window)
    inputs = _inputs(dtype, *[s for s in (1, hq, hkv, lq, lk, 64)])
    assert takes(op, inputs)
    runner = Recording()
    got = launcher.attention(runner, op, *inputs)
    assert runner.launched == want
    assert tuple(n.split("[")[0] for n in runner.launched) == launcher.kernel_names(op)
    (ref,) = run_on_cpu(inputs, op.fallback)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=rtol,
                               atol=atol)


def test_kernels_refuse_what_they_do_not_take():
    assert takes(Attention(0.125, True), _inputs("float16", 1, 2, 2, 16, 16, 64))
    assert not takes(Attention(0.125, True), _inputs("float16", 1, 2, 2, 16, 16, 96))
    assert not takes(_op(passes=2, tk1=True), _inputs("float32", 1, 1, 1, 1, 8, 64))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("case", TWO_PASS[:4], ids=str)
def test_gpu_two_pass_and_one_pass_match_fallback(dtype, case):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    if not cupy.cuda.is_available():
        pytest.skip("no CUDA device")
    from nuvec.backends.cuda.runner import CupyRunner

    hq, hkv, lq, lk, d, causal, mask, sinks, blocks, _ = case
    inputs = _inputs(dtype, 2, hq, hkv, lq, lk, d, mask, sinks)
    runner = CupyRunner()
    dev = [cupy.asarray(a.view(np.uint16) if a.dtype.name == "bfloat16" else a)
           for a in inputs]
    (ref,) = run_on_cpu(inputs, _op(causal, mask, sinks).fallback)
    rtol, atol = TOL[dtype]
    for passes in (1, 2):
        got = launcher.attention(runner, _op(causal, mask, sinks, passes, blocks), *dev).get()
        got = got.view(ref.dtype) if dtype == "bfloat16" else got
        np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=rtol,
                                   atol=atol * max(float(np.abs(ref).max()), 1.0))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("case", [c for c in WINDOWED if not c[-2]], ids=str)
def test_gpu_sliding_window_matches_fallback(dtype, case):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    if not cupy.cuda.is_available():
        pytest.skip("no CUDA device")
    from nuvec.backends.cuda.runner import CupyRunner

    hq, hkv, lq, lk, d, sinks, passes, blocks, gqa_kernel, tk1, window = case
    inputs = _inputs(dtype, 2, hq, hkv, lq, lk, d, None, sinks, seed=window)
    op = _op(True, None, sinks, passes, blocks, gqa_kernel, tk1, window)
    dev = [cupy.asarray(a.view(np.uint16) if a.dtype.name == "bfloat16" else a)
           for a in inputs]
    (ref,) = run_on_cpu(inputs, op.fallback)
    got = launcher.attention(CupyRunner(), op, *dev).get()
    got = got.view(ref.dtype) if dtype == "bfloat16" else got
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=rtol,
                               atol=atol * max(float(np.abs(ref).max()), 1.0))


# (hq, hkv, lq, d, blocks in the cache, block size, table, lengths): ids past the cache and
# negative (clamped), lengths past the capacity, zero and shorter than the queries (rows that
# see no position average every listed one).
PAGED = [
    (4, 1, 1, 64, 5, 4, [[0, 3, 9], [2, -1, 1]], [10, 13]),
    (8, 8, 3, 128, 3, 8, [[2, 0], [1, 7]], [16, 2]),
    (8, 1, 2, 256, 4, 1, [[3, 2, 1], [0, 0, 5]], [0, 3]),
]


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("case", PAGED, ids=str)
def test_paged_attention(dtype, case):
    hq, hkv, lq, d, blocks, bs, table, lengths = case
    b = len(table)
    q = random((b, hq, lq, d), dtype)
    kc, vc = random((blocks, hkv, bs, d), dtype, 1), random((blocks, hkv, bs, d), dtype, 2)
    check(PagedAttention(d ** -0.5), q, kc, vc, np.array(table, np.int32),
          np.array(lengths, np.int32))
