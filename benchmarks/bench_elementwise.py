"""Elementwise operations on large arrays against the same NumPy call, measured in one run.

Run: `python benchmarks/bench_elementwise.py [--quick]`. Each case records one nuvec op on a
`[2048, 2048]` array (`[512, 512]` with --quick) and evaluates it; NumPy computes the same
result directly. Prints both best times and the ratio nuvec / NumPy (lower is better).
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_engine import best_of  # benchmarks/ is the script's directory

import nuvec as mx


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small arrays, few repeats")
    args = parser.parse_args()
    n, repeats = (512, 3) if args.quick else (2048, 5)
    rng = np.random.default_rng(0)
    x = rng.uniform(0.1, 2.0, (n, n)).astype(np.float32)
    y = rng.uniform(0.1, 2.0, (n, n)).astype(np.float32)
    i = rng.integers(-1000, 1000, (n, n)).astype(np.int32)
    j = rng.integers(1, 50, (n, n)).astype(np.int32)
    a, b, ai, bi = mx.array(x), mx.array(y), mx.array(i), mx.array(j)
    mx.eval(a, b, ai, bi)

    def sigmoid(v):
        return np.where(v >= 0, 1 / (1 + np.exp(-np.abs(v))), np.exp(-np.abs(v)) /
                        (1 + np.exp(-np.abs(v))))

    cases = [
        ("add", lambda: mx.add(a, b), lambda: np.add(x, y)),
        ("multiply by a scalar", lambda: a * 1.5, lambda: x * np.float32(1.5)),
        ("divide", lambda: a / b, lambda: x / y),
        ("maximum", lambda: mx.maximum(a, b), lambda: np.maximum(x, y)),
        ("exp", lambda: mx.exp(a), lambda: np.exp(x)),
        ("log", lambda: mx.log(a), lambda: np.log(x)),
        ("sqrt", lambda: mx.sqrt(a), lambda: np.sqrt(x)),
        ("tanh", lambda: mx.tanh(a), lambda: np.tanh(x)),
        ("sigmoid", lambda: mx.sigmoid(a), lambda: sigmoid(x)),
        ("power", lambda: mx.power(a, b), lambda: np.power(x, y)),
        ("where(a > b, a, b)", lambda: mx.where(a > b, a, b), lambda: np.where(x > y, x, y)),
        ("clip", lambda: mx.clip(a, 0.5, 1.5), lambda: np.clip(x, 0.5, 1.5)),
        ("floor_divide int32", lambda: ai // bi, lambda: i // j),
        ("remainder int32", lambda: ai % bi, lambda: i % j),
        ("exp(x) * w + b", lambda: mx.exp(a) * b + a, lambda: np.exp(x) * y + x),
    ]
    print(f"elementwise on [{n}, {n}] float32 (int32 where named); best of {repeats}")
    for name, ours, theirs in cases:
        t_ours = best_of(lambda: mx.eval(ours()), repeats)
        t_np = best_of(theirs, repeats)
        print(f"{name:24s} nuvec {t_ours * 1e3:8.2f} ms   numpy {t_np * 1e3:8.2f} ms   "
              f"ratio {t_ours / t_np:5.2f}")


if __name__ == "__main__":
    main()
