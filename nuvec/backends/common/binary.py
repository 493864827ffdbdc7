"""Shared bodies of `nuvec.ops.binary`.

Inputs have equal shapes and dtypes. Kernels run in their backend's error scope, so integer
division by zero (0, as NumPy gives) and IEEE results (inf, NaN) raise no warnings. Boolean
arithmetic computes in uint8 where NumPy has no boolean loop; the evaluator casts back.
"""

from __future__ import annotations

import numpy as np

from nuvec.backends.common.registry import SHARED, body
from nuvec.backends.common.unary import HALF, widen
from nuvec.ops import binary as b


def _no_bool(x):
    return x.view(np.uint8) if x.dtype == np.bool_ else x


def _direct(name: str):
    def make(xp):
        fn = getattr(xp, name)
        # no `out=None` passed on (see `nuvec.backends.common.unary.plain`)
        return lambda p, x, y, out=None: fn(x, y) if out is None else fn(x, y, out=out)

    return make


SHARED.add_factory(b.Add, _direct("add"), out=True)
SHARED.add_factory(b.Multiply, _direct("multiply"), out=True)


@body(b.Subtract, out=True)
def subtract(xp, p, x, y, out=None):
    if x.dtype == np.bool_:  # bool - bool is nonzero exactly when they differ
        return xp.not_equal(x, y, out=out)
    return xp.subtract(x, y, out=out)


def _widened(name: str):
    """A factory of kernels applying the ufunc `name`: 16-bit floats in float32, other dtypes
    into `out`."""

    def make(xp):
        fn = getattr(xp, name)

        def compute(p, x, y, out=None):
            return fn(widen(x), widen(y)) if x.dtype in HALF else fn(x, y, out=out)

        return compute

    return make


SHARED.add_factory(b.Divide, _widened("divide"), out=True)

# NumPy's SIMD loops of maximum and minimum take two contiguous operands, not a scalar or a
# broadcast constant (relu's `maximum(x, 0)` on [256, 512] float32: 46 us, 13 us against a
# contiguous run of zeros). A constant operand is given as runs of this many copies of its value.
_RUN = 1 << 13


def _extremum(name: str):
    """A factory of kernels applying `maximum`/`minimum` (16-bit floats in float32, other
    dtypes into `out`); on NumPy, a large contiguous operand against a broadcast constant
    meets contiguous runs of the constant (the same values: the same loop, element by
    element)."""

    def make(xp):
        fn = getattr(xp, name)

        def compute(p, x, y, out=None):
            if x.dtype in HALF:
                return fn(widen(x), widen(y))
            if xp is np and x.size >= _RUN // 8 and (out is None or out.flags.c_contiguous):
                if x.flags.c_contiguous and _constant(y) is not y:
                    return _against_runs(fn, x, y, out, constant_first=False)
                if y.flags.c_contiguous and _constant(x) is not x:
                    return _against_runs(fn, y, x, out, constant_first=True)
            return fn(x, y, out=out)

        return compute

    return make


def _against_runs(fn, x, c, out, constant_first: bool):
    """`fn(x, c)` (`fn(c, x)` with `constant_first`) of a C-contiguous `x` and a broadcast
    constant `c` of its shape, with `c` as runs of its value along the flat `x`."""
    flat = x.reshape(-1)
    n = flat.size
    result = np.empty(n, x.dtype) if out is None else out.reshape(-1)
    run = np.full(min(n, _RUN), _constant(c), x.dtype)
    whole = n - n % run.size
    for lo, hi, width in ((0, whole, run.size), (whole, n, n - whole)):
        if hi > lo:
            part, const = flat[lo:hi].reshape(-1, width), run[:width]
            args = (const, part) if constant_first else (part, const)
            fn(*args, out=result[lo:hi].reshape(-1, width))
    return result.reshape(x.shape) if out is None else out


SHARED.add_factory(b.Maximum, _extremum("maximum"), out=True)
SHARED.add_factory(b.Minimum, _extremum("minimum"), out=True)


@body(b.FloorDivide)
def floor_divide(xp, p, x, y):
    return xp.floor_divide(_no_bool(x), _no_bool(y))


@body(b.Remainder)
def remainder(xp, p, x, y):
    return xp.remainder(widen(_no_bool(x)), widen(_no_bool(y)))


@body(b.Power)
def power(xp, p, x, y):
    x, y = widen(_no_bool(x)), widen(_no_bool(y))
    if x.dtype.kind != "i":
        return xp.power(x, y)
    # NumPy rejects negative integer exponents; the truncated value is 0 unless |x| is 1
    negative = y < 0
    out = xp.power(x, xp.where(negative, 0, y))
    parity = xp.where(y % 2 == 0, 1, -1).astype(x.dtype)
    inverse = xp.where(x == 1, 1, xp.where(x == -1, parity, 0)).astype(x.dtype)
    return xp.where(negative, inverse, out)


@body(b.ArcTan2)
def arctan2(xp, p, x, y):
    return xp.arctan2(widen(x), widen(y))


@body(b.LogAddExp)
def logaddexp(xp, p, x, y):
    return xp.logaddexp(widen(x), widen(y))


def _constant(v):
    """A broadcast constant (all strides 0) as a 0-d value: NumPy's fast scalar path."""
    return v[(0,) * v.ndim] if v.size and not any(v.strides) else v


@body(b.Clip)
def clip(xp, p, x, lo, hi):
    lo, hi = _constant(lo), _constant(hi)
    if x.dtype == np.bool_:
        return xp.minimum(xp.maximum(x, lo), hi)
    return xp.clip(widen(x), widen(lo), widen(hi))
