"""Elementwise operations on large arrays against the same NumPy call, measured in one run.

Run: `python benchmarks/bench_elementwise.py [--quick]`. Each case records one nuvec op on a
`[2048, 2048]` array (`[512, 512]` with --quick) and evaluates it; NumPy (and PyTorch eager,
when importable) computes the same result directly. Prints best times, nuvec's with its default
thread count and with `mx.set_num_threads(1)`, and the ratios nuvec / NumPy and nuvec / PyTorch
(lower is better).

`--fusion` measures eager fusion instead: chains of elementwise ops on sizes from 4K to 4M
elements evaluated with fusion (`nuvec.graph.eager.FUSE_MIN_ELEMENTS` at 1) and without (the
per-node path: no threshold, generated-C chains' included), taking turns in one process; it
prints both times and fused / unfused, which places the fusion threshold.
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_engine import best_of, one_thread  # benchmarks/ is the script's directory

import nuvec as mx

try:
    import torch
except ImportError:  # PyTorch is an optional peer
    torch = None


def fusion(repeats: int) -> None:
    """Fused against unfused evaluation of three chains over sizes (see the module summary)."""
    from nuvec.graph import eager

    chains = {
        "exp(x) * w + b": lambda x, w, b: mx.exp(x) * w + b,
        "tanh(x * w) + b": lambda x, w, b: mx.tanh(x * w) + b,
        "8 ops": lambda x, w, b: mx.tanh(mx.exp(x) * w + b) * 0.5 + mx.sin(x) - 1,
    }
    rng = np.random.default_rng(0)
    default = eager.FUSE_MIN_ELEMENTS
    print(f"eager fusion: best of {repeats}, taking turns; {mx.get_num_threads()} threads; "
          f"default threshold {default} elements")
    try:
        for exponent in range(12, 23):
            cols = 1 << min(exponent, 11)
            shape = (1 << exponent) // cols, cols
            x, w = (mx.array(rng.uniform(-1, 1, shape).astype(np.float32)) for _ in range(2))
            b = mx.array(rng.uniform(-1, 1, cols).astype(np.float32))
            mx.eval(x, w, b)
            for name, f in chains.items():
                best = {}
                for _ in range(repeats):
                    for threshold in (1, 1 << 62):  # every chain fused, or none
                        eager.FUSE_MIN_ELEMENTS = threshold
                        covered = eager.set_covered_chains(None) if threshold > 1 else None
                        t = best_of(lambda: mx.eval(f(x, w, b)), 1)
                        if threshold > 1:
                            eager.set_covered_chains(covered)
                        best[threshold] = min(best.get(threshold, t), t)
                fused, unfused = best[1] * 1e3, best[1 << 62] * 1e3
                print(f"{1 << exponent:8d} elements  {name:16s} fused {fused:8.3f} ms   "
                      f"unfused {unfused:8.3f} ms   fused / unfused {fused / unfused:5.2f}",
                      flush=True)
    finally:
        eager.FUSE_MIN_ELEMENTS = default


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small arrays, few repeats")
    parser.add_argument("--fusion", action="store_true",
                        help="eager fusion against the per-node path, over sizes")
    args = parser.parse_args()
    if args.fusion:
        fusion(5 if args.quick else 20)
        return
    n, repeats = (512, 3) if args.quick else (2048, 5)
    rng = np.random.default_rng(0)
    x = rng.uniform(0.1, 2.0, (n, n)).astype(np.float32)
    y = rng.uniform(0.1, 2.0, (n, n)).astype(np.float32)
    i = rng.integers(-1000, 1000, (n, n)).astype(np.int32)
    j = rng.integers(1, 50, (n, n)).astype(np.int32)
    a, b, ai, bi = mx.array(x), mx.array(y), mx.array(i), mx.array(j)
    mx.eval(a, b, ai, bi)
    xt, yt, it, jt = (torch.from_numpy(v) for v in (x, y, i, j)) if torch else (None,) * 4
    w, bias = x[0], y[0]  # a row each: `exp(x) * w + b` as in a layer
    aw, ab = mx.array(w), mx.array(bias)
    wt, bt = (torch.from_numpy(w), torch.from_numpy(bias)) if torch else (None, None)

    def sigmoid(v):
        return np.where(v >= 0, 1 / (1 + np.exp(-np.abs(v))), np.exp(-np.abs(v)) /
                        (1 + np.exp(-np.abs(v))))

    cases = [
        ("add", lambda: mx.add(a, b), lambda: np.add(x, y), lambda: xt + yt),
        ("multiply by a scalar", lambda: a * 1.5, lambda: x * np.float32(1.5), lambda: xt * 1.5),
        ("divide", lambda: a / b, lambda: x / y, lambda: xt / yt),
        ("maximum", lambda: mx.maximum(a, b), lambda: np.maximum(x, y),
         lambda: torch.maximum(xt, yt)),
        ("exp", lambda: mx.exp(a), lambda: np.exp(x), lambda: torch.exp(xt)),
        ("log", lambda: mx.log(a), lambda: np.log(x), lambda: torch.log(xt)),
        ("sqrt", lambda: mx.sqrt(a), lambda: np.sqrt(x), lambda: torch.sqrt(xt)),
        ("tanh", lambda: mx.tanh(a), lambda: np.tanh(x), lambda: torch.tanh(xt)),
        ("sigmoid", lambda: mx.sigmoid(a), lambda: sigmoid(x), lambda: torch.sigmoid(xt)),
        ("power", lambda: mx.power(a, b), lambda: np.power(x, y), lambda: torch.pow(xt, yt)),
        ("where(a > b, a, b)", lambda: mx.where(a > b, a, b), lambda: np.where(x > y, x, y),
         lambda: torch.where(xt > yt, xt, yt)),
        ("clip", lambda: mx.clip(a, 0.5, 1.5), lambda: np.clip(x, 0.5, 1.5),
         lambda: torch.clamp(xt, 0.5, 1.5)),
        ("floor_divide int32", lambda: ai // bi, lambda: i // j, lambda: it // jt),
        ("remainder int32", lambda: ai % bi, lambda: i % j, lambda: it % jt),
        ("exp(x) * w + b", lambda: mx.exp(a) * aw + ab, lambda: np.exp(x) * w + bias,
         lambda: torch.exp(xt) * wt + bt),
    ]
    print(f"elementwise on [{n}, {n}] float32 (int32 where named); best of {repeats}; "
          f"{mx.get_num_threads()} threads")
    for name, ours, theirs, torch_fn in cases:
        t_ours = best_of(lambda: mx.eval(ours()), repeats)
        t_one = best_of(one_thread(lambda: mx.eval(ours())), repeats)
        t_np = best_of(theirs, repeats)
        line = (f"{name:22s} nuvec {t_ours * 1e3:7.2f} ms   1 thread {t_one * 1e3:7.2f} ms   "
                f"numpy {t_np * 1e3:7.2f} ms (ratio {t_ours / t_np:5.2f})")
        if torch is not None:
            t_torch = best_of(torch_fn, repeats)
            line += f"   torch {t_torch * 1e3:7.2f} ms (ratio {t_ours / t_torch:5.2f})"
        print(line, flush=True)


if __name__ == "__main__":
    main()
