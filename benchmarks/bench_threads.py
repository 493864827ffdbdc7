"""The CPU thread pool's threshold: `exp` and `x * y` (float32) split with `parallel_rows`
over the default thread count against one thread, from 64 KiB to 16 MiB per array.

The smallest size where the split is faster gives `MIN_BYTES` per chunk in
`nuvec/backends/threads.py` (about half the size where two threads start to win). Ratios are
threaded / one thread: lower is better.

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
        parallel_rows(flat_out.size, body, row_bytes=out.itemsize, min_bytes=1, align=1024)

    mx.set_num_threads(threads)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    threads = mx.get_num_threads()
    rng = np.random.default_rng(0)
    print(f"threads: {threads}; times are the best of {args.repeats}")
    print(f"{'op':>6} {'bytes':>9} {'1 thread':>10} {f'{threads} threads':>10} {'ratio':>6}")
    for kib in (64, 128, 256, 512, 1024, 2048, 4096, 16384):
        n = kib * 256
        x, y = rng.standard_normal((2, n), dtype=np.float32)
        out = np.empty_like(x)
        for name, kernel, inputs in (("exp", np.exp, (x,)), ("x*y", np.multiply, (x, y))):
            one = best_of(split(kernel, inputs, out, 1), args.repeats)
            many = best_of(split(kernel, inputs, out, threads), args.repeats)
            print(f"{name:>6} {kib:>6} KiB {one * 1e6:>8.1f}us {many * 1e6:>8.1f}us "
                  f"{many / one:>6.2f}")
    mx.set_num_threads(threads)


if __name__ == "__main__":
    main()
