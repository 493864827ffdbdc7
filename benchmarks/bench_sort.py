"""Sorting and scans against NumPy in the same run (issue 3: at most 1.5x NumPy).

Run: `python benchmarks/bench_sort.py [--quick]`. Cases: `sort` of 16M float32 values (against
`np.sort`), `argsort` (stable, against `np.argsort(kind="stable")`) and `cumsum` of the same
data. Prints nuvec's and NumPy's best time and the ratio nuvec / NumPy (lower is better).
"""

from __future__ import annotations

import argparse

import numpy as np

import nuvec as mx
from bench_contraction import best_of  # the same timing rule (run from benchmarks/)


def report(name: str, ours: float, numpy_time: float) -> None:
    print(f"{name:36s} nuvec {ours * 1e3:9.2f} ms   numpy {numpy_time * 1e3:9.2f} ms   "
          f"ratio {ours / numpy_time:5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1M values instead of 16M")
    args = parser.parse_args()
    n = (1 if args.quick else 16) * 2**20
    repeats = 5
    data = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    x = mx.array(data)
    np.testing.assert_array_equal(np.asarray(mx.sort(x)), np.sort(data))
    label = f"{n // 2**20}M float32"
    report(f"sort {label}", *best_of(lambda: mx.eval(mx.sort(x)), lambda: np.sort(data),
                                     repeats=repeats))
    report(f"argsort (stable) {label}",
           *best_of(lambda: mx.eval(mx.argsort(x)), lambda: np.argsort(data, kind="stable"),
                    repeats=3))
    report(f"cumsum {label}", *best_of(lambda: mx.eval(mx.cumsum(x)), lambda: np.cumsum(data),
                                       repeats=repeats))


if __name__ == "__main__":
    main()
