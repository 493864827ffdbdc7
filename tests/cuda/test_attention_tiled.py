"""The tiled attention kernel (`attention_tiled.cu`) and its fused backward in the emulator:
against the fallback graphs (masked tails, `Lq < Lk` under the causal mask, GQA 1 and 4,
windows, sinks, boolean and additive masks, head sizes 64/80/128, each dtype), against a
float64 NumPy reference, the planner's choice mapped to the kernels launched, `vjp` on a
stand-in GPU, and (marked `gpu`) the same comparison on a device. The float32 cases run the
FMA kernels, the half types the mma ones (their portable branch)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_checks import TOL, check, emulate, random
from test_wiring import emulated_gpu  # noqa: F401  (the stand-in GPU fixture)

import nuvec as mx
from nuvec.backends.cuda.launchers import attention as launcher
from nuvec.backends.cuda.launchers import attention_tiled as tiled
from nuvec.backends.cuda.launchers import takes
from nuvec.backends.cuda.runner import EmulatorRunner
from nuvec.fast.attention import Attention, attention_key
from nuvec.fast.attention_grad import AttentionVjp
from nuvec.fast.base import run_on_cpu
from nuvec.fast.planner import AttentionOptions, Target, plan
from nuvec.graph import dtypes as dt

SCALE = 0.125
# (hq, hkv, lq, lk, d, causal, window, mask, sinks, half type): every case runs in float32
# and in the half type named (the mma kernels in the emulator cost a few seconds a case).
CASES = [
    (2, 2, 20, 20, 64, False, None, None, False, "float16"),
    (4, 1, 19, 37, 64, True, None, None, True, "bfloat16"),  # GQA 4, Lq < Lk, sinks
    (2, 1, 40, 70, 64, True, 9, None, False, "float16"),  # window: skipped key tiles
    (2, 2, 17, 23, 80, False, None, "bool", False, "bfloat16"),  # a row that sees no key
    (2, 1, 18, 30, 128, False, None, "add", True, "float16"),
]
RUNS = [(dtype, c) for c in CASES for dtype in ("float32", c[-1])]
# The mma backward in the emulator is the slowest: its half runs cover GQA 4 with sinks, the
# window and the boolean mask.
BACK_RUNS = [r for r in RUNS if r[0] == "float32" or r[1] in CASES[1:4]]


def ident(run):
    dtype, c = run
    return f"{dtype}-" + "-".join(str(x) for x in c[:-1])


def inputs_of(dtype, case, b=1, seed=0):
    hq, hkv, lq, lk, d, causal, window, mask, sinks, _ = case
    out = [random((b, hq, lq, d), dtype, seed), random((b, hkv, lk, d), dtype, seed + 1),
           random((b, hkv, lk, d), dtype, seed + 2)]
    rng = np.random.default_rng(seed + 3)
    if mask == "bool":
        m = rng.random((b, hq, lq, lk)) < 0.6
        m[0, 0, 1] = False
        out.append(m)
    elif mask == "add":
        # broadcast over the heads, as the op broadcasts a [Lq, Lk] mask
        m = (rng.standard_normal((lq, lk)) * 2).astype(out[0].dtype)
        m[:, ::7] = -np.inf
        out.append(np.broadcast_to(m, (b, hq, lq, lk)))
    if sinks:
        out.append(random((hq,), dtype, seed + 4))
    return out


def forward_op(case, lse=True):
    causal, window, mask, sinks = case[5:9]
    return Attention(SCALE, causal, mask is not None, sinks, 0, window=window, lse=lse)


def backward_inputs(dtype, case, seed=0):
    """`(q, k, v[, mask], out, lse, dout)` with out and lse from the fallback graph."""
    inputs = inputs_of(dtype, case, seed=seed)
    out, lse = run_on_cpu(inputs, forward_op(case).fallback)
    n = 4 if case[7] else 3
    return [*inputs[:n], out, lse, random(out.shape, dtype, seed + 9)]


@pytest.mark.parametrize("run", RUNS, ids=ident)
def test_forward_matches_fallback(run):
    dtype, case = run
    check(forward_op(case), *inputs_of(dtype, case, b=2 if dtype == "float32" else 1))


@pytest.mark.parametrize("run", BACK_RUNS, ids=ident)
def test_backward_matches_fallback(run):
    dtype, case = run
    causal, window, mask = case[5:8]
    check(AttentionVjp(SCALE, causal, mask is not None, window), *backward_inputs(dtype, case))


def reference(q, k, v, mask, sinks, causal, window, dout):
    """float64 NumPy: `(out, lse, dq, dk, dv)`, the gradients of `sum(out · dout)` by the
    softmax's Jacobian (not the FlashAttention-2 form the kernels use). A boolean-masked score
    passes no gradient; a row that sees no key averages every key."""
    rep = q.shape[1] // k.shape[1]
    kr, vr = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q * SCALE, kr)
    lq, lk = s.shape[-2:]
    keep = np.ones(s.shape, bool)
    if causal:
        i, j = np.arange(lq)[:, None] + lk - lq, np.arange(lk)[None]
        keep = np.broadcast_to((j <= i) & ((j > i - window) if window else True), s.shape)
    elif mask is not None:
        keep = np.broadcast_to(mask, s.shape)
    blind = ~keep.any(-1, keepdims=True)
    s = np.where(keep, s, -np.inf)
    s = np.where(blind, 0.0, s)  # every key alike
    full = s if sinks is None else np.concatenate(
        [s, np.broadcast_to(sinks[None, :, None, None], (*s.shape[:3], 1))], -1)
    lse = np.logaddexp.reduce(full, axis=-1)
    p = np.exp(s - lse[..., None])
    out = np.einsum("bhij,bhjd->bhid", p, vr)
    dp = np.einsum("bhid,bhjd->bhij", dout, vr)
    ds = np.where(keep, p * (dp - np.sum(p * dp, -1, keepdims=True)), 0.0)
    group = (k.shape[0], k.shape[1], rep, lk, q.shape[3])
    dq = SCALE * np.einsum("bhij,bhjd->bhid", ds, kr)
    dk = SCALE * np.einsum("bhij,bhid->bhjd", ds, q).reshape(group).sum(2)
    dv = np.einsum("bhij,bhid->bhjd", p, dout).reshape(group).sum(2)
    return out, lse, dq, dk, dv


@pytest.mark.parametrize("case", [(4, 2, 21, 33, 64, True, 6, None, True, "float32"),
                                  (2, 2, 17, 23, 80, False, None, "bool", False, "float32")],
                         ids=["causal_window_sinks", "bool_mask"])
def test_float32_against_float64_reference(case):
    x = inputs_of("float32", case, seed=4)
    x64 = [a.astype(np.float64) for a in x]
    mask = x[3] if case[7] else None
    sinks = x64[-1] if case[8] else None
    dout = np.random.default_rng(5).standard_normal(x[0].shape)
    want = reference(*x64[:3], mask, sinks, case[5], case[6], dout)
    got, lse = emulate(forward_op(case), *x)
    lse_want = want[1] if mask is None else np.where(mask.any(-1), want[1], lse)
    np.testing.assert_allclose(got, want[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lse, lse_want, rtol=1e-5, atol=1e-5)  # (blind rows: lowest)
    n = 4 if case[7] else 3
    grads = emulate(AttentionVjp(SCALE, case[5], case[7] is not None, case[6]), *x[:n], got,
                    lse, dout.astype(np.float32))
    for g, w in zip(grads, want[2:]):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


class Recording(EmulatorRunner):
    def __init__(self):
        super().__init__()
        self.launched = []

    def launch(self, kernel, expression, grid, block, shared_mem, args):
        self.launched.append(expression.split("<")[0])
        super().launch(kernel, expression, grid, block, shared_mem, args)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_planner_choice_is_the_kernel_launched(dtype):
    shapes = ((1, 2, 24, 64), (1, 1, 40, 64), (1, 1, 40, 64))
    key = attention_key(*shapes, getattr(dt, dtype), AttentionOptions(mask="causal", window=7),
                        Target("gpu"))
    assert plan(key).route.kind == "tiled"
    op = Attention(SCALE, True, False, False, 0, window=7)
    case = (2, 1, 24, 40, 64, True, 7, None, False, dtype)
    inputs = inputs_of(dtype, case)
    assert takes(op, inputs)
    runner = Recording()
    got = launcher.attention(runner, op, *inputs)
    assert tuple(runner.launched) == tiled.kernel_names(dtype)
    (want,) = run_on_cpu(inputs, op.fallback)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                               atol=atol)


def test_vjp_on_a_gpu_stream_runs_the_fused_backward(emulated_gpu):  # noqa: F811  (the fixture)
    case = (2, 1, 12, 20, 64, True, None, None, True, "float32")
    q, k, v, sinks = inputs_of("float32", case)
    dout = random(q.shape, "float32", 7)

    def f(q, k, v, s):
        return mx.fast.scaled_dot_product_attention(q, k, v, scale=SCALE, mask="causal",
                                                    sinks=s)

    with mx.stream(mx.gpu):
        _, grads = mx.vjp(f, [mx.array(a) for a in (q, k, v, sinks)], [mx.array(dout)])
        got = [np.asarray(g) for g in grads]
    launched = [e.split("<")[0] for e in emulated_gpu.launched]
    assert launched[:1] == ["flash_attend"]
    assert launched[1:] == list(tiled.kernel_names("float32", backward=True))
    with mx.stream(mx.cpu):
        _, want = mx.vjp(f, [mx.array(a) for a in (q, k, v, sinks)], [mx.array(dout)])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-4, atol=1e-5)


def test_mask_view_reads_broadcast_dimensions_once():
    m = np.broadcast_to(np.arange(12, dtype=np.float32).reshape(3, 4), (2, 5, 3, 4))
    small, kind, strides = tiled.mask_view(EmulatorRunner(), Attention(1.0, mask=True),
                                           [None, None, None, m])
    assert small.shape == (1, 1, 3, 4) and kind == 2
    assert [int(s) for s in strides] == [0, 0, 4, 1]


@pytest.mark.gpu
@pytest.mark.parametrize("run", RUNS[:6], ids=ident)
def test_gpu_forward_and_backward_match_fallback(run):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    if not cupy.cuda.is_available():
        pytest.skip("no CUDA device")
    from nuvec.backends.cuda.runner import CupyRunner

    dtype, case = run
    runner = CupyRunner()

    def device(a):
        return cupy.asarray(a.view(np.uint16) if a.dtype.name == "bfloat16" else a)

    def host(a, like):
        a = a.get()
        return a.view(like.dtype) if like.dtype.name == "bfloat16" else a

    rtol, atol = TOL[dtype]
    back = AttentionVjp(SCALE, case[5], case[7] is not None, case[6])
    for op, run_kernel, inputs in ((forward_op(case), launcher.attention, inputs_of(dtype, case)),
                                   (back, tiled.attend_back, backward_inputs(dtype, case))):
        want = run_on_cpu(inputs, op.fallback)
        got = run_kernel(runner, op, *map(device, inputs))
        for g, w in zip(got, want):
            w64 = w.astype(np.float64)
            np.testing.assert_allclose(host(g, w).astype(np.float64), w64, rtol=rtol,
                                       atol=atol * max(float(np.abs(w64).max()), 1.0))
