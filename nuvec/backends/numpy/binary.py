"""CPU kernels of `nuvec.ops.binary`.

Inputs have equal shapes and dtypes. The evaluator runs kernels under `np.errstate(all="ignore")`,
so integer division by zero (0, as NumPy gives) and IEEE results (inf, NaN) raise no warnings.
Boolean arithmetic computes in uint8 where NumPy has no
boolean loop; the evaluator casts back.
"""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.backends.numpy.unary import HALF, widen
from nuvec.ops import binary as b


def _no_bool(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint8) if x.dtype == np.bool_ else x


@kernel(b.Add, out=True)
def add(p, x, y, out=None):
    return np.add(x, y, out=out)


@kernel(b.Subtract, out=True)
def subtract(p, x, y, out=None):
    if x.dtype == np.bool_:  # bool - bool is nonzero exactly when they differ
        return np.not_equal(x, y, out=out)
    return np.subtract(x, y, out=out)


@kernel(b.Multiply, out=True)
def multiply(p, x, y, out=None):
    return np.multiply(x, y, out=out)


def _widened(fn):
    """A kernel applying the ufunc `fn`: 16-bit floats in float32, other dtypes into `out`."""

    def compute(p, x, y, out=None):
        return fn(widen(x), widen(y)) if x.dtype in HALF else fn(x, y, out=out)

    return compute


for _cls, _fn in ((b.Divide, np.divide), (b.Maximum, np.maximum), (b.Minimum, np.minimum)):
    kernel(_cls, out=True)(_widened(_fn))


@kernel(b.FloorDivide)
def floor_divide(p, x, y):
    return np.floor_divide(_no_bool(x), _no_bool(y))


@kernel(b.Remainder)
def remainder(p, x, y):
    return np.remainder(widen(_no_bool(x)), widen(_no_bool(y)))


@kernel(b.Power)
def power(p, x, y):
    x, y = widen(_no_bool(x)), widen(_no_bool(y))
    if x.dtype.kind != "i":
        return np.power(x, y)
    # NumPy rejects negative integer exponents; the truncated value is 0 unless |x| is 1
    negative = y < 0
    out = np.power(x, np.where(negative, 0, y))
    parity = np.where(y % 2 == 0, 1, -1).astype(x.dtype)
    inverse = np.where(x == 1, 1, np.where(x == -1, parity, 0)).astype(x.dtype)
    return np.where(negative, inverse, out)


@kernel(b.ArcTan2)
def arctan2(p, x, y):
    return np.arctan2(widen(x), widen(y))


@kernel(b.LogAddExp)
def logaddexp(p, x, y):
    return np.logaddexp(widen(x), widen(y))


def _constant(v: np.ndarray):
    """A broadcast constant (all strides 0) as a NumPy scalar: NumPy's fast scalar path."""
    return v[(0,) * v.ndim] if v.size and not any(v.strides) else v


@kernel(b.Clip)
def clip(p, x, lo, hi):
    lo, hi = _constant(lo), _constant(hi)
    if x.dtype == np.bool_:
        return np.minimum(np.maximum(x, lo), hi)
    return np.clip(widen(x), widen(lo), widen(hi))
