"""Shared bodies of `nuvec.ops.random`: Threefry-2x32 (20 rounds) in vectorized uint32 NumPy.

Threefry is the counter-based generator of Salmon et al., "Parallel random numbers: as easy as
1, 2, 3" (SC 2011): bits are a pure function of (key, counter), so any shape is filled at once.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from nuvec.backends.common.registry import body
from nuvec.ops import random as r

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)
_WIDTH_NP = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def _rotl(x: np.ndarray, d: int) -> np.ndarray:
    return (x << np.uint32(d)) | (x >> np.uint32(32 - d))


def threefry2x32(
    xp, k0: np.ndarray, k1: np.ndarray, x0: np.ndarray, x1: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32 of counters `(x0, x1)` under keys `(k0, k1)` (uint32, broadcastable)."""
    ks = (k0, k1, k0 ^ k1 ^ _PARITY)
    x0 = xp.add(x0, ks[0], dtype=np.uint32)
    x1 = xp.add(x1, ks[1], dtype=np.uint32)
    for block in range(5):
        for d in _ROTATIONS[block % 2]:
            x0 = xp.add(x0, x1, dtype=np.uint32)
            x1 = _rotl(x1, d) ^ x0
        # Key injection after every 4 rounds: ks rotates, plus the injection counter.
        x0 = xp.add(x0, ks[(block + 1) % 3], dtype=np.uint32)
        x1 = xp.add(x1, ks[(block + 2) % 3], dtype=np.uint32)
        x1 = xp.add(x1, np.uint32(block + 1), dtype=np.uint32)
    return x0, x1


@body(r.RandomBits)
def random_bits(xp, p, key):
    return bits_of(xp, p, key, lambda *args: threefry2x32(xp, *args))


def word_count(p: r.RandomBits) -> int:
    """The uint32 words of `p`'s bits for one key."""
    return -(-math.prod(p.shape) * p.width // 4)


def bits_of(xp, p: r.RandomBits, key, hash2x32: Callable[..., tuple]) -> Any:
    """`RandomBits`' output for `key` with `hash2x32(k0, k1, x0, x1)` as Threefry-2x32 (keys
    `[n, 1]`, counters `[half]`, hashes `[n, half]`): the counter layout every device shares."""
    words = word_count(p)
    half = -(-words // 2)
    keys = xp.ascontiguousarray(key, dtype=np.uint32).reshape(-1, 2)
    counters = xp.arange(2 * half, dtype=np.uint32)
    if words % 2:  # the middle word, the odd one out, hashes the counter pair (half - 1, 0)
        counters[-1] = 0
    y0, y1 = hash2x32(keys[:, :1], keys[:, 1:], counters[:half], counters[half:])
    return bits_of_words(p, key, xp.ascontiguousarray(xp.concatenate([y0, y1], axis=1)[:, :words]))


def bits_of_words(p: r.RandomBits, key, words) -> Any:
    """`RandomBits`' output for `key` (`[..., 2]`) from its keys' words (C-contiguous uint32
    `[keys, word_count(p)]`): their bytes as `p.width`-byte integers, little-endian."""
    out = words.astype("<u4", copy=False).view(np.uint8).view(_WIDTH_NP[p.width])
    return out[:, :math.prod(p.shape)].reshape(key.shape[:-1] + p.shape)
