"""Engine benchmarks: per-op overhead, small ops each evaluated, large elementwise work, memory
peak, two streams.

Run: python benchmarks/bench_engine.py [--quick]
Prints nuvec against the same computation written directly with NumPy (and PyTorch eager when
it is installed), measured in the same run; ratios are nuvec / peer (lower is better).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import nuvec as mx


def best_of(fn, repeats: int) -> float:
    """The fastest of `repeats` runs of `fn`, in seconds (after one warm-up run)."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def one_thread(fn):
    """`fn` run with nuvec's CPU kernels on one thread (`mx.set_num_threads(1)`)."""

    def run():
        before = mx.get_num_threads()
        mx.set_num_threads(1)
        try:
            return fn()
        finally:
            mx.set_num_threads(before)

    return run


def report(name: str, ours: float, peers: dict[str, float]) -> None:
    parts = [f"nuvec {ours * 1e3:9.3f} ms"]
    for peer, t in peers.items():
        parts.append(f"{peer} {t * 1e3:9.3f} ms (ratio {ours / t:5.2f})")
    print(f"{name:44s} " + "  ".join(parts))


def per_op(name: str, ops: int, repeats: int, chains: dict) -> None:
    """Prints µs per op of each chain (`nuvec` first; `torch` is left out when absent)."""
    times = {peer: best_of(fn, repeats) / ops for peer, fn in chains.items() if fn is not None}
    ours = times.pop("nuvec")
    parts = [f"nuvec {ours * 1e6:6.2f} us/op"]
    parts += [f"{k} {v * 1e6:6.2f} us/op (ratio {ours / v:5.2f})" for k, v in times.items()]
    print(f"{name:44s} " + "  ".join(parts))


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def bench_overhead(repeats: int) -> None:
    """256 chained elementwise ops on a [16] array, recorded and evaluated: µs per op."""
    ops = 256
    x_np = np.linspace(0.1, 1.0, 16, dtype=np.float32)
    w_np = np.full(16, 0.999, np.float32)
    x, w = mx.array(x_np), mx.array(w_np)
    torch = _torch()

    def chain(mul, sin, y, w):
        for _ in range(ops // 2):
            y = sin(mul(y, w))
        return y

    chains = {
        "numpy": lambda: chain(np.multiply, np.sin, x_np, w_np),
        "torch": torch and (lambda: chain(torch.mul, torch.sin, torch.from_numpy(x_np),
                                          torch.from_numpy(w_np))),
        "nuvec": lambda: mx.eval(chain(mx.multiply, mx.sin, x, w)),
    }
    per_op("overhead: 256 chained ops on [16]", ops, repeats, chains)


def bench_dispatch(repeats: int) -> None:
    """256 chained `x * 1.0001 + 0.5` on a [16] array (the issue's per-op figure): µs per op."""
    ops = 256
    x_np = np.linspace(0.1, 1.0, 16, dtype=np.float32)
    x = mx.array(x_np)
    torch = _torch()

    def chain(y, scale, shift):
        for _ in range(ops // 2):
            y = y * scale + shift
        return y

    chains = {
        "numpy": lambda: chain(x_np, np.float32(1.0001), np.float32(0.5)),
        "torch": torch and (lambda: chain(torch.from_numpy(x_np), 1.0001, 0.5)),
        "nuvec": lambda: mx.eval(chain(x, 1.0001, 0.5)),
    }
    per_op("dispatch: 256 chained x*1.0001+0.5 on [16]", ops, repeats, chains)


def bench_each_evaluated(repeats: int) -> None:
    """Small ops on a [4, 4] float32 array and small random draws, each evaluated at once (as
    a script that reads or prints every result does): µs per op, recording and evaluation
    together."""
    calls = 200
    x_np = np.arange(16, dtype=np.float32).reshape(4, 4) / 16
    i_np = np.array([0, 2], np.int32)
    x, i = mx.array(x_np), mx.array(i_np)
    rng = np.random.default_rng(0)
    torch = _torch()
    t, ti = (torch.from_numpy(x_np), torch.from_numpy(i_np).long()) if torch else (None, None)
    ops = {  # name: (nuvec, torch, numpy); nuvec's evaluated by `mx.eval` or `item`
        "x + 1": (lambda: mx.eval(x + 1), lambda: t + 1, lambda: x_np + 1),
        "exp(x)": (lambda: mx.eval(mx.exp(x)), lambda: torch.exp(t), lambda: np.exp(x_np)),
        "sum(x).item()": (lambda: mx.sum(x).item(), lambda: t.sum().item(),
                          lambda: x_np.sum().item()),
        "sum(x, axis=0)": (lambda: mx.eval(mx.sum(x, axis=0)), lambda: t.sum(0),
                           lambda: x_np.sum(0)),
        "x[1:3, 2]": (lambda: mx.eval(x[1:3, 2]), lambda: t[1:3, 2], lambda: x_np[1:3, 2]),
        "x[..., 1]": (lambda: mx.eval(x[..., 1]), lambda: t[..., 1], lambda: x_np[..., 1]),
        "x[None]": (lambda: mx.eval(x[None]), lambda: t[None], lambda: x_np[None]),
        "x[i]": (lambda: mx.eval(x[i]), lambda: t[ti], lambda: x_np[i_np]),
        "x[0, 0].item()": (lambda: x[0, 0].item(), lambda: t[0, 0].item(),
                           lambda: x_np[0, 0].item()),
        "x @ x": (lambda: mx.eval(x @ x), lambda: t @ t, lambda: x_np @ x_np),
        "softmax(x, axis=-1)": (lambda: mx.eval(mx.softmax(x, axis=-1)),
                                lambda: torch.softmax(t, -1), None),
        "zeros((4, 4))": (lambda: mx.eval(mx.zeros((4, 4))), lambda: torch.zeros((4, 4)),
                          lambda: np.zeros((4, 4), np.float32)),
        # draws of 50 with the global key (NumPy: its Generator's float32 draws)
        "random.uniform((50,))": (lambda: mx.eval(mx.random.uniform(shape=(50,))),
                                  lambda: torch.rand(50),
                                  lambda: rng.random(50, np.float32)),
        "random.normal((50,))": (lambda: mx.eval(mx.random.normal((50,))),
                                 lambda: torch.randn(50),
                                 lambda: rng.standard_normal(50, np.float32)),
        "random.bernoulli(0.5, (50,))": (lambda: mx.eval(mx.random.bernoulli(0.5, (50,))),
                                         lambda: torch.bernoulli(torch.full((50,), 0.5)),
                                         lambda: rng.random(50, np.float32) < 0.5),
    }

    def repeated(fn):
        def run():
            for _ in range(calls):
                fn()
        return run

    for name, (ours, peer, plain) in ops.items():
        chains = {"nuvec": repeated(ours), "torch": torch and repeated(peer),
                  "numpy": plain and repeated(plain)}
        per_op(f"each evaluated: {name}", calls, repeats, chains)


def bench_large(repeats: int, n: int) -> None:
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((n, n), dtype=np.float32)
    w_np = rng.standard_normal((n, n), dtype=np.float32)
    b_np = rng.standard_normal((n,), dtype=np.float32)
    x, w, b = mx.array(x_np), mx.array(w_np), mx.array(b_np)
    report(
        f"exp(x) * w + b on [{n}, {n}]",
        best_of(lambda: mx.eval(mx.exp(x) * w + b), repeats),
        {"nuvec 1 thread": best_of(one_thread(lambda: mx.eval(mx.exp(x) * w + b)), repeats),
         "numpy": best_of(lambda: np.exp(x_np) * w_np + b_np, repeats)},
    )


def bench_memory(megabytes: int) -> None:
    """100 chained elementwise ops over one large float32 array: peak bytes held."""
    n = megabytes * 1024 * 1024 // 4
    mx.reset_peak_memory()
    base = mx.get_active_memory()
    y = mx.full((n,), 1.0, mx.float32) + 0.0  # a real buffer of the array's size
    mx.eval(y)
    size = y.nbytes
    for i in range(100):
        y = mx.exp(y * -0.01) if i % 2 else y * 0.5 + 0.25
    mx.eval(y)
    peak = mx.get_peak_memory() - base
    print(f"{'memory: 100 chained ops on ' + str(megabytes) + ' MB':44s} "
          f"peak {peak / 2**20:8.1f} MB = {peak / size:4.2f} x the array")


def bench_streams(repeats: int, n: int, chain: int) -> None:
    """Two independent chains of matmuls on two streams against both on one stream."""
    if not hasattr(mx, "matmul"):
        print("streams: skipped (no matmul)")
        return
    rng = np.random.default_rng(1)
    a = mx.array(rng.standard_normal((n, n), dtype=np.float32) / np.sqrt(n))
    b = mx.array(rng.standard_normal((n, n), dtype=np.float32) / np.sqrt(n))
    s1, s2 = mx.new_stream(mx.cpu), mx.new_stream(mx.cpu)

    def run(first, second):
        x, y = a, b
        for _ in range(chain):
            x = mx.matmul(x, a, stream=first)
            y = mx.matmul(y, b, stream=second)
        mx.eval(x, y)

    one = best_of(lambda: run(s1, s1), repeats)
    two = best_of(lambda: run(s1, s2), repeats)
    print(f"{'streams: 2 chains of ' + str(chain) + ' matmuls ' + str(n) + '^2':44s} "
          f"one stream {one * 1e3:8.2f} ms  two streams {two * 1e3:8.2f} ms "
          f"(speed-up {one / two:4.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    args = parser.parse_args()
    repeats = 3 if args.quick else 10
    bench_overhead(repeats * 5)
    bench_dispatch(repeats * 5)
    bench_each_evaluated(repeats)
    bench_large(repeats, 512 if args.quick else 2048)
    bench_memory(16 if args.quick else 256)
    bench_streams(repeats, 256 if args.quick else 1024, 4)


if __name__ == "__main__":
    main()
