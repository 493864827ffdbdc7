"""Rule rows of `nuvec.ops.binary`: every primitive, float64 inputs in each function's safe domain
(operands kept apart where a derivative has a kink: ties, integer quotients, zero bases)."""

from __future__ import annotations

import numpy as np

import nuvec as mx
from nuvec.ops import binary as b
from nuvec.testing import OpSpec

SHAPE = (2, 3)


def pair(low_a=-2.0, high_a=2.0, low_b=-2.0, high_b=2.0, shape_b=SHAPE):
    return lambda rng: [rng.uniform(low_a, high_a, SHAPE), rng.uniform(low_b, high_b, shape_b)]


def apart(rng):
    """Two operands at least 0.5 apart everywhere (no ties for maximum/minimum)."""
    a = rng.uniform(-2, 2, SHAPE)
    return [a, a + rng.choice([-1.0, 1.0], SHAPE) * rng.uniform(0.5, 1.5, SHAPE)]


def ints(rng):
    return [rng.integers(-9, 9, SHAPE).astype(np.int32), rng.integers(1, 5, SHAPE).astype(np.int32)]


SPECS = [
    OpSpec("add", mx.add, pair(), [b.Add]),
    OpSpec("add_broadcast", mx.add, pair(shape_b=(3,)), [b.Add]),
    OpSpec("subtract", mx.subtract, pair(), [b.Subtract]),
    OpSpec("multiply", mx.multiply, pair(), [b.Multiply]),
    OpSpec("multiply_broadcast", mx.multiply, pair(shape_b=(2, 1)), [b.Multiply]),
    OpSpec("divide", mx.divide, pair(low_b=0.5, high_b=2.0), [b.Divide]),
    # a in (0.1, 1.4), b in (1.5, 2): a / b stays inside (0, 1), away from the jumps
    OpSpec("remainder", mx.remainder, pair(0.1, 1.4, 1.5, 2.0), [b.Remainder]),
    OpSpec("remainder_negative", lambda x, y: mx.remainder(x, -y), pair(0.1, 1.4, 1.5, 2.0),
           [b.Remainder]),
    OpSpec("floor_divide_float", lambda x, y: mx.floor_divide(x, y) * x, pair(0.1, 1.4, 1.5, 2.0),
           [b.Divide]),
    OpSpec("floor_divide_int", mx.floor_divide, ints, [b.FloorDivide]),
    OpSpec("power", mx.power, pair(0.5, 2.0, -2.0, 2.0), [b.Power]),
    OpSpec("power_base_only", lambda x: mx.power(x, 3.0),
           lambda rng: [rng.uniform(-2, 2, SHAPE)], [b.Power]),
    OpSpec("maximum", mx.maximum, apart, [b.Maximum]),
    OpSpec("minimum", mx.minimum, apart, [b.Minimum]),
    OpSpec("clip", lambda x, lo, hi: mx.clip(x, lo, hi),
           lambda rng: [rng.uniform(-3, 3, SHAPE), -1.0 - rng.uniform(0, 0.1, SHAPE),
                        1.0 + rng.uniform(0, 0.1, SHAPE)],
           [b.Clip]),
    OpSpec("clip_broadcast_bounds", lambda x, lo: mx.clip(x, lo, 1.2),
           lambda rng: [rng.uniform(-3, 3, SHAPE), rng.uniform(-1.5, -0.5, (3,))], [b.Clip]),
    OpSpec("arctan2", mx.arctan2, pair(0.2, 2.0, -2.0, 2.0), [b.ArcTan2]),
    OpSpec("logaddexp", mx.logaddexp, pair(), [b.LogAddExp]),
]
