"""Zero-copy exchange: `mx.from_dlpack`, `__dlpack__` (through `np.from_dlpack` and, when
installed, `torch.from_dlpack`) and `np.asarray` of evaluated arrays of 1 MB and 256 MB, against
a NumPy copy of the same data (what a copying exchange would cost). Issue 12 asks that the
exchanges take the same, small time for both sizes.

Run: `python benchmarks/bench_interop.py` (`--quick`: 1 MB and 64 MB).
"""

from __future__ import annotations

import importlib.util
import sys
import time

import numpy as np

import nuvec as mx


def _best(fn, repeat: int = 50) -> float:
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _cases(data: np.ndarray, a: mx.array) -> list[tuple[str, object]]:
    cases = [
        ("mx.from_dlpack(numpy)", lambda: mx.from_dlpack(data)),
        ("np.from_dlpack(nuvec)", lambda: np.from_dlpack(a)),
        ("np.asarray(nuvec)", lambda: np.asarray(a)),
        ("mx.asarray(numpy)", lambda: mx.asarray(data)),
    ]
    if importlib.util.find_spec("torch") is not None:
        import torch

        t = torch.from_numpy(data)
        cases += [("torch.from_dlpack(nuvec)", lambda: torch.from_dlpack(a)),
                  ("mx.from_dlpack(torch)", lambda: mx.from_dlpack(t))]
    return cases


def main() -> None:
    sizes = [1 << 20, 64 << 20] if "--quick" in sys.argv else [1 << 20, 256 << 20]
    rows: dict[str, list[float]] = {}
    copies = []
    for nbytes in sizes:
        data = np.arange(nbytes // 4, dtype=np.float32)
        a = mx.array(data)
        mx.eval(a)
        copies.append(_best(lambda: data.copy(), repeat=5))
        for name, fn in _cases(data, a):
            rows.setdefault(name, []).append(_best(fn))
    labels = [f"{n >> 20} MB" for n in sizes]
    print(f"{'case':28s} " + " ".join(f"{lab + ' us':>12s}" for lab in labels)
          + f" {'large/small':>12s}")
    for name, times in rows.items():
        print(f"{name:28s} " + " ".join(f"{t * 1e6:12.1f}" for t in times)
              + f" {times[-1] / times[0]:12.2f}")
    print(f"{'numpy copy (reference)':28s} " + " ".join(f"{t * 1e6:12.1f}" for t in copies)
          + f" {copies[-1] / copies[0]:12.2f}")


if __name__ == "__main__":
    main()
