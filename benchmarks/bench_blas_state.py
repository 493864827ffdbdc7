"""The CPU attention kernel's products in a fresh process, before and after one larger product.

Run: python benchmarks/bench_blas_state.py [--repeats N] [--processes P]

On a two-core AMD Zen 3 machine (OpenBLAS 0.3.31, Haswell kernels) the attention kernel's
value product, `p @ v` with `p` `[128, K]` (a transposed view, as the kernel keeps its scores)
and `v` `[K, 64]` float32, took three times as long in a process that had run no product with
many output rows and columns as after one such product had run (a `[1024, 16] x [16, 1024]`
one, 16M multiply-adds, is enough); the score product `k @ q.T` sped up less. The cause was not
found. This script measures it: each process (started again with `--worker`) times the two
products on one BLAS thread, runs one `PRIME` product, times them again; two more fresh
processes time nuvec's causal attention `[1, 8, 1024, 64]` without and with that product run
first. It prints the best time of each over the processes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np
from bench_peers import best_of  # benchmarks/ is the script's directory
from threadpoolctl import threadpool_limits

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRIME = ((1024, 16), (16, 1024))  # the product run between the two timings, float32 zeros
KEYS = (512, 1024)


def products(repeats: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    out: dict[str, float] = {}
    cases = []
    for n in KEYS:
        k, q = rng.standard_normal((n, 64), np.float32), rng.standard_normal((128, 64), np.float32)
        s, v = rng.random((n, 128), np.float32), rng.standard_normal((n, 64), np.float32)
        acc = np.empty((128, 64), np.float32)
        cases += [(f"k @ q.T, {n} keys", lambda k=k, q=q, s=s: np.matmul(k, q.T, out=s)),
                  (f"p @ v, {n} keys", lambda s=s, v=v, acc=acc: np.matmul(s.T, v, out=acc))]
    with threadpool_limits(limits=1, user_api="blas"):
        for name, fn in cases:
            out[f"{name}: cold"] = best_of(fn, repeats)
        np.zeros(PRIME[0], np.float32) @ np.zeros(PRIME[1], np.float32)
        for name, fn in cases:
            out[f"{name}: primed"] = best_of(fn, repeats)
    return out


def attention(repeats: int, primed: bool) -> dict[str, float]:
    sys.path.insert(0, ROOT)
    import nuvec as mx

    rng = np.random.default_rng(0)
    q, k, v = (mx.array(rng.standard_normal((1, 8, 1024, 64), np.float32)) for _ in range(3))
    if primed:
        with threadpool_limits(limits=1, user_api="blas"):
            np.zeros(PRIME[0], np.float32) @ np.zeros(PRIME[1], np.float32)

    def run():
        mx.eval(mx.fast.scaled_dot_product_attention(q, k, v, scale=0.125, mask="causal"))

    return {f"causal attention: {'primed' if primed else 'cold'}": best_of(run, repeats)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--worker", choices=("products", "cold", "primed"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        result = (products(args.repeats) if args.worker == "products"
                  else attention(max(3, args.repeats // 4), args.worker == "primed"))
        print(json.dumps(result))
        return
    best: dict[str, float] = {}
    for _ in range(args.processes):
        for worker in ("products", "cold", "primed"):
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", worker,
                   "--repeats", str(args.repeats)]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            for name, seconds in json.loads(done.stdout.splitlines()[-1]).items():
                best[name] = min(best.get(name, float("inf")), seconds)
    print(f"best of {args.processes} processes; one BLAS thread for the products; "
          f"primed: after one {PRIME[0]} x {PRIME[1]} float32 product")
    for name, seconds in best.items():
        print(f"{name:34s} {seconds * 1e3:9.3f} ms")


if __name__ == "__main__":
    main()
