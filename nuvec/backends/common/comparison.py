"""Shared bodies of `nuvec.ops.comparison`: inputs have equal shapes and dtypes."""

from __future__ import annotations

from nuvec.backends.common.registry import body
from nuvec.backends.common.unary import widen
from nuvec.ops import comparison as c




@body(c.Compare)
def compare(xp, p, x, y):
    return getattr(xp, p.kind)(widen(x), widen(y))


@body(c.Logical)
def logical(xp, p, x, y):
    return xp.logical_and(x, y) if p.kind == "and" else xp.logical_or(x, y)


_BITWISE = {
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "left_shift": "left_shift", "right_shift": "right_shift",
}  # fmt: skip


@body(c.Bitwise)
def bitwise(xp, p, x, y):
    return getattr(xp, _BITWISE[p.kind])(x, y)


@body(c.BitwiseInvert)
def bitwise_invert(xp, p, x):
    return xp.invert(x)


@body(c.Select)
def select(xp, p, c, x, y):
    return xp.where(c, x, y)
