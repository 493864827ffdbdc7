"""CPU kernels of `nuvec.ops.unary` that only NumPy has: `erf` and `erfinv` to float64
accuracy without SciPy (the GPU uses CuPy's special functions), and `exp` and `tanh` through
`nuvec.backends.vector_math` where it may use a library (MKL's vector math where the `mkl`
package is installed, else nuvec's own C `exp` where a C compiler is found)."""

from __future__ import annotations

import math

import numpy as np

from nuvec.backends import mkl_library, native, vector_math
from nuvec.backends.common.unary import widen, widening
from nuvec.backends.numpy.registry import kernel, table
from nuvec.ops import unary as u

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function to float64 accuracy (no SciPy): a positive-term series below 2.5,
    the continued fraction of erfc above."""
    x64 = np.asarray(x, np.float64)
    a = np.abs(x64)
    small = a < 2.5
    xs = np.where(small, a, 0.0)
    # erf(x) = 2/sqrt(pi) e^(-x^2) sum_n 2^n x^(2n+1) / (2n+1)!!  (no cancellation)
    term, total, ratio = xs, xs, 2.0 * xs * xs
    for n in range(1, 60):
        term = term * ratio / (2 * n + 1)
        total = total + term
    series = _TWO_OVER_SQRT_PI * np.exp(-xs * xs) * total
    # erfc(x) = e^(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
    xl = np.where(small, 3.0, a)
    frac = xl
    for k in range(60, 0, -1):
        frac = xl + (k / 2.0) / frac
    tail = 1.0 - np.exp(-xl * xl) / math.sqrt(math.pi) / frac
    out = np.where(small, series, np.where(np.isinf(a), 1.0, tail))
    out = np.where(np.isnan(x64), np.nan, out)
    return np.copysign(out, x64).astype(widen(np.asarray(x)).dtype, copy=False)


def erfinv(y: np.ndarray) -> np.ndarray:
    """The inverse error function: Winitzki's closed form refined by four Halley steps on `erf`."""
    y64 = np.asarray(y, np.float64)
    inside = np.abs(y64) < 1
    yi = np.where(inside, y64, 0.0)
    w = np.log1p(-yi * yi)
    c = 2.0 / (math.pi * 0.147) + w / 2.0
    x = np.copysign(np.sqrt(np.sqrt(c * c - w / 0.147) - c), yi)
    for _ in range(4):
        err = erf(x) - yi
        x = x - err / (_TWO_OVER_SQRT_PI * np.exp(-x * x) + x * err)
    edge = np.where(np.abs(y64) == 1, np.copysign(np.inf, y64), np.nan)
    out = np.where(inside, x, edge)
    return out.astype(widen(np.asarray(y)).dtype, copy=False)


@kernel(u.Erf)
def erf_(p, x):
    return erf(x)


@kernel(u.ErfInv)
def erfinv_(p, x):
    return erfinv(x)


if mkl_library.PATH is not None or native.compiler() is not None:  # (else NumPy's ufuncs)
    table.add(u.Exp, widening(vector_math.exp), out=True, replace=True)
    table.add(u.Tanh, widening(vector_math.tanh), out=True, replace=True)
