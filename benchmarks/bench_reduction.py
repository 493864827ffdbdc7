"""Reduction and matmul benchmarks: softmax over [32, 512, 512], sum over each axis of
[4096, 4096], a 1024^3 float32 matmul, each against the same computation written with NumPy.

Run: python benchmarks/bench_reduction.py [--repeats N]
Times are medians of N runs (recording and evaluation included), nuvec (with its default thread
count and with `mx.set_num_threads(1)`), NumPy and PyTorch eager (when importable) interleaved
in the same run; the ratios are nuvec / NumPy (the target is <= 1.15) and nuvec / PyTorch
(lower is better).
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_engine import one_thread  # benchmarks/ is the script's directory
from bench_fast import medians

import nuvec as mx

try:
    import torch
except ImportError:  # PyTorch is an optional peer
    torch = None


def measure(name: str, ours, peer, torch_fn, repeats: int) -> None:
    """Prints the medians of nuvec (default threads, one thread), NumPy and PyTorch."""
    t, one, numpy_time, torch_time = medians(
        [ours, one_thread(ours), peer, torch_fn if torch else None], repeats)
    line = (f"{name:30s} nuvec {t * 1e3:7.2f} ms   1 thread {one * 1e3:7.2f} ms   "
            f"numpy {numpy_time * 1e3:7.2f} ms (ratio {t / numpy_time:5.2f})")
    if torch_time is not None:
        line += f"   torch {torch_time * 1e3:7.2f} ms (ratio {t / torch_time:5.2f})"
    print(line, flush=True)


def bench_softmax(rng: np.random.Generator, repeats: int) -> None:
    x_np = rng.standard_normal((32, 512, 512), dtype=np.float32)
    x = mx.array(x_np)

    def numpy_softmax():
        e = np.exp(x_np - x_np.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    xt = torch.from_numpy(x_np) if torch else None
    measure("softmax [32,512,512] axis -1", lambda: mx.eval(mx.softmax(x, axis=-1)),
            numpy_softmax, lambda: torch.softmax(xt, -1), repeats)


def bench_sum(rng: np.random.Generator, repeats: int) -> None:
    s_np = rng.standard_normal((4096, 4096), dtype=np.float32)
    s = mx.array(s_np)
    st = torch.from_numpy(s_np) if torch else None
    for axis in (0, 1):
        measure(f"sum [4096,4096] axis {axis}", lambda: mx.eval(mx.sum(s, axis=axis)),
                lambda: np.sum(s_np, axis=axis), lambda: torch.sum(st, axis),
                4 * repeats)  # short runs: more repeats against the noise


def bench_matmul(rng: np.random.Generator, repeats: int) -> None:
    a_np = rng.standard_normal((1024, 1024), dtype=np.float32)
    b_np = rng.standard_normal((1024, 1024), dtype=np.float32)
    a, b = mx.array(a_np), mx.array(b_np)
    at, bt = (torch.from_numpy(a_np), torch.from_numpy(b_np)) if torch else (None, None)
    measure("matmul 1024^3 float32", lambda: mx.eval(a @ b), lambda: a_np @ b_np,
            lambda: at @ bt, repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    repeats = parser.parse_args().repeats
    rng = np.random.default_rng(0)
    # one function per section, so that each section's arrays are freed before the next
    for section in (bench_softmax, bench_sum, bench_matmul):
        section(rng, repeats)


if __name__ == "__main__":
    main()
