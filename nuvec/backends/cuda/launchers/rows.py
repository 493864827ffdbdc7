"""What the row-kernel launchers share: dtype names, vector widths, block sizes, bounds."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from nuvec.backends.cuda.runner import Runner

__all__ = ["CTYPES", "OFFSET_LIMIT", "fits", "row_block", "variants", "vec_width"]

# The kernels' element type per dtype name.
CTYPES = {"float32": "float", "float16": "__half", "bfloat16": "__nv_bfloat16"}
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}
# Every offset a kernel computes is 32-bit: shapes with this many elements or more go to the
# fallback (as the seed's `on_gpu` guards).
OFFSET_LIMIT = 2**32 - 1


def fits(*arrays: Any) -> bool:
    """Whether every array's element count fits the kernels' 32-bit offsets."""
    return all(a.size < OFFSET_LIMIT for a in arrays)


def vec_width(runner: Runner, dtype: str, d: int, arrays: Sequence[Any]) -> int:
    """16-byte vectors (16 / itemsize elements) when rows of `d` elements and every buffer
    allow them, else 1."""
    n = 16 // ITEMSIZE[dtype]
    if d % n == 0 and all(runner.address(a) % 16 == 0 for a in arrays):
        return n
    return 1


def row_block(work: int, limit: int = 1024) -> int:
    """Threads for a row of `work` items: a multiple of 32 covering them, 32 to `limit`."""
    return max(32, min(limit, -(-work // 32) * 32))


def variants(kernels: Iterable[str], vec: bool = True) -> tuple[str, ...]:
    """The name expressions `kernel<T, VEC>` (or `kernel<T>`) of every dtype."""
    out = []
    for k in kernels:
        for dtype, ctype in CTYPES.items():
            if vec:
                out += [f"{k}<{ctype}, 1>", f"{k}<{ctype}, {16 // ITEMSIZE[dtype]}>"]
            else:
                out.append(f"{k}<{ctype}>")
    return tuple(out)
