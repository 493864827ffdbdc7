"""Rule rows for random numbers: vmap over keys (bits carry no derivative, and keys, being
uint32, get none), and derivatives of samplers with respect to their float parameters."""

from __future__ import annotations

import numpy as np

import nuvec as mx
from nuvec.ops import random
from nuvec.testing import OpSpec


def _key(rng):
    return [rng.integers(0, 2**32, size=2, dtype=np.uint64).astype(np.uint32)]


KEY = mx.random.key(3)


def _bounds(rng):
    low = rng.uniform(-1, 1, (2, 3))
    return [low, low + rng.uniform(0.5, 2, (2, 3))]


SPECS = [
    OpSpec("random_uniform_bounds",
           lambda lo, hi: mx.random.uniform(lo, hi, (2, 3), mx.float64, key=KEY), _bounds,
           [random.RandomBits]),
    OpSpec("random_normal_loc_scale",
           lambda loc, scale: mx.random.normal((2, 3), mx.float64, loc, scale, key=KEY), _bounds,
           [random.RandomBits]),
    OpSpec("random_bits", lambda k: mx.random.bits((2, 3), key=k), _key, [random.RandomBits],
           grad=False),
    OpSpec("random_bits_bytes", lambda k: mx.random.bits((5,), 1, key=k), _key,
           [random.RandomBits], grad=False),
    OpSpec("random_split", lambda k: mx.random.split(k, 3), _key, [random.RandomBits],
           grad=False),
    OpSpec("random_normal", lambda k: mx.random.normal((4,), key=k), _key, [random.RandomBits],
           grad=False),
    OpSpec("random_randint", lambda k: mx.random.randint(0, 9, (4,), key=k), _key,
           [random.RandomBits], grad=False),
]
