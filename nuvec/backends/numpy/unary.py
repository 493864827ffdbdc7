"""CPU kernels of `nuvec.ops.unary`.

float16 and bfloat16 inputs of transcendental functions compute in float32 (the evaluator casts
back). The evaluator runs kernels under `np.errstate(all="ignore")`: NaN and inf results of
functions with domain limits are the answer, not a warning.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.graph.primitive import Copy
from nuvec.ops import unary as u

HALF = frozenset((np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)))  # hashed: a fast `in`
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def widen(x: np.ndarray) -> np.ndarray:
    """`x` in float32 if it is a 16-bit float, else unchanged."""
    return x.astype(np.float32) if x.dtype in HALF else x


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


@kernel(Copy, u.StopGradient)
def identity(p, x):
    return x.view()  # a view, so the memory figures count no second buffer


@kernel(u.AsType)
def astype(p, x):
    if x.dtype.kind == "c" and p.dtype.kind != "c":
        x = x.real  # a cast to a real type keeps the real part (without NumPy's warning)
    return x.astype(p.dtype.np)


def plain(fn):
    """A kernel applying the ufunc `fn` as it is: exact in every dtype, never warns."""
    return lambda p, x, out=None: fn(x, out=out)


for _cls, _fn in (
    (u.Negative, np.negative), (u.Abs, np.abs), (u.Sign, np.sign),
    (u.LogicalNot, np.logical_not),
):  # fmt: skip
    kernel(_cls, out=True)(plain(_fn))


@kernel(u.Log)
def log(p, x):
    fn = {2.0: np.log2, 10.0: np.log10}.get(p.base, np.log)
    return fn(widen(x))


@kernel(u.Rsqrt)
def rsqrt(p, x):
    return 1.0 / np.sqrt(widen(x))


@kernel(u.Sigmoid)
def sigmoid(p, x):
    x = widen(x)
    if x.dtype.kind == "c":
        return 1.0 / (1.0 + np.exp(-x))
    # e**-|x| never overflows: 1 / (1 + e) for x >= 0, e / (1 + e) below
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0, e) / (1.0 + e)


@kernel(u.Erf)
def erf_(p, x):
    return erf(x)


@kernel(u.ErfInv)
def erfinv_(p, x):
    return erfinv(x)


def widened(fn):
    """A kernel applying `fn` to 16-bit floats in float32, with IEEE results and no warnings."""

    def compute(p, x, out=None):
        return fn(widen(x)) if x.dtype in HALF else fn(x, out=out)

    return compute


for _cls, _fn in (
    (u.Square, np.square), (u.Exp, np.exp), (u.Expm1, np.expm1), (u.Log1p, np.log1p),
    (u.Sqrt, np.sqrt), (u.Sin, np.sin), (u.Cos, np.cos), (u.Tan, np.tan),
    (u.ArcSin, np.arcsin), (u.ArcCos, np.arccos), (u.ArcTan, np.arctan), (u.Sinh, np.sinh),
    (u.Cosh, np.cosh), (u.Tanh, np.tanh), (u.ArcSinh, np.arcsinh), (u.ArcCosh, np.arccosh),
    (u.ArcTanh, np.arctanh),
):  # fmt: skip
    kernel(_cls, out=True)(widened(_fn))
