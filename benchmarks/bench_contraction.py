"""Contractions and convolution against NumPy in the same run (issue 3: at most 1.5x NumPy).

Run: `python benchmarks/bench_contraction.py [--quick]`. Cases: batched matmul and
attention-score `einsum`, a `tensordot` over two axes, and a ResNet-like 3x3 `conv2d` on
`[32, 56, 56, 64]` with 64 output channels against im2col + matmul written directly in NumPy.
Prints nuvec's and NumPy's best time and the ratio nuvec / NumPy (lower is better).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import nuvec as mx


def best_of(*fns, repeats: int) -> list[float]:
    """The fastest run of each function, in seconds, after one warm-up run each.

    The functions run in turn within each repeat, so that a change in the machine's load
    (it may be shared) affects them alike.
    """
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(repeats):
        for fn, spent in zip(fns, times):
            start = time.perf_counter()
            fn()
            spent.append(time.perf_counter() - start)
    return [min(spent) for spent in times]


def report(name: str, ours: float, numpy_time: float) -> None:
    print(f"{name:46s} nuvec {ours * 1e3:9.2f} ms   numpy {numpy_time * 1e3:9.2f} ms   "
          f"ratio {ours / numpy_time:5.2f}")


def bench_einsum(repeats: int, quick: bool) -> None:
    """Against the faster NumPy way: `np.einsum(optimize=True)` or the matmul written by hand."""
    rng = np.random.default_rng(0)
    cases = [
        ("einsum bij,bjk->bik [64,256,256]x[64,256,256]", "bij,bjk->bik",
         [(64, 256, 256), (64, 256, 256)], lambda a, b: a @ b),
        ("einsum bhqd,bhkd->bhqk [8,16,512,64]", "bhqd,bhkd->bhqk",
         [(8, 16, 512, 64), (8, 16, 512, 64)], lambda q, k: q @ k.swapaxes(-1, -2)),
    ]
    for name, subscripts, shapes, by_hand in cases[:1] if quick else cases:
        data = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        arrays = [mx.array(x) for x in data]
        expected = by_hand(*data)
        got = np.asarray(mx.einsum(subscripts, *arrays))
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-3)
        ours, numpy_einsum, numpy_matmul = best_of(
            lambda: mx.eval(mx.einsum(subscripts, *arrays)),
            lambda: np.einsum(subscripts, *data, optimize=True),
            lambda: by_hand(*data), repeats=repeats)
        print(f"  (numpy einsum {numpy_einsum * 1e3:.2f} ms, numpy matmul "
              f"{numpy_matmul * 1e3:.2f} ms)")
        report(name, ours, min(numpy_einsum, numpy_matmul))


def bench_tensordot(repeats: int) -> None:
    rng = np.random.default_rng(1)
    a_np = rng.standard_normal((64, 32, 512)).astype(np.float32)
    b_np = rng.standard_normal((32, 512, 1024)).astype(np.float32)
    a, b = mx.array(a_np), mx.array(b_np)
    axes = ([1, 2], [0, 1])
    np.testing.assert_allclose(np.asarray(mx.tensordot(a, b, axes)),
                               np.tensordot(a_np, b_np, axes), rtol=1e-3, atol=1e-2)
    ours, theirs = best_of(lambda: mx.eval(mx.tensordot(a, b, axes)),
                           lambda: np.tensordot(a_np, b_np, axes), repeats=repeats)
    report("tensordot [64,32,512]x[32,512,1024] axes=2", ours, theirs)


def numpy_conv2d(x: np.ndarray, w: np.ndarray, padding: int) -> np.ndarray:
    """The NumPy way: pad, window view, im2col copy ([M, KH*KW*C]) and one matmul."""
    n, _, _, c = x.shape
    c_out, kh, kw, _ = w.shape
    xp = np.pad(x, ((0, 0), (padding, padding), (padding, padding), (0, 0)))
    windows = sliding_window_view(xp, (kh, kw), axis=(1, 2))  # [N, H, W, C, KH, KW]
    h, wd = windows.shape[1:3]
    cols = windows.transpose(0, 1, 2, 4, 5, 3).reshape(n * h * wd, kh * kw * c)
    return (cols @ w.reshape(c_out, -1).T).reshape(n, h, wd, c_out)


def bench_conv2d(repeats: int, quick: bool) -> None:
    rng = np.random.default_rng(2)
    batch = 8 if quick else 32
    x_np = rng.standard_normal((batch, 56, 56, 64)).astype(np.float32)
    w_np = (rng.standard_normal((64, 3, 3, 64)) * 0.05).astype(np.float32)
    x, w = mx.array(x_np), mx.array(w_np)
    expected = numpy_conv2d(x_np, w_np, 1)
    np.testing.assert_allclose(np.asarray(mx.conv2d(x, w, padding=1)), expected, rtol=1e-3,
                               atol=1e-3)
    ours, theirs = best_of(lambda: mx.eval(mx.conv2d(x, w, padding=1)),
                           lambda: numpy_conv2d(x_np, w_np, 1), repeats=repeats)
    report(f"conv2d 3x3 [{batch},56,56,64] -> 64", ours, theirs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller shapes, fewer repeats")
    args = parser.parse_args()
    # Many repeats for the short cases: the minimum filters out a shared machine's load spikes.
    bench_einsum(5 if args.quick else 15, args.quick)
    bench_tensordot(5 if args.quick else 15)
    bench_conv2d(3 if args.quick else 5, args.quick)


if __name__ == "__main__":
    main()
