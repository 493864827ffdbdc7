"""Fused-op benchmarks on the CPU: nuvec.fast against the same formula written directly in
NumPy, and against PyTorch eager when it is importable (never a dependency of nuvec).

Run: python benchmarks/bench_fast.py [--repeats N] [--only SECTION ...] (`transformer`: the
shapes of `examples/transformer_lm.py`'s training step)
Times are medians of N runs (recording and evaluation included), all interleaved in one run;
ratios are nuvec / NumPy and nuvec / PyTorch (lower is better; the target is <= 1 for NumPy).
nuvec runs with its default thread count (`mx.get_num_threads()`) and, for the "1 thread"
column, with `mx.set_num_threads(1)`; "x" is that time over the default's. Inputs are float32.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from typing import Callable

import numpy as np

import nuvec as mx
from bench_engine import one_thread  # benchmarks/ is the script's directory

try:
    import torch
except ImportError:  # PyTorch is an optional peer
    torch = None

EPS = 1e-5


def medians(fns: list[Callable[[], object] | None], repeats: int,
            warmup: int = 1) -> list[float | None]:
    """Median seconds of each function, run in turn so machine noise hits all alike, after
    `warmup` untimed runs of each."""
    live = [f for f in fns if f is not None]
    for _ in range(warmup):
        for f in live:
            f()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for i, f in enumerate(fns):
            if f is None:
                continue
            start = time.perf_counter()
            f()
            times[i].append(time.perf_counter() - start)
    return [statistics.median(t) if t else None for t in times]


def report(name: str, ours: float, one: float, np_time: float, torch_time: float | None) -> None:
    line = (f"{name:26s} nuvec {ours * 1e3:7.2f} ms   1 thread {one * 1e3:7.2f} ms "
            f"(x{one / ours:4.2f})   numpy {np_time * 1e3:7.2f} ms (ratio {ours / np_time:5.2f})")
    if torch_time is not None:
        line += f"   torch {torch_time * 1e3:7.2f} ms (ratio {ours / torch_time:5.2f})"
    print(line, flush=True)


def run(name: str, ours, numpy_fn, torch_fn, repeats: int) -> None:
    fns = [ours, one_thread(ours), numpy_fn, torch_fn if torch else None]
    report(name, *medians(fns, repeats))


def rope_numpy(x: np.ndarray, dims: int, base: float, offset: int) -> np.ndarray:
    half = dims // 2
    t = x.shape[-2]
    theta = (np.arange(t, dtype=np.float32) + offset)[:, None] * \
        (base ** (-np.arange(half, dtype=np.float32) / half))
    c, s = np.cos(theta), np.sin(theta)
    x1, x2 = x[..., :half], x[..., half:dims]
    return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c, x[..., dims:]], axis=-1)


def to_torch(a: np.ndarray):
    """`a` as a PyTorch tensor sharing its memory, or None without PyTorch."""
    return torch.from_numpy(a) if torch else None


def bench_norms(rng: np.random.Generator, repeats: int) -> None:
    x_np = rng.standard_normal((8, 512, 4096), dtype=np.float32)
    w_np = rng.standard_normal(4096, dtype=np.float32)
    b_np = rng.standard_normal(4096, dtype=np.float32)
    x, w, b = mx.array(x_np), mx.array(w_np), mx.array(b_np)
    xt, wt, bt = to_torch(x_np), to_torch(w_np), to_torch(b_np)

    def np_rms():
        return x_np / np.sqrt(np.mean(x_np * x_np, axis=-1, keepdims=True) + EPS) * w_np

    def np_ln():
        xc = x_np - x_np.mean(axis=-1, keepdims=True)
        return xc / np.sqrt(np.mean(xc * xc, axis=-1, keepdims=True) + EPS) * w_np + b_np

    run("rms_norm [8,512,4096]", lambda: mx.eval(mx.fast.rms_norm(x, w, EPS)), np_rms,
        lambda: torch.nn.functional.rms_norm(xt, (4096,), wt, EPS), repeats)
    run("layer_norm [8,512,4096]", lambda: mx.eval(mx.fast.layer_norm(x, w, b, EPS)), np_ln,
        lambda: torch.nn.functional.layer_norm(xt, (4096,), wt, bt, EPS), repeats)


def bench_softmax(rng: np.random.Generator, repeats: int) -> None:
    s_np = rng.standard_normal((32, 512, 512), dtype=np.float32)
    s = mx.array(s_np)
    st = to_torch(s_np)

    def np_softmax():
        e = np.exp(s_np - s_np.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def np_lse():
        m = s_np.max(axis=-1, keepdims=True)
        return np.log(np.exp(s_np - m).sum(axis=-1, keepdims=True)) + m

    run("softmax [32,512,512]", lambda: mx.eval(mx.fast.softmax(s)), np_softmax,
        lambda: torch.softmax(st, -1), repeats)
    run("logsumexp [32,512,512]", lambda: mx.eval(mx.fast.logsumexp(s)), np_lse,
        lambda: torch.logsumexp(st, -1, keepdim=True), repeats)


def bench_rope(rng: np.random.Generator, repeats: int) -> None:
    r_np = rng.standard_normal((1, 32, 512, 128), dtype=np.float32)
    r = mx.array(r_np)
    rt = to_torch(r_np)

    def torch_rope():
        half = 64
        theta = (torch.arange(512, dtype=torch.float32) + 7)[:, None] * \
            (10000.0 ** (-torch.arange(half, dtype=torch.float32) / half))
        c, sn = torch.cos(theta), torch.sin(theta)
        x1, x2 = rt[..., :half], rt[..., half:]
        return torch.cat([x1 * c - x2 * sn, x1 * sn + x2 * c], dim=-1)

    run("rope [1,32,512,128]",
        lambda: mx.eval(mx.fast.rope(r, 128, traditional=False, base=10000.0, scale=1.0,
                                     offset=7)),
        lambda: rope_numpy(r_np, 128, 10000.0, 7), torch_rope, 5 * repeats)  # a short run


def bench_cross_entropy(rng: np.random.Generator, repeats: int) -> None:
    c_np = rng.standard_normal((2048, 8192), dtype=np.float32)
    t_np = rng.integers(0, 8192, 2048).astype(np.int32)
    c, t = mx.array(c_np), mx.array(t_np)
    ct, tgt = to_torch(c_np), to_torch(t_np.astype(np.int64))

    def np_ce():
        m = c_np.max(axis=-1, keepdims=True)
        lse = np.log(np.exp(c_np - m).sum(axis=-1)) + m[:, 0]
        return lse - c_np[np.arange(2048), t_np]

    run("cross_entropy [2048,8192]", lambda: mx.eval(mx.fast.cross_entropy(c, t)), np_ce,
        lambda: torch.nn.functional.cross_entropy(ct, tgt, reduction="none"), repeats)
    assert math.isfinite(float(np.asarray(mx.fast.cross_entropy(c, t)).sum()))


def bench_transformer_shapes(rng: np.random.Generator, repeats: int) -> None:
    """The shapes of `examples/transformer_lm.py`'s training step (16 x 128 tokens, 4 heads of
    32, a SwiGLU of 352): its gate's sigmoid, a causal softmax's masked scores, rope of the
    view an attention layer makes, and the backward passes of rms_norm and attention."""
    g_np = rng.standard_normal((16, 128, 352), dtype=np.float32) * 3
    g, gt = mx.array(g_np), to_torch(g_np)
    run("sigmoid [16,128,352]", lambda: mx.eval(mx.sigmoid(g)), lambda: 1 / (1 + np.exp(-g_np)),
        lambda: torch.sigmoid(gt), repeats)

    keep = np.tril(np.ones((128, 128), bool))
    m_np = np.where(keep, rng.standard_normal((16, 4, 128, 128), dtype=np.float32), -np.inf)
    m_np = m_np.astype(np.float32)
    m, mt = mx.array(m_np), to_torch(m_np)

    def np_masked_softmax():
        e = np.exp(m_np - m_np.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    run("masked softmax [16,4,128,128]", lambda: mx.eval(mx.softmax(m, axis=-1)),
        np_masked_softmax, lambda: torch.softmax(mt, -1), repeats)

    stored = rng.standard_normal((16, 128, 4, 32), dtype=np.float32)
    view_np = stored.transpose(0, 2, 1, 3)
    view = mx.array(stored).transpose(0, 2, 1, 3)
    mx.eval(view)

    def torch_rope():
        theta = torch.arange(128, dtype=torch.float32)[:, None] * \
            (10000.0 ** (-torch.arange(16, dtype=torch.float32) / 16))
        c, sn = torch.cos(theta), torch.sin(theta)
        vt = to_torch(stored).permute(0, 2, 1, 3)
        x1, x2 = vt[..., :16], vt[..., 16:]
        return torch.cat([x1 * c - x2 * sn, x1 * sn + x2 * c], dim=-1)

    run("rope of a view [16,4,128,32]",
        lambda: mx.eval(mx.fast.rope(view, 32, traditional=False, base=10000.0, scale=1.0,
                                     offset=0)),
        lambda: rope_numpy(view_np, 32, 10000.0, 0), torch_rope, repeats)

    h_np = rng.standard_normal((16, 128, 128), dtype=np.float32)
    w_np = rng.standard_normal(128, dtype=np.float32)
    d_np = rng.standard_normal((16, 128, 128), dtype=np.float32)
    h, w, d = mx.array(h_np), mx.array(w_np), mx.array(d_np)
    norm_grad = mx.grad(lambda h, w: mx.sum(mx.fast.rms_norm(h, w, EPS) * d), argnums=(0, 1))

    def np_norm_grad():
        n = 1 / np.sqrt((h_np * h_np).mean(-1, keepdims=True) + EPS)
        wg = d_np * w_np
        dx = wg * n - h_np * ((wg * h_np).mean(-1, keepdims=True) * n ** 3)
        return dx, (d_np * h_np * n).reshape(-1, 128).sum(0)

    def torch_norm_grad():
        ht, wt = (to_torch(a).clone().requires_grad_(True) for a in (h_np, w_np))
        out = torch.nn.functional.rms_norm(ht, (128,), wt, EPS)
        return torch.autograd.grad((out * to_torch(d_np)).sum(), [ht, wt])

    run("rms_norm grad [16,128,128]", lambda: mx.eval(norm_grad(h, w)), np_norm_grad,
        torch_norm_grad, repeats)

    q_np, k_np, v_np, o_np = (rng.standard_normal((16, 4, 128, 32), dtype=np.float32)
                              for _ in range(4))
    q, k, v, o = (mx.array(a) for a in (q_np, k_np, v_np, o_np))
    scale = 32 ** -0.5
    attention_grad = mx.grad(lambda q, k, v: mx.sum(mx.fast.scaled_dot_product_attention(
        q, k, v, scale=scale, mask="causal") * o), argnums=(0, 1, 2))

    def np_attention(backward: bool):
        s = np.where(keep, scale * q_np @ k_np.swapaxes(-1, -2), -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        if not backward:
            return p @ v_np
        ds = p * (o_np @ v_np.swapaxes(-1, -2) - (o_np * (p @ v_np)).sum(-1, keepdims=True))
        return scale * ds @ k_np, scale * ds.swapaxes(-1, -2) @ q_np, p.swapaxes(-1, -2) @ o_np

    def torch_attention(backward: bool):
        qt, kt, vt = (to_torch(a).clone().requires_grad_(backward) for a in (q_np, k_np, v_np))
        out = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=True,
                                                               scale=scale)
        return torch.autograd.grad((out * to_torch(o_np)).sum(), [qt, kt, vt]) if backward \
            else out

    run("causal attention [16,4,128,32]", lambda: mx.eval(
        mx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask="causal")),
        lambda: np_attention(False), lambda: torch_attention(False), repeats)
    run("attention grad [16,4,128,32]", lambda: mx.eval(attention_grad(q, k, v)),
        lambda: np_attention(True), lambda: torch_attention(True), repeats)


SECTIONS = {"norms": bench_norms, "softmax": bench_softmax, "rope": bench_rope,
            "cross_entropy": bench_cross_entropy, "transformer": bench_transformer_shapes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--only", nargs="+", choices=list(SECTIONS), default=list(SECTIONS))
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    # one function per section, so that each section's arrays are freed before the next
    for name in args.only:
        SECTIONS[name](rng, args.repeats)


if __name__ == "__main__":
    main()
