"""CPU kernels of `nuvec.ops.comparison`: inputs have equal shapes and dtypes."""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.backends.numpy.unary import widen
from nuvec.ops import comparison as c

_COMPARE = {
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
}  # fmt: skip


@kernel(c.Compare)
def compare(p, x, y):
    return _COMPARE[p.kind](widen(x), widen(y))


@kernel(c.Logical)
def logical(p, x, y):
    return np.logical_and(x, y) if p.kind == "and" else np.logical_or(x, y)


_BITWISE = {
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "left_shift": np.left_shift, "right_shift": np.right_shift,
}  # fmt: skip


@kernel(c.Bitwise)
def bitwise(p, x, y):
    return _BITWISE[p.kind](x, y)


@kernel(c.BitwiseInvert)
def bitwise_invert(p, x):
    return np.invert(x)


@kernel(c.Select)
def select(p, c, x, y):
    return np.where(c, x, y)
