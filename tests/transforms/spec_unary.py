"""Rule rows of `nuvec.ops.unary`, `rounding` and `complex_parts`: every primitive, float64
inputs in each function's safe domain."""

from __future__ import annotations

import numpy as np

import nuvec as mx
from nuvec.ops import complex_parts as c
from nuvec.ops import rounding as r
from nuvec.ops import unary as u
from nuvec.ops.families import apply
from nuvec.testing import OpSpec


def uniform(low: float, high: float, shape=(2, 3)):
    return lambda rng: [rng.uniform(low, high, size=shape)]


def smooth(name, fn, cls, low=-2.0, high=2.0, **options) -> OpSpec:
    return OpSpec(name, fn, uniform(low, high), [cls], **options)


def complex_input(rng):
    return [(rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))).astype(np.complex64)]


def complex64(name, fn, cls) -> OpSpec:
    """A row on complex64 inputs: float32 precision, so float32 step and tolerances."""
    return OpSpec(name, fn, complex_input, [cls], eps=1e-3, rtol=2e-3, atol=2e-3, jvp_rtol=1e-4,
                  jvp_atol=1e-5)


SPECS = [
    smooth("exp", mx.exp, u.Exp),
    smooth("expm1", mx.expm1, u.Expm1),
    smooth("log", mx.log, u.Log, 0.2, 3.0),
    smooth("log2", mx.log2, u.Log, 0.2, 3.0),
    smooth("log10", mx.log10, u.Log, 0.2, 3.0),
    smooth("log1p", mx.log1p, u.Log1p, -0.5, 3.0),
    smooth("sqrt", mx.sqrt, u.Sqrt, 0.2, 3.0),
    smooth("rsqrt", mx.rsqrt, u.Rsqrt, 0.2, 3.0),
    smooth("square", mx.square, u.Square),
    smooth("sin", mx.sin, u.Sin),
    smooth("cos", mx.cos, u.Cos),
    smooth("tan", mx.tan, u.Tan, -1.2, 1.2),
    smooth("arcsin", mx.arcsin, u.ArcSin, -0.9, 0.9),
    smooth("arccos", mx.arccos, u.ArcCos, -0.9, 0.9),
    smooth("arctan", mx.arctan, u.ArcTan),
    smooth("sinh", mx.sinh, u.Sinh),
    smooth("cosh", mx.cosh, u.Cosh),
    smooth("tanh", mx.tanh, u.Tanh),
    smooth("arcsinh", mx.arcsinh, u.ArcSinh),
    smooth("arccosh", mx.arccosh, u.ArcCosh, 1.2, 3.0),
    smooth("arctanh", mx.arctanh, u.ArcTanh, -0.8, 0.8),
    smooth("sigmoid", mx.sigmoid, u.Sigmoid, -4.0, 4.0),
    # the rules of tanh and sigmoid: a cotangent times the derivative, from the output
    OpSpec("tanh_derivative_product", lambda g, out: apply(u.DerivativeProduct("tanh"), g, out),
           lambda rng: [rng.standard_normal((2, 3)), rng.uniform(-0.9, 0.9, size=(2, 3))],
           [u.DerivativeProduct]),
    OpSpec("tanh_derivative_of_the_seed",
           lambda out: apply(u.DerivativeProduct("tanh", False), out), uniform(-0.9, 0.9),
           [u.DerivativeProduct]),
    OpSpec("sigmoid_derivative_of_the_seed",
           lambda out: apply(u.DerivativeProduct("sigmoid", False), out), uniform(0.1, 0.9),
           [u.DerivativeProduct]),
    OpSpec("sigmoid_derivative_product",
           lambda g, out: apply(u.DerivativeProduct("sigmoid"), g, out),
           lambda rng: [rng.standard_normal((2, 3)), rng.uniform(0.1, 0.9, size=(2, 3))],
           [u.DerivativeProduct]),
    # relu's rule (`maximum(x, 0)`): outputs away from the kink, both signs
    OpSpec("relu_derivative_product",
           lambda g, out: apply(u.DerivativeProduct("relu"), g, out),
           lambda rng: [rng.standard_normal((2, 3)),
                        rng.uniform(0.2, 1.0, size=(2, 3)) * rng.choice([-1.0, 1.0], (2, 3))],
           [u.DerivativeProduct]),
    OpSpec("relu_derivative_of_the_seed",
           lambda out: apply(u.DerivativeProduct("relu", False), out),
           lambda rng: [rng.uniform(0.2, 1.0, size=(2, 3)) * rng.choice([-1.0, 1.0], (2, 3))],
           [u.DerivativeProduct]),
    smooth("erf", mx.erf, u.Erf),
    smooth("erfinv", mx.erfinv, u.ErfInv, -0.9, 0.9),
    smooth("abs", mx.abs, u.Abs, 0.1, 2.0),
    smooth("abs_negative", mx.abs, u.Abs, -2.0, -0.1),
    smooth("negative", mx.negative, u.Negative),
    # piecewise constant: zero derivative away from the steps (which random inputs avoid)
    smooth("sign", lambda x: mx.sign(x) * x, u.Sign),
    smooth("floor", lambda x: mx.floor(x) + x, r.Floor),
    smooth("ceil", mx.ceil, r.Ceil),
    smooth("round", mx.round, r.Round),
    smooth("round_decimals", lambda x: mx.round(x, 1) * x, r.Round),
    smooth("trunc", mx.trunc, r.Trunc),
    # a float32 round trip: float32 step and tolerances
    smooth("astype_float32_back", lambda x: mx.astype(mx.astype(x, mx.float32), mx.float64),
           u.AsType, eps=1e-3, rtol=1e-4, atol=1e-5, jvp_rtol=1e-6, jvp_atol=1e-7),
    smooth("degrees_radians", lambda x: mx.square(mx.radians(mx.degrees(x))), u.Square),
    smooth("nan_to_num", lambda x: mx.nan_to_num(mx.log(x)), u.Log, 0.2, 3.0),
    # an integer result carries no gradient: the checks see zero both ways
    OpSpec("astype_to_int", lambda x: mx.astype(x, mx.int32), uniform(-5, 5), [u.AsType]),
    # stop_gradient hides its input from differentiation, so finite differences disagree by
    # design; its rules are checked in tests/ops/test_unary.py
    OpSpec("stop_gradient", mx.stop_gradient, uniform(-2, 2), [u.StopGradient], grad=False),
    OpSpec("logical_not", mx.logical_not,
           lambda rng: [rng.integers(0, 2, size=(2, 3)).astype(bool)], [u.LogicalNot]),
    complex64("conjugate", mx.conj, c.Conjugate),
    complex64("real", mx.real, c.Real),
    complex64("imag", mx.imag, c.Imag),
    complex64("abs_complex", mx.abs, u.Abs),
    complex64("abs_complex_times_conj", lambda z: mx.abs(z) * mx.conj(z), u.Abs),
]
