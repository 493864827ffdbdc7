"""The CPU kernel of `RandomBits` in C (`threefry.c`, compiled on this machine by
`nuvec.backends.native`): Threefry-2x32 one counter pair at a time, every word of every key in
one call, the same bits as the shared NumPy body (`nuvec/backends/common/random.py`), which takes
its 115 whole-array passes where there is no compiler."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np

from nuvec.backends import native
from nuvec.backends.common.random import bits_of_words, word_count
from nuvec.backends.numpy.registry import table
from nuvec.ops.random import RandomBits

__all__ = ["random_bits", "random_words"]

_SOURCE = Path(__file__).with_name("threefry.c")
_SHARED = table.kernels[RandomBits]


def _bind(lib: Any) -> Any:
    fn = lib.nuvec_random_words
    fn.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
    fn.restype = None
    return fn


def random_words() -> Any:
    """`threefry.c`'s `nuvec_random_words`, built on first use; None without a compiler."""
    return native.bound(_SOURCE, _bind)


def random_bits(p: RandomBits, key: np.ndarray) -> np.ndarray:
    """`RandomBits` with `threefry.c`; the shared NumPy body without a compiler."""
    fn = random_words()
    if fn is None:
        return _SHARED(p, key)
    keys = np.ascontiguousarray(key, dtype=np.uint32).reshape(-1, 2)
    words = np.empty((keys.shape[0], word_count(p)), np.uint32)
    if words.size:
        fn(keys.shape[0], native.address(keys), words.shape[1], native.address(words))
    return bits_of_words(p, key, words)


table.add(RandomBits, random_bits, replace=True)
