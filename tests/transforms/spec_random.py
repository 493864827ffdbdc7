"""Rule rows for random numbers: vmap over keys only (bits carry no derivative)."""

from __future__ import annotations

import numpy as np

import nuvec as mx
from nuvec.ops import random
from nuvec.testing import OpSpec


def _key(rng):
    return [rng.integers(0, 2**32, size=2, dtype=np.uint64).astype(np.uint32)]


SPECS = [
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
