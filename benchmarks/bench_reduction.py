"""Reduction and matmul benchmarks: softmax over [32, 512, 512], sum over each axis of
[4096, 4096], a 1024^3 float32 matmul, each against the same computation written with NumPy.

Run: python benchmarks/bench_reduction.py [--repeats N]
Times are medians of N runs (recording and evaluation included), nuvec and NumPy interleaved
in the same run; the ratio is nuvec / NumPy (lower is better; the target is <= 1.15).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import numpy as np

import nuvec as mx


def median_pair(ours: Callable[[], object], peer: Callable[[], object], repeats: int):
    """Median seconds of `ours` and `peer`, alternated so machine noise hits both alike."""
    ours(), peer()
    a, b = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        ours()
        a.append(time.perf_counter() - start)
        start = time.perf_counter()
        peer()
        b.append(time.perf_counter() - start)
    return statistics.median(a), statistics.median(b)


def report(name: str, ours: float, numpy_time: float) -> None:
    print(f"{name:34s} nuvec {ours * 1e3:8.2f} ms   numpy {numpy_time * 1e3:8.2f} ms   "
          f"ratio {ours / numpy_time:5.2f}")


def bench_softmax(rng: np.random.Generator, repeats: int) -> None:
    x_np = rng.standard_normal((32, 512, 512), dtype=np.float32)
    x = mx.array(x_np)

    def numpy_softmax():
        e = np.exp(x_np - x_np.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    report("softmax [32,512,512] axis -1",
           *median_pair(lambda: mx.eval(mx.softmax(x, axis=-1)), numpy_softmax, repeats))


def bench_sum(rng: np.random.Generator, repeats: int) -> None:
    s_np = rng.standard_normal((4096, 4096), dtype=np.float32)
    s = mx.array(s_np)
    for axis in (0, 1):
        report(f"sum [4096,4096] axis {axis}",  # short runs: more repeats against the noise
               *median_pair(lambda: mx.eval(mx.sum(s, axis=axis)),
                            lambda: np.sum(s_np, axis=axis), 4 * repeats))


def bench_matmul(rng: np.random.Generator, repeats: int) -> None:
    a_np = rng.standard_normal((1024, 1024), dtype=np.float32)
    b_np = rng.standard_normal((1024, 1024), dtype=np.float32)
    a, b = mx.array(a_np), mx.array(b_np)
    report("matmul 1024^3 float32",
           *median_pair(lambda: mx.eval(a @ b), lambda: a_np @ b_np, repeats))


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
