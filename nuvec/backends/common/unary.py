"""Shared bodies of `nuvec.ops.unary` (NumPy and CuPy agree on these ufuncs).

float16 and bfloat16 inputs of transcendental functions compute in float32 (the evaluator casts
back). Kernels run in their backend's error scope: NaN and inf results of functions with domain
limits are the answer, not a warning. (On the GPU bfloat16 reaches bodies as float32.)
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from nuvec.backends import vector_math
from nuvec.backends.common.registry import SHARED, body
from nuvec.graph.primitive import Copy
from nuvec.ops import unary as u

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
HALF = frozenset((np.dtype(np.float16), BFLOAT16))  # hashed: a fast `in`


def widen(x):
    """`x` in float32 if it is a 16-bit float, else unchanged."""
    return x.astype(np.float32) if x.dtype in HALF else x


@body(Copy, u.StopGradient)
def identity(xp, p, x):
    return x.view()  # a view, so the memory figures count no second buffer


@body(u.AsType)
def astype(xp, p, x):
    if x.dtype.kind == "c" and p.dtype.kind != "c":
        x = x.real  # a cast to a real type keeps the real part (without NumPy's warning)
    elif x.dtype == BFLOAT16 and p.dtype.kind in "biu":
        # through float32 (exact): out-of-range values and NaN then wrap as float32's do
        # (MLX), where ml_dtypes' own cast gives 0
        x = x.astype(np.float32)
    return x.astype(p.dtype.np)


def plain(name: str):
    """A factory of kernels applying the ufunc `name` as it is: exact in every dtype."""

    def make(xp):
        fn = getattr(xp, name)
        # no `out=None` passed on: a ufunc parses every keyword it gets (small arrays notice)
        return lambda p, x, out=None: fn(x) if out is None else fn(x, out=out)

    return make


def widening(fn):
    """A kernel applying `fn` (a ufunc, or a function taking `out=` as one does), 16-bit
    floats in float32."""

    def compute(p, x, out=None):
        if x.dtype in HALF:
            return fn(widen(x))
        return fn(x) if out is None else fn(x, out=out)

    return compute


def widened(name: str):
    """A factory of kernels applying the ufunc `name`, 16-bit floats in float32."""

    def make(xp):
        return widening(getattr(xp, name))

    return make


for _cls, _name in (
    (u.Negative, "negative"), (u.Abs, "abs"), (u.Sign, "sign"), (u.LogicalNot, "logical_not"),
):  # fmt: skip
    SHARED.add_factory(_cls, plain(_name), out=True)


@body(u.Log)
def log(xp, p, x):
    fn = {2.0: xp.log2, 10.0: xp.log10}.get(p.base, xp.log)
    return fn(widen(x))


@body(u.Rsqrt)
def rsqrt(xp, p, x):
    return 1.0 / xp.sqrt(widen(x))


@body(u.Sigmoid)
def sigmoid(xp, p, x):
    extent = max(x.size, getattr(x.base, "size", 0))  # (of the array `x` may be a piece of)
    x = widen(x)
    if x.dtype.kind == "c":
        return 1.0 / (1.0 + xp.exp(-x))
    if xp is np:  # float32 through `vector_math.c` in one pass where it is in use
        out = vector_math.sigmoid(x, whole=extent)
        if out is not None:
            return out
    # e**-|x| never overflows: 1 / (1 + e) for x >= 0, e / (1 + e) below; on NumPy through
    # MKL's vector math where installed, taking the path of the whole array. The numerator is
    # max(e, [x >= 0]): 1 or e as `where(x >= 0, 1, e)` gives them (e <= 1, NaN kept), without
    # its branch per element (4.5 of 7.3 ms for a [16, 128, 352] float32 array, random signs)
    e = xp.asarray(xp.abs(x))  # (NumPy gives a 0-d input a scalar)
    xp.negative(e, out=e)
    e = vector_math.exp_of(xp, e, e, whole=extent)
    top = xp.empty_like(e)
    xp.greater_equal(x, 0, out=top)
    xp.maximum(e, top, out=top)
    e += 1.0
    return xp.divide(top, e, out=top)


for _cls, _name in (
    (u.Square, "square"), (u.Exp, "exp"), (u.Expm1, "expm1"), (u.Log1p, "log1p"),
    (u.Sqrt, "sqrt"), (u.Sin, "sin"), (u.Cos, "cos"), (u.Tan, "tan"),
    (u.ArcSin, "arcsin"), (u.ArcCos, "arccos"), (u.ArcTan, "arctan"), (u.Sinh, "sinh"),
    (u.Cosh, "cosh"), (u.Tanh, "tanh"), (u.ArcSinh, "arcsinh"), (u.ArcCosh, "arccosh"),
    (u.ArcTanh, "arctanh"),
):  # fmt: skip
    SHARED.add_factory(_cls, widened(_name), out=True)


@body(u.DerivativeProduct)
def derivative_product(xp, p, *inputs):
    # in the composition's order, each step rounded to the dtype: the same values
    out = inputs[-1]
    if p.kind == "relu":  # (a product with the mask casts it: `g * 1` or `g * 0`)
        mask = xp.greater(out, 0)
        return xp.multiply(inputs[0], mask) if p.scaled else xp.asarray(mask).astype(out.dtype)
    if p.kind == "tanh":
        r = xp.asarray(xp.multiply(out, out))  # (NumPy gives 0-d inputs a scalar)
        xp.subtract(1, r, out=r)
    else:
        r = xp.subtract(1, out)
        r *= out
    if p.scaled:
        r *= inputs[0]
    return r
