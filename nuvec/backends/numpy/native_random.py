"""The CPU kernel of `RandomBits` in C (`threefry.c`, compiled on this machine by
`nuvec.backends.native`): Threefry-2x32 one counter pair at a time, the same bits as the shared
NumPy body (`nuvec/backends/common/random.py`), which takes its 115 whole-array passes where
there is no compiler."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np

from nuvec.backends import native
from nuvec.backends.common.random import bits_of
from nuvec.backends.numpy.registry import table
from nuvec.ops.random import RandomBits

__all__ = ["random_bits", "threefry"]

_SOURCE = Path(__file__).with_name("threefry.c")
_SHARED = table.kernels[RandomBits]


def _bind(lib: Any) -> Any:
    fn = lib.nuvec_threefry2x32
    fn.argtypes = [ctypes.c_int64, ctypes.c_uint32, ctypes.c_uint32] + [ctypes.c_void_p] * 4
    fn.restype = None
    return fn


def _threefry(fn: Any, k0: np.ndarray, k1: np.ndarray, x0: np.ndarray,
              x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`threefry2x32` of keys `[n, 1]` and contiguous counters `[half]` through `fn`."""
    y0 = np.empty((k0.shape[0], x0.size), np.uint32)
    y1 = np.empty_like(y0)
    for i in range(k0.shape[0]):
        fn(x0.size, int(k0[i, 0]), int(k1[i, 0]), native.address(x0), native.address(x1),
           native.address(y0[i]), native.address(y1[i]))
    return y0, y1


def threefry() -> Any:
    """`threefry.c`'s `nuvec_threefry2x32`, built on first use; None without a compiler."""
    return native.bound(_SOURCE, _bind)


def random_bits(p: RandomBits, key: np.ndarray) -> np.ndarray:
    """`RandomBits` with `threefry.c`; the shared NumPy body without a compiler."""
    fn = threefry()
    if fn is None:
        return _SHARED(p, key)
    return bits_of(np, p, key, lambda *args: _threefry(fn, *args))


table.add(RandomBits, random_bits, replace=True)
