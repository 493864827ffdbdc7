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


# Terms of erf's series below 2.5 and depth of erfc's continued fraction above it that reach
# float64's accuracy (1e-15 of the series, 1e-16 of the fraction over [2.5, inf)), measured
# against `math.erf`.
_ERF_TERMS, _ERF_DEPTH = 40, 30


def _single_erf_polynomial() -> np.ndarray:
    """Power coefficients (highest first), in u = x^2 / 8 - 1, of the degree-22 Chebyshev
    interpolant of erf(x) / x over x^2 in [0, 16]: x times it is float32's erf correctly
    rounded below 4 (0.5000002 ulp over a sweep, against `math.erf`); from 4 on, erf rounds
    to 1 in float32."""
    def ratio(t: np.ndarray) -> np.ndarray:
        return np.array([math.erf(math.sqrt(v)) / math.sqrt(v) if v > 0 else _TWO_OVER_SQRT_PI
                         for v in t])

    fit = np.polynomial.Chebyshev.interpolate(ratio, 22, domain=[0.0, 16.0])
    return np.polynomial.chebyshev.cheb2poly(fit.coef)[::-1]


_SINGLE_ERF = _single_erf_polynomial()

# Giles' single-precision erfinv ("Approximating the erfinv function", GPU Computing Gems,
# 2011): a polynomial in w - 2.5 for w = -log(1 - y^2) < 5, in sqrt(w) - 3 beyond; within
# 4 ulp of float32's exact value (3.7 over a dense sweep of (-1, 1)), as MLX's own
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                  0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
               -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function (no SciPy), computed in float64: for float64, a positive-term
    series below 2.5 and the continued fraction of erfc above; for 16- and 32-bit floats, a
    polynomial correctly rounded in float32."""
    out_dtype = widen(np.asarray(x)).dtype
    x64 = np.asarray(x, np.float64)
    a = np.abs(x64)
    out = _double_erf(a) if out_dtype == np.float64 else _single_erf(a)
    out = np.where(np.isnan(x64), np.nan, out)
    return np.copysign(out, x64).astype(out_dtype, copy=False)


def _single_erf(a: np.ndarray) -> np.ndarray:
    """erf of float64 `a >= 0` to float32's accuracy (`_SINGLE_ERF`; 1 from 4 on)."""
    u = np.minimum(a * a, 16.0) / 8.0 - 1.0
    p = np.full_like(u, _SINGLE_ERF[0])
    for c in _SINGLE_ERF[1:]:
        p = p * u + c
    return np.where(a < 4, a * p, 1.0)


def _double_erf(a: np.ndarray) -> np.ndarray:
    """erf of float64 `a >= 0` to float64's accuracy."""
    small = a < 2.5
    xs = np.where(small, a, 0.0)
    # erf(x) = 2/sqrt(pi) e^(-x^2) sum_n 2^n x^(2n+1) / (2n+1)!!  (no cancellation)
    term, total, ratio = xs, xs, 2.0 * xs * xs
    for n in range(1, _ERF_TERMS):
        term = term * ratio / (2 * n + 1)
        total = total + term
    series = _TWO_OVER_SQRT_PI * np.exp(-xs * xs) * total
    # erfc(x) = e^(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
    xl = np.where(small, 3.0, a)
    frac = xl
    for k in range(_ERF_DEPTH, 0, -1):
        frac = xl + (k / 2.0) / frac
    tail = 1.0 - np.exp(-xl * xl) / math.sqrt(math.pi) / frac
    return np.where(small, series, np.where(np.isinf(a), 1.0, tail))


def erfinv(y: np.ndarray) -> np.ndarray:
    """The inverse error function: float64 by Winitzki's closed form refined by two Halley
    steps on `erf` (each triples the correct digits: 2e-3, 1e-8, then float64's rounding);
    16- and 32-bit floats by Giles' single-precision polynomial (a hundred times faster,
    within 4 ulp, as MLX's)."""
    if widen(np.asarray(y)).dtype != np.float64:
        flat = np.asarray(y, np.float32).reshape(-1)  # (1-D: NumPy makes scalars of 0-d results)
        return _giles(flat).reshape(np.shape(y))
    y64 = np.asarray(y, np.float64)
    inside = np.abs(y64) < 1
    yi = np.where(inside, y64, 0.0)
    w = np.log1p(-yi * yi)
    c = 2.0 / (math.pi * 0.147) + w / 2.0
    x = np.copysign(np.sqrt(np.sqrt(c * c - w / 0.147) - c), yi)
    for _ in range(2):
        err = erf(x) - yi
        x = x - err / (_TWO_OVER_SQRT_PI * np.exp(-x * x) + x * err)
    return np.where(inside, x, _erfinv_edge(y64))


def _erfinv_edge(y: np.ndarray) -> np.ndarray:
    """erfinv where |y| >= 1 or y is NaN: +-inf at +-1, NaN elsewhere."""
    return np.where(np.abs(y) == 1, np.copysign(np.inf, y), np.nan)


def _giles(y: np.ndarray) -> np.ndarray:
    """Giles' float32 erfinv of 1-D float32 `y`. Where every value takes the central
    polynomial (|y| < 0.9966, nearly every sample of `normal`) it runs alone, in place, with
    no selection per coefficient: the same roundings in half the calls."""
    one = np.float32(1)
    w = np.multiply(one - y, one + y)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.log(w, out=w)
    np.negative(w, out=w)
    if w.size and w.max() < 5:
        w -= np.float32(2.5)
        p = np.full_like(w, _GILES_CENTRAL[0])
        for a in _GILES_CENTRAL[1:]:
            p *= w
            p += np.float32(a)
        p *= y
        return p
    inside = np.abs(y) < 1
    w = np.where(inside, w, np.float32(0))
    central = w < 5
    t = np.where(central, w - np.float32(2.5), np.sqrt(w) - np.float32(3))
    p = np.where(central, np.float32(_GILES_CENTRAL[0]), np.float32(_GILES_TAIL[0]))
    for a, b in zip(_GILES_CENTRAL[1:], _GILES_TAIL[1:]):
        p = np.where(central, np.float32(a), np.float32(b)) + p * t
    return np.where(inside, p * y, _erfinv_edge(y).astype(np.float32))


@kernel(u.Erf)
def erf_(p, x):
    return erf(x)


@kernel(u.ErfInv)
def erfinv_(p, x):
    return erfinv(x)


if mkl_library.PATH is not None or native.compiler() is not None:  # (else NumPy's ufuncs)
    table.add(u.Exp, widening(vector_math.exp), out=True, replace=True)
    table.add(u.Tanh, widening(vector_math.tanh), out=True, replace=True)
