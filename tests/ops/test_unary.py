"""Unary elementwise operations against NumPy: every dtype, special shapes, views, NaN/inf,
errors, rules that the spec table cannot check."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import nuvec as mx
from nuvec.graph import dtypes as dt
from nuvec.testing import assert_allclose

ALL = dt.ALL_DTYPES
REAL = [d for d in ALL if d is not dt.complex64]
FLOATS = [dt.float16, dt.bfloat16, dt.float32, dt.float64]

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _erfinv_reference(y: np.ndarray) -> np.ndarray:
    """erfinv by bisection on math.erf (independent of nuvec's Newton refinement)."""

    def one(v: float) -> float:
        if math.isnan(v) or abs(v) > 1:
            return math.nan
        if abs(v) == 1:
            return math.copysign(math.inf, v)
        lo, hi = -7.0, 7.0
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if math.erf(mid) < v else (lo, mid)
        return (lo + hi) / 2

    return np.vectorize(one, otypes=[np.float64])(y)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name: (nuvec op, float64/complex128 reference, (low, high) of test values, complex accepted)
FLOAT_OPS = {
    "exp": (mx.exp, np.exp, (-3, 3), True),
    "expm1": (mx.expm1, np.expm1, (-3, 3), False),
    "log": (mx.log, np.log, (0.1, 5), True),
    "log1p": (mx.log1p, np.log1p, (0, 5), True),
    "log2": (mx.log2, np.log2, (0.1, 5), True),
    "log10": (mx.log10, np.log10, (0.1, 5), True),
    "sqrt": (mx.sqrt, np.sqrt, (0, 5), True),
    "rsqrt": (mx.rsqrt, lambda x: 1 / np.sqrt(x), (0.5, 5), True),
    "sin": (mx.sin, np.sin, (-3, 3), True),
    "cos": (mx.cos, np.cos, (-3, 3), True),
    "tan": (mx.tan, np.tan, (-1.2, 1.2), True),
    "arcsin": (mx.arcsin, np.arcsin, (-1, 1), True),
    "arccos": (mx.arccos, np.arccos, (-1, 1), True),
    "arctan": (mx.arctan, np.arctan, (-3, 3), True),
    "sinh": (mx.sinh, np.sinh, (-3, 3), True),
    "cosh": (mx.cosh, np.cosh, (-3, 3), True),
    "tanh": (mx.tanh, np.tanh, (-3, 3), True),
    "arcsinh": (mx.arcsinh, np.arcsinh, (-3, 3), True),
    "arccosh": (mx.arccosh, np.arccosh, (1, 4), True),
    "arctanh": (mx.arctanh, np.arctanh, (-0.9, 0.9), True),
    "sigmoid": (mx.sigmoid, _sigmoid, (-5, 5), True),
    "erf": (mx.erf, _erf, (-3, 3), False),
    "erfinv": (mx.erfinv, _erfinv_reference, (-0.95, 0.95), False),
    "degrees": (mx.degrees, lambda x: x * (180 / np.pi), (-3, 3), True),
    "radians": (mx.radians, lambda x: x * (np.pi / 180), (-200, 200), True),
    "reciprocal": (mx.reciprocal, lambda x: 1 / x, (0.5, 4), True),
}


def sample(d: dt.Dtype, low: float, high: float, shape=(3, 4), seed: int = 0) -> np.ndarray:
    """Test values in [low, high] stored as `d` (integers rounded, unsigned clipped at 0)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(low, high, size=shape)
    if d is dt.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    if d.is_integer:
        x = np.round(x)
        if d.kind == "u":
            x = np.maximum(x, 0)
        return x.astype(d.np)
    if d is dt.complex64:
        return (x + 1j * rng.uniform(low, high, size=shape) * 0.5).astype(np.complex64)
    return x.astype(d.np)


def reference_input(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def float_result(d: dt.Dtype) -> dt.Dtype:
    return d if d.is_inexact else dt.float32


@pytest.mark.parametrize("d", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("name", sorted(FLOAT_OPS))
def test_float_function(name, d):
    op, ref, (low, high), complex_ok = FLOAT_OPS[name]
    x = sample(d, low, high)
    if d is dt.complex64 and not complex_ok:
        with pytest.raises(TypeError, match=f"^{name}: "):
            op(mx.array(x))
        return
    with np.errstate(all="ignore"):
        expected = ref(reference_input(x))
    tol = {"rtol": 1e-4, "atol": 1e-5} if d in (dt.float32, dt.complex64) else {}
    assert_allclose(op(mx.array(x, d)), expected, dtype=float_result(d), **tol)


@pytest.mark.parametrize("d", ALL, ids=lambda d: d.name)
def test_abs_sign_square_negative(d):
    x = sample(d, -3, 3)
    a = mx.array(x, d)
    ref = reference_input(x)
    out_abs = dt.float32 if d is dt.complex64 else d
    assert_allclose(mx.abs(a), np.abs(ref), dtype=out_abs)
    assert_allclose(mx.sign(a), np.sign(ref) if d is not dt.bool_ else x, dtype=d)
    assert_allclose(mx.square(a), np.square(ref) if d is not dt.bool_ else x, dtype=d)
    if d is dt.bool_:
        with pytest.raises(TypeError, match="^negative: "):
            mx.negative(a)
    else:
        assert_allclose(mx.negative(a), (-x).astype(d.np), dtype=d)


@pytest.mark.parametrize("d", REAL, ids=lambda d: d.name)
@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "round"])
def test_rounding(name, d):
    x = sample(d, -4, 4)
    if d.is_floating:  # exact halves check round-half-to-even
        x[0, :4] = np.array([0.5, 1.5, 2.5, -2.5]).astype(d.np)
    ref = {"round": np.rint}.get(name, getattr(np, name))
    expected = ref(reference_input(x)) if d.is_floating else x
    assert_allclose(getattr(mx, name)(mx.array(x, d)), expected, dtype=d)


@pytest.mark.parametrize("d", [dt.int32, dt.float16, dt.float32, dt.float64], ids=str)
@pytest.mark.parametrize("decimals", [-2, -1, 1, 2])
def test_round_decimals(decimals, d):
    x = sample(d, -500, 500) if d.is_integer else sample(d, -5, 5)
    scale = 10.0**decimals
    expected = np.rint(x.astype(np.float64) * scale) / scale
    got = mx.round(mx.array(x, d), decimals)
    assert got.dtype is d
    np.testing.assert_allclose(np.asarray(got, np.float64), expected.astype(d.np),
                               rtol=2e-3 if d is dt.float16 else 1e-5, atol=1e-2)


@pytest.mark.parametrize("decimals", [309, 400, -309, -400, 20, -300])
def test_round_decimals_past_the_float64_range(decimals):
    # 10**decimals overflows or underflows: NumPy (and MLX) give NaN there, never an exception
    x = np.array([1.5, -2.25, 0.0, 1e300])
    with np.errstate(all="ignore"):
        expected = np.round(x, decimals)
    assert_allclose(mx.round(mx.array(x, mx.float64), decimals), expected, dtype=dt.float64)


@pytest.mark.parametrize("d", ALL, ids=lambda d: d.name)
def test_predicates(d):
    x = sample(d, -3, 3)
    if d.is_inexact:
        x.flat[:4] = np.array([np.nan, np.inf, -np.inf, 0.0]).astype(d.np)
    a, ref = mx.array(x, d), reference_input(x)
    for name in ("isnan", "isinf", "isfinite"):
        assert_allclose(getattr(mx, name)(a), getattr(np, name)(ref), dtype=dt.bool_)
    assert_allclose(mx.logical_not(a), np.logical_not(ref), dtype=dt.bool_)
    if d is dt.complex64:
        return
    assert_allclose(mx.isposinf(a), np.isposinf(ref), dtype=dt.bool_)
    assert_allclose(mx.isneginf(a), np.isneginf(ref), dtype=dt.bool_)


@pytest.mark.parametrize("d", FLOATS + [dt.complex64], ids=lambda d: d.name)
def test_nan_to_num(d):
    x = sample(d, -3, 3)
    x.flat[:3] = np.array([np.nan, np.inf, -np.inf]).astype(d.np)
    a = mx.array(x, d)
    info = mx.finfo(d)
    default = np.nan_to_num(reference_input(x), nan=0.0, posinf=info.max, neginf=info.min)
    assert_allclose(mx.nan_to_num(a), default, dtype=d)
    custom = np.nan_to_num(reference_input(x), nan=1.0, posinf=7.0, neginf=-7.0)
    assert_allclose(mx.nan_to_num(a, 1.0, 7.0, -7.0), custom, dtype=d)


@pytest.mark.parametrize("d", [dt.int8, dt.uint32, dt.bool_], ids=str)
def test_nan_to_num_and_conj_leave_integers(d):
    x = sample(d, -3, 3)
    a = mx.array(x, d)
    for op in (mx.nan_to_num, mx.conj, mx.conjugate, mx.real, mx.floor):
        out = op(a)  # unchanged values, but a new handle: updating it never reaches `a`
        assert out is not a
        assert_allclose(out, x, dtype=d)
        out += 1
        assert_allclose(a, x, dtype=d)
    assert_allclose(mx.imag(a), np.zeros(a.shape, d.np), dtype=d)


def test_complex_parts():
    x = sample(dt.complex64, -3, 3)
    a = mx.array(x)
    assert_allclose(mx.conj(a), np.conj(x), dtype=dt.complex64)
    assert_allclose(mx.real(a), x.real, dtype=dt.float32)
    assert_allclose(mx.imag(a), x.imag, dtype=dt.float32)
    assert_allclose(a.real, x.real, dtype=dt.float32)
    assert_allclose(a.imag, x.imag, dtype=dt.float32)
    assert_allclose(mx.abs(a), np.abs(x), dtype=dt.float32)


@pytest.mark.parametrize("src", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("dst", ALL, ids=lambda d: d.name)
def test_astype(src, dst):
    x = sample(src, 0, 100)
    if src is dt.complex64 and dst is not dt.complex64:
        x = x.real.astype(np.complex64)  # only the real part survives a cast to a real type
    expected = (x.real if src is dt.complex64 and dst is not dt.complex64 else x).astype(dst.np)
    assert_allclose(mx.astype(mx.array(x, src), dst), expected, dtype=dst)


@pytest.mark.parametrize("dst", [d for d in ALL if d.kind in "biu"], ids=lambda d: d.name)
def test_astype_bfloat16_to_integer_casts_as_float32(dst, device):
    if device == mx.Device(mx.gpu):
        pytest.skip("out-of-range casts on the GPU are CuPy's, for float32 too")
    # out-of-range values, infinities and NaN wrap as float32's do (MLX), not to ml_dtypes' 0
    x = np.array([300, -200, -1, 40000, np.inf, -np.inf, np.nan, 3e9, 1e20, -2.5, 0],
                 ml_dtypes.bfloat16)
    with np.errstate(invalid="ignore"):
        expected = x.astype(np.float32).astype(dst.np)
    got = np.asarray(mx.astype(mx.array(x), dst))
    assert got.dtype == dst.np
    np.testing.assert_array_equal(got, expected)
    # making an array of `dst` from bfloat16 data casts the same way
    np.testing.assert_array_equal(np.asarray(mx.array(x, dtype=dst)), expected)


SHAPES = [(), (0,), (1,), (0, 3), (2, 1, 3), (1, 1)]
SHAPE_OPS = ["exp", "log", "sqrt", "tanh", "erf", "sigmoid", "arcsin"]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_special_shapes(shape):
    for name in SHAPE_OPS:
        op, ref, (low, high), _ = FLOAT_OPS[name]
        x = sample(dt.float32, low, high, shape)
        assert_allclose(op(mx.array(x)), ref(x.astype(np.float64)), dtype=dt.float32)
    x = sample(dt.float32, -3, 3, shape)
    for name in ("abs", "floor", "isnan", "logical_not", "square"):
        got = getattr(mx, name)(mx.array(x))
        assert_allclose(got, getattr(np, name)(x))


def test_transposed_and_strided_views():
    x = sample(dt.float32, 0.5, 3, (4, 6))
    a = mx.transpose(mx.array(x))
    for name in ("exp", "log", "sqrt", "erf", "arctanh"):
        op, ref, _, _ = FLOAT_OPS[name]
        with np.errstate(all="ignore"):
            expected = ref(x.T.astype(np.float64))
        assert_allclose(op(a), expected, dtype=dt.float32)
    strided = mx.array(x[::2, ::-3])  # NumPy views as data
    assert_allclose(mx.sqrt(strided), np.sqrt(x[::2, ::-3].astype(np.float64)))
    assert_allclose(mx.floor(a), np.floor(x.T))


# nuvec views of an evaluated array: (view of the nuvec array, the same view in NumPy)
NUVEC_VIEWS = {
    "step": (lambda a: a[::2, ::-3], lambda x: x[::2, ::-3]),
    "transpose": (lambda a: a.T, lambda x: x.T),
    "broadcast": (lambda a: mx.broadcast_to(a[1:2], (6, 8)),
                  lambda x: np.broadcast_to(x[1:2], (6, 8))),
}


@pytest.mark.parametrize("view", sorted(NUVEC_VIEWS))
@pytest.mark.parametrize("name", sorted(FLOAT_OPS))
def test_nuvec_views_as_inputs(name, view):
    op, ref, (low, high), _ = FLOAT_OPS[name]
    x = sample(dt.float32, low, high, (6, 8))
    base = mx.array(x)
    mx.eval(base)
    make, make_np = NUVEC_VIEWS[view]
    once = op(make(base))
    twice = mx.square(once)  # a consumer of the result, which may reuse its buffer
    expected = ref(make_np(x).astype(np.float64))
    assert_allclose(twice, expected**2, dtype=dt.float32, rtol=1e-4, atol=1e-5)
    assert_allclose(once, expected, dtype=dt.float32, rtol=1e-4, atol=1e-5)
    assert_allclose(base, x)  # the viewed array is never written


@pytest.mark.parametrize("d", [dt.float32, dt.float64], ids=str)
def test_special_values(d):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0], d.np)
    a = mx.array(x, d)
    for op, ref, _, _ in FLOAT_OPS.values():
        with np.errstate(all="ignore"):
            expected = ref(x.astype(np.float64))
        assert_allclose(op(a), expected, dtype=d)
    for name in ("abs", "sign", "floor", "ceil", "trunc", "square"):
        assert_allclose(getattr(mx, name)(a), getattr(np, name)(x), dtype=d)
    assert_allclose(mx.round(a), np.rint(x), dtype=d)


def test_erf_is_accurate_in_float64():
    x = np.concatenate([np.linspace(-6, 6, 241), [1e-300, -1e-10, 2.4999, 2.5, 2.5001]])
    got = np.asarray(mx.erf(mx.array(x, mx.float64)))
    np.testing.assert_allclose(got, _erf(x), rtol=1e-14, atol=1e-16)
    y = np.array([-0.999999, -0.5, 1e-12, 0.3, 0.99999])
    inverse = np.asarray(mx.erfinv(mx.array(y, mx.float64)))
    np.testing.assert_allclose(_erf(inverse), y, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(inverse, _erfinv_reference(y), rtol=1e-10)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16])
def test_erfinv_of_central_values_alone_is_the_same_as_beside_tail_values(dtype):
    # values all within |y| < 0.9966 take the central polynomial alone, with no selection;
    # beside a tail value (or 1) they take the selecting path: the same bits either way
    y = np.concatenate([np.linspace(-0.996, 0.996, 4001), [0.0, -0.0]]).astype(dtype.np)
    alone = np.asarray(mx.erfinv(mx.array(y)))
    for extra in (0.9999, 1.0, -1.0):
        mixed = np.asarray(mx.erfinv(mx.array(np.append(y, extra).astype(dtype.np))))[:-1]
        np.testing.assert_array_equal(alone.view(np.uint8), mixed.view(np.uint8))
    assert np.asarray(mx.erfinv(mx.array(0.5, dtype))).shape == ()


def test_float32_erf_and_erfinv_are_within_a_few_ulp():
    # erfinv below float64 is Giles' single-precision polynomial (within 4 ulp, as MLX's);
    # erf a polynomial computed in float64, correctly rounded to float32
    y = np.concatenate([np.linspace(-0.9999999, 0.9999999, 20001),
                        1 - np.logspace(-7, -1, 200), -1 + np.logspace(-7, -1, 200)])
    y = y.astype(np.float32)
    exact = np.asarray(mx.erfinv(mx.array(y, mx.float64)))  # checked above to 1e-10
    got = np.asarray(mx.erfinv(mx.array(y))).astype(np.float64)
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - exact) / ulp) <= 4
    assert np.asarray(mx.erfinv(mx.array([1.0, -1.0, 1.5], mx.float32))).tolist()[:2] == [
        math.inf, -math.inf]
    x = np.linspace(-6, 6, 2401).astype(np.float32)
    ulp = np.spacing(np.abs(_erf(x)).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(np.asarray(mx.erf(mx.array(x)), np.float64) - _erf(x)) / ulp) <= 0.501


def test_stop_gradient():
    x = mx.array([3.0, -2.0])
    assert_allclose(mx.stop_gradient(x), [3.0, -2.0], dtype=dt.float32)
    g = mx.grad(lambda v: mx.sum(v * mx.stop_gradient(v)))(x)
    assert_allclose(g, [3.0, -2.0])
    g = mx.grad(lambda v: mx.sum(mx.stop_gradient(v) * 2.0) + mx.sum(v))(x)
    assert_allclose(g, [1.0, 1.0])
    _, tangents = mx.jvp(lambda v: mx.stop_gradient(v) * v, [x], [mx.array([1.0, 1.0])])
    assert_allclose(tangents[0], [3.0, -2.0])
    batched = mx.vmap(mx.stop_gradient)(mx.array([[1.0, 2.0], [3.0, 4.0]]))
    assert_allclose(batched, [[1.0, 2.0], [3.0, 4.0]])


def test_astype_rules():
    x = mx.array([1.5, -2.25], mx.float64)
    g = mx.grad(lambda v: mx.sum(mx.astype(v, mx.float32) * 2.0))(x)
    assert_allclose(g, [2.0, 2.0], dtype=dt.float64)
    _, (t,) = mx.jvp(lambda v: mx.astype(v, mx.float16), [x], [mx.array([1.0, 3.0], mx.float64)])
    assert_allclose(t, [1.0, 3.0], dtype=dt.float16)
    g = mx.grad(lambda v: mx.sum(mx.astype(mx.astype(v, mx.int32), mx.float32) + v))(x)
    assert_allclose(g, [1.0, 1.0], dtype=dt.float64)


def test_step_functions_have_zero_gradient():
    x = mx.array([0.3, -1.7], mx.float64)
    for op in (mx.floor, mx.ceil, mx.round, mx.trunc, mx.sign):
        assert_allclose(mx.grad(lambda v, op=op: mx.sum(op(v)))(x), [0.0, 0.0])


def test_abs_gradient_uses_sign():
    g = mx.grad(lambda v: mx.sum(mx.abs(v)))(mx.array([-2.0, 3.0, 0.0]))
    assert_allclose(g, [-1.0, 1.0, 0.0])


def test_methods():
    x = np.array([[0.5, 2.0], [1.5, 4.0]], np.float32)
    a = mx.array(x)
    for name in ("abs", "exp", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "square",
                 "reciprocal", "sin", "cos"):
        assert_allclose(getattr(a, name)(), getattr(mx, name)(a))
    assert_allclose(a.round(), np.rint(x))
    assert_allclose(a.round(1), np.round(x, 1))
    assert a.conj() is not a and a.conj().tolist() == x.tolist()
    assert a.astype(mx.int32).dtype is mx.int32
    assert_allclose(abs(-a), x)
    assert_allclose(-a, -x)
    assert (+a) is not a
    assert_allclose(+a, x, dtype=mx.float32)


def test_weak_scalar_inputs():
    assert_allclose(mx.exp(0), 1.0, dtype=dt.float32)
    assert_allclose(mx.sqrt(4.0), 2.0, dtype=dt.float32)
    assert_allclose(mx.abs(-3), 3, dtype=dt.int32)


@pytest.mark.parametrize("name", ["expm1", "erf", "erfinv", "floor", "ceil", "trunc",
                                  "isposinf", "isneginf"])
def test_complex_rejected(name):
    with pytest.raises(TypeError, match=f"^{name}: not supported for complex64"):
        getattr(mx, name)(mx.array([1 + 1j]))


def test_round_of_complex_rounds_both_parts():
    z = np.array([1.26 + 2.71j, -0.5 + 1.5j, 2.5 - 3.55j], np.complex64)
    assert_allclose(mx.round(mx.array(z)), np.round(z), dtype=mx.complex64)
    assert_allclose(mx.round(mx.array(z), 1), np.round(z, 1), dtype=mx.complex64)


def test_errors():
    with pytest.raises(TypeError, match="^negative: "):
        mx.negative(mx.array([True]))
    with pytest.raises(TypeError, match="^round: decimals must be an int"):
        mx.round(mx.array([1.0]), 1.5)
    with pytest.raises(TypeError, match="^nan_to_num: posinf must be a real number"):
        mx.nan_to_num(mx.array([1.0]), posinf="big")
    with pytest.raises(TypeError, match="^astype: unsupported dtype"):
        mx.astype(mx.array([1.0]), "float128")
    with pytest.raises(TypeError, match="^exp: cannot convert"):
        mx.exp("text")
    with pytest.raises(TypeError, match="^abs: cannot convert"):
        mx.abs(object())


def test_bfloat16_results_are_bfloat16_data():
    got = np.asarray(mx.exp(mx.array([0.0, 1.0], mx.bfloat16)))
    assert got.dtype == ml_dtypes.bfloat16


# Real functions of real inputs through complex64 intermediates: finite differences fix the
# sign conventions of the complex rules (Multiply's transpose, without conjugation, as MLX).
COMPLEX_PATHS = {
    "imag": lambda x, y: mx.imag((x + 1j * y) * (2 - 3j)),
    "real": lambda x, y: mx.real((x + 1j * y) * (2 - 3j)),
    "conj_imag": lambda x, y: mx.imag(mx.conj(x + 1j * y) * (2 - 3j)),
    "conj_real": lambda x, y: mx.real(mx.conj(x + 1j * y) * (1 + 2j)),
    "abs": lambda x, y: mx.abs((x + 1j * y) * (2 - 3j)),
}


@pytest.mark.parametrize("name", list(COMPLEX_PATHS))
def test_complex_rules_against_finite_differences(name):
    from nuvec.testing import check_grads, check_jvp_vjp

    rng = np.random.default_rng(21)
    x, y = (mx.array(rng.standard_normal(4) + 0.5) for _ in range(2))
    f = COMPLEX_PATHS[name]
    check_grads(f, [x, y], eps=1e-3, rtol=2e-3, atol=2e-3)
    check_jvp_vjp(f, [x, y], rtol=1e-4, atol=1e-5)


def test_imag_gradient_sign():
    gx, gy = mx.grad(lambda x, y: mx.imag(x + 1j * y), argnums=(0, 1))(mx.array(0.5),
                                                                        mx.array(2.0))
    assert (gx.item(), gy.item()) == (0.0, 1.0)


@pytest.mark.parametrize("d", [dt.float32, dt.float64], ids=lambda d: d.name)
def test_sigmoid_is_relative_accurate_on_both_tails_and_keeps_specials(d):
    # large arrays (the vector-math path too), random signs, both tails and the specials
    rng = np.random.default_rng(6)
    x = rng.normal(0, 30, 1 << 16).astype(d.np)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 88.0, -88.0,
                        -103.9, -104.5, 745.0, -745.0], d.np)
    x[:special.size] = special
    got = np.asarray(mx.sigmoid(mx.array(x, d)))
    with np.errstate(over="ignore"):
        want = 1.0 / (1.0 + np.exp(-x.astype(np.longdouble)))
    finite = want > np.finfo(d.np).tiny  # (below it, subnormal results: absolute error)
    rel = np.abs(got[finite] - want[finite]) / want[finite]
    assert float(rel.max()) < 8 * np.finfo(d.np).eps
    assert (np.abs(got[~finite & ~np.isnan(x)] - want[~finite & ~np.isnan(x)])
            <= np.finfo(d.np).smallest_subnormal * 2).all()
    assert np.isnan(got[0]) and got[1] == 1 and got[2] == 0 and got[3] == got[4] == 0.5
