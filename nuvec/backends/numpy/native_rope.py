"""The CPU kernel of `Rope` in C (`rope.c`, compiled on this machine by
`nuvec.backends.native`): each head's rows rotated in one pass, read where they are (a
transposed view of `[batch, T, heads, D]`, as attention layers make them, is not copied),
rounded as the shared NumPy body rounds them (`nuvec/backends/common/fast.py`), so both give
the same bits. Heads split over the thread pool (`ctypes` releases the GIL). Half types,
inputs whose last axis is not contiguous, and machines without a compiler take the NumPy body.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np

from nuvec.backends import native
from nuvec.backends.common.fast import angle_tables
from nuvec.backends.numpy.registry import table
from nuvec.backends.threads import parallel_rows
from nuvec.fast.rope import Rope

__all__ = ["rope"]

_SOURCE = Path(__file__).with_name("rope.c")
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_SHARED = table.kernels[Rope]


def _bind(lib: Any) -> dict[np.dtype, Any]:
    found = {}
    for dtype, suffix in _SUFFIX.items():
        fn = getattr(lib, f"nuvec_rope_{suffix}")
        fn.argtypes = ([ctypes.c_int64] * 6 + [ctypes.c_int, ctypes.c_void_p]
                       + [ctypes.c_int64] * 3 + [ctypes.c_void_p] * 2
                       + [ctypes.c_int64, ctypes.c_void_p])
        fn.restype = None
        found[dtype] = fn
    return found


def _functions() -> dict[np.dtype, Any] | None:
    return native.bound(_SOURCE, _bind)


def rope(p: Any, x: np.ndarray, offset: np.ndarray, *freqs: np.ndarray) -> np.ndarray:
    """`Rope`'s rotation of `x` (`[batch, ..., T, D]`) with `rope.c`; the shared NumPy body
    where the C function does not apply."""
    functions = _functions()
    fn = None if functions is None or x.ndim < 3 else functions.get(x.dtype)
    if fn is None or x.size == 0 or p.dims % 2 or x.strides[-1] != x.itemsize:
        return _SHARED(p, x, offset, *freqs)
    shape = x.shape
    t, d = shape[-2], shape[-1]
    xv = x.reshape(shape[0], -1, t, d)  # (a view for the usual layouts, else a copy)
    if xv.strides[-1] != x.itemsize or any(n % x.itemsize for n in xv.strides):
        return _SHARED(p, x, offset, *freqs)
    batch, heads = xv.shape[:2]
    c, s = angle_tables(np, p, x, offset, freqs)
    c, s = np.ascontiguousarray(c, x.dtype), np.ascontiguousarray(s, x.dtype)
    per_batch = c.ndim == 4
    out = np.empty(xv.shape, x.dtype)
    sb, sh, st = (stride // x.itemsize for stride in xv.strides[:3])
    tb = c[0].size if per_batch else 0
    args = (heads, t, d, p.dims, int(p.traditional), native.address(xv), sb, sh, st,
            native.address(c), native.address(s), tb, native.address(out))

    def chunk(start: int, stop: int) -> None:
        fn(start, stop, *args[:12], args[12] + start * t * d * x.itemsize)

    parallel_rows(batch * heads, chunk, row_bytes=t * d * out.itemsize)
    return out.reshape(shape)


table.add(Rope, rope, replace=True)
