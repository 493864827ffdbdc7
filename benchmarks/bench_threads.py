"""The CPU thread pool's thresholds: `exp`, `-x`, `x * y` and a row sum (float32) split with
`parallel_rows` over the default thread count against one thread, from 64 KiB to 16 MiB per
array.

The smallest size where the split is faster gives the bytes per chunk in
`nuvec/backends/threads.py` (about half the size where two threads start to win): `MIN_BYTES`
from `exp`, `MEMORY_BOUND_BYTES` from `-x` and the sum. Ratios are threaded / one thread: lower
is better.

    python benchmarks/bench_threads.py [--repeats N]
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_engine import best_of  # benchmarks/ is the script's directory

import nuvec as mx
from nuvec.backends.threads import parallel_rows


def split(kernel, inputs, out, threads: int):
    """`kernel(*inputs, out=out)` with the flat elements split over `threads` threads."""
    flat = [x.reshape(-1) for x in inputs]
    flat_out = out.reshape(-1)

    def body(a, b):
        kernel(*(x[a:b] for x in flat), out=flat_out[a:b])

    def run():
        mx.set_num_threads(threads)  # (in the call: the runners of both counts are made first)
        parallel_rows(flat_out.size, body, row_bytes=out.itemsize, min_bytes=1, align=1024)

    return run


def split_rows(x, out, threads: int):
    """Row sums of `x` into `out` with the rows split over `threads` threads."""

    def body(a, b):
        np.sum(x[a:b], axis=1, out=out[a:b])

    def run():
        mx.set_num_threads(threads)
        parallel_rows(len(x), body, row_bytes=x[0].nbytes, min_bytes=1, align=2)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    threads = mx.get_num_threads()
    rng = np.random.default_rng(0)
    print(f"threads: {threads}; times are the best of {args.repeats}")
    print(f"{'op':>6} {'bytes':>9} {'1 thread':>10} {f'{threads} threads':>10} {'ratio':>6}")
    for kib in (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384):
        n = kib * 256
        x, y = rng.standard_normal((2, n), dtype=np.float32)
        out = np.empty_like(x)
        rows = x.reshape(-1, 512)
        cases = (("exp", split(np.exp, (x,), out, 1), split(np.exp, (x,), out, threads)),
                 ("-x", split(np.negative, (x,), out, 1),
                  split(np.negative, (x,), out, threads)),
                 ("x*y", split(np.multiply, (x, y), out, 1),
                  split(np.multiply, (x, y), out, threads)),
                 ("sum", split_rows(rows, out[:len(rows)], 1),
                  split_rows(rows, out[:len(rows)], threads)))
        for name, single, threaded in cases:
            one = best_of(single, args.repeats)
            many = best_of(threaded, args.repeats)
            print(f"{name:>6} {kib:>6} KiB {one * 1e6:>8.1f}us {many * 1e6:>8.1f}us "
                  f"{many / one:>6.2f}")
    mx.set_num_threads(threads)


if __name__ == "__main__":
    main()
