"""Fused-op benchmarks on the CPU: nuvec.fast against the same formula written directly in
NumPy, and against PyTorch eager when it is importable (never a dependency of nuvec).

Run: python benchmarks/bench_fast.py [--repeats N]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    repeats = parser.parse_args().repeats
    rng = np.random.default_rng(0)
    # one function per section, so that each section's arrays are freed before the next
    for section in (bench_norms, bench_softmax, bench_rope, bench_cross_entropy):
        section(rng, repeats)

if __name__ == "__main__":
    main()
