"""Rule rows of `nuvec.ops.comparison`: `where` differentiates its values (float64), the others
give integer or boolean results and are checked under vmap."""

from __future__ import annotations

import numpy as np

import nuvec as mx
from nuvec.ops import comparison as c
from nuvec.testing import OpSpec

SHAPE = (2, 3)


def apart(rng):
    """Two operands at least 0.5 apart everywhere (no ties)."""
    a = rng.uniform(-2, 2, SHAPE)
    return [a, a + rng.choice([-1.0, 1.0], SHAPE) * rng.uniform(0.5, 1.5, SHAPE)]


def ints(rng):
    return [rng.integers(-9, 9, SHAPE).astype(np.int32), rng.integers(1, 5, SHAPE).astype(np.int32)]


def bools(rng):
    return [rng.integers(0, 2, SHAPE).astype(bool), rng.integers(0, 2, SHAPE).astype(bool)]


def select_args(rng):
    return [rng.integers(0, 2, SHAPE).astype(bool), rng.standard_normal(SHAPE),
            rng.standard_normal(SHAPE)]


SPECS = [
    OpSpec("where", mx.where, select_args, [c.Select]),
    OpSpec("where_broadcast", lambda cond, x: mx.where(cond, x, 0.5),
           lambda rng: [rng.integers(0, 2, (3,)).astype(bool), rng.standard_normal(SHAPE)],
           [c.Select]),
    OpSpec("compare",
           lambda x, y: mx.where(mx.less(x, y), x, y) + mx.astype(mx.equal(x, y), x.dtype),
           apart, [c.Compare, c.Select]),
    OpSpec("greater_int", mx.greater, ints, [c.Compare]),
    OpSpec("logical_and", mx.logical_and, bools, [c.Logical]),
    OpSpec("logical_or", mx.logical_or, bools, [c.Logical]),
    OpSpec("bitwise_xor", mx.bitwise_xor, ints, [c.Bitwise]),
    OpSpec("left_shift", lambda x, y: mx.left_shift(x, y), ints, [c.Bitwise]),
    OpSpec("bitwise_invert", mx.bitwise_invert, lambda rng: ints(rng)[:1], [c.BitwiseInvert]),
]
