"""The GEMMs of the peer benchmark's MLP step and tanh gradient: nuvec against PyTorch and NumPy.

Run: python benchmarks/bench_gemm_peers.py [--repeats N] [--only LIB ...] [--threads T]

`bench_peers.py` finds nuvec slower than PyTorch eager on the MLP 784-512-512-10 training step
(batch 256) and on the gradient of `sum(tanh(tanh(tanh(x @ W))))`, two workloads whose time is
mostly matrix products. This script times those products alone, in the layouts the backward
passes use (a transposed operand where a weight gradient or an input cotangent takes one), each
library in its own process (this script started again with `--worker LIB`, so that one
library's BLAS threads never wait on another's), on the same float32 inputs, and prints each
product's best time, the ratio nuvec / peer and the totals per workload. nuvec's matmul runs
NumPy's BLAS (the header names it); PyTorch's runs its own (MKL on x86). The 1024³ matmul
workload and one causal attention tile's two products (256 stacked query rows against a
chunk of 512 keys, head size 64, as the CPU kernel computes them on one thread) are timed
too. `--threads T` gives every library T threads (`OMP_NUM_THREADS`, `OPENBLAS_NUM_THREADS`,
`MKL_NUM_THREADS` and `NUVEC_NUM_THREADS` in the workers' environment): `--threads 1` against
the default shows how each BLAS gains from a second core.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any, Callable

import numpy as np

from bench_peers import best_of, blas_line  # benchmarks/ is the script's directory

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARIES = ("nuvec", "torch", "numpy")

# (workload, name, shape of a, shape of b, transpose a, transpose b): the product is
# op(a) @ op(b) with op a transposed view where the flag is set
CASES = (
    ("mlp", "x @ W1.T (forward)", (256, 784), (512, 784), False, True),
    ("mlp", "h1 @ W2.T (forward)", (256, 512), (512, 512), False, True),
    ("mlp", "h2 @ W3.T (forward)", (256, 512), (10, 512), False, True),
    ("mlp", "g3.T @ h2 (grad W3)", (256, 10), (256, 512), True, False),
    ("mlp", "g3 @ W3 (cotangent h2)", (256, 10), (10, 512), False, False),
    ("mlp", "g2.T @ h1 (grad W2)", (256, 512), (256, 512), True, False),
    ("mlp", "g2 @ W2 (cotangent h1)", (256, 512), (512, 512), False, False),
    ("mlp", "g1.T @ x (grad W1)", (256, 512), (256, 784), True, False),
    ("tanh", "x @ W (forward)", (256, 512), (512, 512), False, False),
    ("tanh", "x.T @ g (grad W)", (256, 512), (256, 512), True, False),
    ("matmul", "a @ b (1024³)", (1024, 1024), (1024, 1024), False, False),
    ("attention", "k @ q.T (scores, 512 x 64 x 256)", (512, 64), (256, 64), False, True),
    ("attention", "s.T @ v (256 x 512 x 64)", (512, 256), (512, 64), True, False),
)
WORKLOADS = ("mlp", "tanh", "matmul", "attention")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUVEC_NUM_THREADS")


def operands(i: int) -> tuple[np.ndarray, np.ndarray]:
    """Case `i`'s two float32 inputs, stored untransposed (fixed seeds)."""
    _, _, sa, sb, _, _ = CASES[i]
    rng = np.random.default_rng(i)
    return (rng.standard_normal(sa).astype(np.float32),
            rng.standard_normal(sb).astype(np.float32))


def products(lib: str) -> list[Callable[[], Any]]:
    """One function per case computing its product with `lib` (evaluated, for nuvec)."""
    out = []
    for i, (_, _, _, _, ta, tb) in enumerate(CASES):
        a, b = operands(i)
        if lib == "nuvec":
            import nuvec as mx

            xa, xb = mx.array(a), mx.array(b)
            xa, xb = (xa.T if ta else xa), (xb.T if tb else xb)
            out.append(lambda xa=xa, xb=xb: mx.eval(xa @ xb))
        elif lib == "torch":
            import torch

            xa, xb = torch.from_numpy(a), torch.from_numpy(b)
            xa, xb = (xa.T if ta else xa), (xb.T if tb else xb)
            out.append(lambda xa=xa, xb=xb: xa @ xb)
        else:
            xa, xb = (a.T if ta else a), (b.T if tb else b)
            out.append(lambda xa=xa, xb=xb: xa @ xb)
    return out


def run_worker(lib: str, repeats: int) -> None:
    """Prints `lib`'s best time per case, in seconds, as JSON (or why it cannot run)."""
    try:
        fns = products(lib)
    except ImportError as exc:
        print(json.dumps({"error": f"{lib} is not installed ({exc})"}))
        return
    print(json.dumps({"times": [best_of(fn, repeats) for fn in fns]}))


def measure(lib: str, repeats: int, threads: int | None) -> list[float] | str:
    """`lib`'s best time per case from a worker process (on `threads` threads where given),
    or why it has none."""
    env = dict(os.environ)
    if threads is not None:
        env.update({name: str(threads) for name in THREAD_VARIABLES})
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--worker", lib, "--repeats", str(repeats)],
        capture_output=True, text=True, cwd=ROOT, check=False, env=env)
    if done.returncode:
        return f"failed: {done.stderr.strip().splitlines()[-1:]}"
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result.get("error") or result["times"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--only", nargs="+", choices=LIBRARIES, default=list(LIBRARIES))
    parser.add_argument("--threads", type=int, help="threads of every library (default: theirs)")
    parser.add_argument("--worker", choices=LIBRARIES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        run_worker(args.worker, args.repeats)
        return
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads must be at least 1, got {args.threads}")
    libs = ["nuvec"] + [lib for lib in args.only if lib != "nuvec"]
    times = {lib: measure(lib, args.repeats, args.threads) for lib in libs}
    print(blas_line())
    threads = "each library's own thread count" if args.threads is None else \
        f"{args.threads} thread(s) each"
    print(f"best of {args.repeats}, in ms, {threads}; ratios nuvec / peer (lower is better)")
    for lib, t in times.items():
        if isinstance(t, str):
            print(f"{lib}: {t}")
    ok = [lib for lib in libs if not isinstance(times[lib], str)]
    peers = [lib for lib in ok if lib != "nuvec"]
    print(f"{'product':34s}" + "".join(f"{lib:>9s}" for lib in ok)
          + "".join(f"{'/' + lib:>9s}" for lib in peers if "nuvec" in ok))
    rows = [(w, name, [times[lib][i] for lib in ok]) for i, (w, name, *_) in enumerate(CASES)]
    for workload in WORKLOADS:
        totals = [0.0] * len(ok)
        for w, name, ts in rows:
            if w == workload:
                totals = [a + b for a, b in zip(totals, ts)]
                print(line(f"{w}: {name}", ok, ts))
        print(line(f"{workload}: all products", ok, totals))


def line(label: str, libs: list[str], times: list[float]) -> str:
    """A row: each library's time in ms, then nuvec's time over each peer's."""
    text = f"{label:34s}" + "".join(f"{t * 1e3:9.3f}" for t in times)
    if libs and libs[0] == "nuvec":
        text += "".join(f"{times[0] / t:9.2f}" for t in times[1:])
    return text


if __name__ == "__main__":
    main()
