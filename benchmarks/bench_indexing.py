"""Gathered indexing against NumPy in the same run: `x[idx]` with 1M random row indices into
a `[1M, 64]` float32 table (issue 3 asks for at most 1.5x NumPy), plus take, take_along_axis,
a scatter-add with repeated indices and an advanced index mixed with a slice.

Run: `python benchmarks/bench_indexing.py` (prints one line per case: nuvec, NumPy, ratio).
"""

from __future__ import annotations

import time

import numpy as np

import nuvec as mx


def _compare(ours, theirs, repeat: int = 15) -> tuple[float, float]:
    """Best times of two functions, measured alternately so machine load hits both alike."""
    ours(), theirs()  # warm-up
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for k, fn in enumerate((ours, theirs)):
            t = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t)
    return best[0], best[1]


def main() -> None:
    rng = np.random.default_rng(0)
    rows, width = 1_000_000, 64
    table = rng.standard_normal((rows, width), dtype=np.float32)
    idx = rng.integers(0, rows, size=rows)
    x, i = mx.array(table), mx.array(idx)
    mx.eval(x, i)
    cols = rng.integers(0, width, size=(rows // 8, 8))
    ups = rng.standard_normal((rows // 4, width), dtype=np.float32)
    up_idx = rng.integers(0, 1000, size=rows // 4)
    u, ui, c = mx.array(ups), mx.array(up_idx), mx.array(cols)
    acc = np.zeros((1000, width), dtype=np.float32)
    acc_mx = mx.array(acc)
    mx.eval(u, ui, c, acc_mx)

    cases = [
        ("x[idx] 1M rows of [1M, 64] f32", lambda: mx.eval(x[i]), lambda: table[idx]),
        ("take(x, idx, axis=0)", lambda: mx.eval(mx.take(x, i, axis=0)),
         lambda: np.take(table, idx, axis=0)),
        ("take_along_axis [125k, 8] of [125k, 64]",
         lambda: mx.eval(mx.take_along_axis(x[: rows // 8], c, axis=1)),
         lambda: np.take_along_axis(table[: rows // 8], cols, axis=1)),
        ("x[idx[:, None], :8] advanced + slice, 1M rows",
         lambda: mx.eval(x[mx.reshape(i, (-1, 1)), :8]), lambda: table[idx[:, None], :8]),
        ("x[idx].sum() through a reduction", lambda: mx.eval(mx.sum(x[i], axis=0)),
         lambda: table[idx].sum(axis=0)),
        ("at[idx].add 250k rows into [1000, 64]", lambda: mx.eval(acc_mx.at[ui].add(u)),
         lambda: np.add.at(acc.copy(), up_idx, ups)),
    ]
    print(f"{'case':42s} {'nuvec ms':>10s} {'numpy ms':>10s} {'ratio':>7s}")
    for name, ours, theirs in cases:
        t_ours, t_np = _compare(ours, theirs)
        print(f"{name:42s} {t_ours * 1e3:10.2f} {t_np * 1e3:10.2f} {t_ours / t_np:7.2f}")


if __name__ == "__main__":
    main()
