"""Binary elementwise operations against NumPy: every dtype, broadcasting, promotion (hypothesis),
division semantics, NaN/inf, gradients of ties and powers, operators, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nuvec as mx
from nuvec.graph import dtypes as dt
from nuvec.testing import assert_allclose

ALL = dt.ALL_DTYPES
REAL = [d for d in ALL if d is not dt.complex64]
INTS = list(dt.INTEGER_DTYPES)


def sample(d: dt.Dtype, shape=(3, 4), seed=0, low=-5, high=5, nonzero=False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if d is dt.bool_:
        x = rng.integers(0, 2, size=shape).astype(bool)
        return np.ones(shape, bool) if nonzero else x
    x = rng.uniform(low, high, size=shape)
    if d.is_integer:
        x = np.round(x)
        if d.kind == "u":
            x = np.abs(x)
    if nonzero:
        x = np.where(x == 0, 1, x)
    if d is dt.complex64:
        return (x + 1j * rng.uniform(low, high, size=shape)).astype(np.complex64)
    return x.astype(d.np)


def ref(x: np.ndarray) -> np.ndarray:
    """NumPy reference input: half floats widened to float64, other dtypes as they are."""
    if x.dtype.kind == "f" or x.dtype.name == "bfloat16":
        return x.astype(np.float64)
    return x


def at_least_float(d: dt.Dtype) -> dt.Dtype:
    return d if d.is_inexact else dt.float32


# name: (nuvec op, NumPy reference, result dtype from the input dtype, dtypes accepted)
ARITHMETIC = {
    "add": (mx.add, np.add, lambda d: d, ALL),
    "subtract": (mx.subtract, lambda a, b: np.not_equal(a, b) if a.dtype == bool
                 else np.subtract(a, b), lambda d: d, ALL),
    "multiply": (mx.multiply, np.multiply, lambda d: d, ALL),
    "divide": (mx.divide, np.divide, at_least_float, ALL),
    "maximum": (mx.maximum, np.maximum, lambda d: d, ALL),
    "minimum": (mx.minimum, np.minimum, lambda d: d, ALL),
    "power": (mx.power, np.power, lambda d: d, ALL),
    "arctan2": (mx.arctan2, np.arctan2, at_least_float, REAL),
    "logaddexp": (mx.logaddexp, np.logaddexp, at_least_float, REAL),
}
COMPARISONS = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


@pytest.mark.parametrize(
    "name, d",
    [(name, d) for name in sorted(ARITHMETIC) for d in ARITHMETIC[name][3]],
    ids=lambda v: v if isinstance(v, str) else v.name,
)
def test_arithmetic(name, d):
    op, np_op, result, _ = ARITHMETIC[name]
    x = sample(d, seed=1)
    y = sample(d, seed=2, nonzero=True)
    if name == "power":
        x = sample(d, seed=1, low=0, high=3)
        y = sample(d, seed=2, low=0, high=3)
        if d is dt.bool_:
            x, y = x.astype(np.uint8), y.astype(np.uint8)
    out = result(d)
    xr, yr = ref(x), ref(y)
    if out.is_inexact and not d.is_inexact:  # integer inputs of float functions: float64 reference
        xr, yr = xr.astype(np.float64), yr.astype(np.float64)
    with np.errstate(all="ignore"):
        expected = np_op(xr, yr)
    tol = {"rtol": 3e-4, "atol": 1e-4} if out in (dt.float32, dt.complex64) else {}
    assert_allclose(op(mx.array(x, d), mx.array(y, d)), expected.astype(out.np), dtype=out, **tol)


@pytest.mark.parametrize("d", ALL, ids=lambda d: d.name)
def test_comparisons(d):
    x, y = sample(d, seed=1), sample(d, seed=2)
    x.flat[:3] = y.flat[:3]  # some ties
    for name in COMPARISONS:
        assert_allclose(getattr(mx, name)(mx.array(x, d), mx.array(y, d)),
                        getattr(np, name)(ref(x), ref(y)), dtype=dt.bool_)


@pytest.mark.parametrize("d", REAL, ids=lambda d: d.name)
def test_floor_divide_remainder_divmod(d):
    x = sample(d, seed=1, low=-20, high=20)
    y = sample(d, seed=2, low=-6, high=6, nonzero=True)
    a, b = mx.array(x, d), mx.array(y, d)
    xr, yr = (x.astype(np.uint8), y.astype(np.uint8)) if d is dt.bool_ else (ref(x), ref(y))
    expected_q = np.floor_divide(xr, yr).astype(d.np)
    expected_r = np.remainder(xr, yr).astype(d.np)
    tol = {"atol": 0.05, "rtol": 0.02} if d in (dt.float16, dt.bfloat16) else {}
    assert_allclose(mx.floor_divide(a, b), expected_q, dtype=d)
    assert_allclose(mx.remainder(a, b), expected_r, dtype=d, **tol)
    pair = mx.divmod(a, b)
    assert type(pair) is list  # as MLX's
    q, r = pair
    assert_allclose(q, expected_q, dtype=d)
    assert_allclose(r, expected_r, dtype=d, **tol)


def test_division_signs_follow_python():
    a = mx.array([-7, 7, -7, 7, -1, 1, -5, 5])
    b = mx.array([2, 2, -2, -2, 3, -3, 3, -3])
    av, bv = a.tolist(), b.tolist()
    assert mx.floor_divide(a, b).tolist() == [x // y for x, y in zip(av, bv)]
    assert mx.remainder(a, b).tolist() == [x % y for x, y in zip(av, bv)]
    assert (a // b).tolist() == [x // y for x, y in zip(av, bv)]
    assert (a % b).tolist() == [x % y for x, y in zip(av, bv)]
    f = mx.array([-7.5, 7.5]) % mx.array([2.0, -2.0])
    assert f.tolist() == [-7.5 % 2.0, 7.5 % -2.0]


@pytest.mark.parametrize("d", [dt.int8, dt.uint16, dt.int32, dt.int64], ids=str)
def test_integer_division_by_zero_is_zero_without_warnings(d, recwarn):
    a, z = mx.array([5, 0, 3], d), mx.array([0, 0, 0], d)
    assert mx.floor_divide(a, z).tolist() == [0, 0, 0]
    assert mx.remainder(a, z).tolist() == [0, 0, 0]
    assert mx.divide(a, z).tolist()[0] == float("inf")
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_float_specials_without_warnings(recwarn):
    x = mx.array([1.0, -1.0, 0.0, np.nan, np.inf])
    z = mx.zeros((5,))
    with np.errstate(all="ignore"):
        xs, zs = np.asarray(x), np.asarray(z)
        for op, np_op in ((mx.divide, np.divide), (mx.remainder, np.remainder),
                          (mx.floor_divide, np.floor_divide), (mx.power, np.power),
                          (mx.logaddexp, np.logaddexp), (mx.arctan2, np.arctan2),
                          (mx.maximum, np.maximum), (mx.minimum, np.minimum)):
            assert_allclose(op(x, z), np_op(xs, zs))
            assert_allclose(op(x, x), np_op(xs, xs))
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("d", [dt.float16, dt.bfloat16, dt.float32, dt.float64], ids=str)
def test_comparisons_and_logic_with_nan_and_inf(d):
    values = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0])
    x, y = np.repeat(values, 6), np.tile(values, 6)  # every pair
    a, b = mx.array(x, d), mx.array(y, d)
    for name in COMPARISONS + ["logical_and", "logical_or", "logical_xor"]:
        assert_allclose(getattr(mx, name)(a, b), getattr(np, name)(x, y), dtype=dt.bool_)
    for name in ("maximum", "minimum"):  # NaN propagates from either side
        assert_allclose(getattr(mx, name)(a, b), getattr(np, name)(x, y), dtype=d)


def test_integer_power_negative_exponent():
    base = mx.array([2, -1, -1, 1, 0, 3], mx.int32)
    exponent = mx.array([-1, -1, -2, -5, 2, 3], mx.int32)
    assert mx.power(base, exponent).tolist() == [0, -1, 1, 1, 0, 27]
    assert (mx.array([2, 3]) ** 2).tolist() == [4, 9]
    assert (2 ** mx.array([3, 4])).tolist() == [8, 16]


@pytest.mark.parametrize("d", [dt.bool_] + INTS, ids=lambda d: d.name)
def test_bitwise(d):
    x, y = sample(d, seed=1, low=0, high=100), sample(d, seed=2, low=0, high=100)
    a, b = mx.array(x, d), mx.array(y, d)
    assert_allclose(mx.bitwise_and(a, b), np.bitwise_and(x, y), dtype=d)
    assert_allclose(mx.bitwise_or(a, b), np.bitwise_or(x, y), dtype=d)
    assert_allclose(mx.bitwise_xor(a, b), np.bitwise_xor(x, y), dtype=d)
    assert_allclose(mx.bitwise_invert(a), np.invert(x), dtype=d)
    assert_allclose(a & b, x & y, dtype=d)
    assert_allclose(a | b, x | y, dtype=d)
    assert_allclose(a ^ b, x ^ y, dtype=d)
    assert_allclose(~a, ~x, dtype=d)
    shift = (y % 4).astype(d.np) if d is not dt.bool_ else y
    shifted = dt.uint8 if d is dt.bool_ else d
    s = mx.array(shift, d)
    xs, ss = x.astype(shifted.np), shift.astype(shifted.np)
    assert_allclose(mx.left_shift(a, s), np.left_shift(xs, ss), dtype=shifted)
    assert_allclose(mx.right_shift(a, s), np.right_shift(xs, ss), dtype=shifted)
    assert_allclose(a << s, np.left_shift(xs, ss), dtype=shifted)
    assert_allclose(a >> s, np.right_shift(xs, ss), dtype=shifted)


@pytest.mark.parametrize("d", ALL, ids=lambda d: d.name)
def test_logical(d):
    x, y = sample(d, seed=1, low=-1, high=1), sample(d, seed=2, low=-1, high=1)
    a, b = mx.array(x, d), mx.array(y, d)
    for name in ("logical_and", "logical_or", "logical_xor"):
        assert_allclose(getattr(mx, name)(a, b), getattr(np, name)(x, y), dtype=dt.bool_)


@pytest.mark.parametrize("d", ALL, ids=lambda d: d.name)
def test_where(d):
    c = sample(dt.bool_, seed=3)
    x, y = sample(d, seed=1), sample(d, seed=2)
    assert_allclose(mx.where(mx.array(c), mx.array(x, d), mx.array(y, d)), np.where(c, x, y),
                    dtype=d)
    # condition of another dtype, broadcast operands, weak scalar
    cond = mx.array(np.arange(4) % 2)
    got = mx.where(cond, mx.array(x, d), 0)
    out = dt.int32 if d is dt.bool_ else d  # a weak int scalar with bools gives int32
    assert_allclose(got, np.where(np.arange(4) % 2, ref(x), 0).astype(out.np), dtype=out)


def test_where_promotes_and_broadcasts():
    got = mx.where(mx.array([[True], [False]]), mx.array([1, 2, 3], mx.int8), 2.5)
    assert got.dtype is dt.float32 and got.shape == (2, 3)
    assert got.tolist() == [[1.0, 2.0, 3.0], [2.5, 2.5, 2.5]]
    assert mx.where(True, 1, 2).tolist() == 1


@pytest.mark.parametrize("d", [d for d in REAL if d is not dt.bool_], ids=str)
def test_clip(d):
    x = sample(d, seed=1, low=0, high=10)
    a, xr = mx.array(x, d), ref(x)
    assert_allclose(mx.clip(a, 2, 7), np.clip(xr, 2, 7).astype(d.np), dtype=d)
    assert_allclose(mx.clip(a, None, 7), np.minimum(xr, 7).astype(d.np), dtype=d)
    assert_allclose(mx.clip(a, 2, None), np.maximum(xr, 2).astype(d.np), dtype=d)
    lo, hi = sample(d, (4,), seed=4, low=0, high=3), sample(d, (3, 1), seed=5, low=6, high=9)
    assert_allclose(mx.clip(a, mx.array(lo, d), mx.array(hi, d)),
                    np.clip(xr, ref(lo), ref(hi)).astype(d.np), dtype=d)


def test_clip_float_bounds_on_ints_give_float32():
    assert mx.clip(mx.array([1, 5]), 1.5, 3).dtype is dt.float32


def test_clip_matches_its_composition_with_gradients():
    x = mx.array([-1.0, 0.0, 0.5, 1.0, 3.0, np.nan])
    for lo, hi in ((0.0, 1.0), (1.0, 0.0)):  # ties at both bounds; crossed bounds
        args = (x, mx.array(lo), mx.array(hi))

        def composed(v, a, b):
            return mx.minimum(mx.maximum(v, a), b)

        assert_allclose(mx.clip(*args), np.asarray(composed(*args)))
        want = mx.grad(lambda *v: mx.sum(composed(*v) * x), argnums=(0, 1, 2))(*args)
        got = mx.grad(lambda *v: mx.sum(mx.clip(*v) * x), argnums=(0, 1, 2))(*args)
        for g, w in zip(got, want):
            assert_allclose(g, np.asarray(w))
    assert mx.clip(mx.array([True, False]), False, False).tolist() == [False, False]


@pytest.mark.parametrize("d", ALL, ids=str)
def test_isclose_allclose_array_equal(d):
    x = sample(d, seed=1)
    y = x.copy()
    if d.is_inexact:
        y.flat[0] = x.flat[0] + (1e-7 if d is not dt.float16 else 1e-4) * abs(x.flat[0])
        y.flat[1] = x.flat[1] + 1.0
        x.flat[2] = y.flat[2] = np.nan
        x.flat[3] = y.flat[3] = np.inf
    a, b = mx.array(x, d), mx.array(y, d)
    for equal_nan in (False, True):
        expected = np.isclose(ref(x), ref(y), equal_nan=equal_nan)
        if d is dt.float16:  # NumPy in float64 and nuvec in float16 agree away from the edge
            expected = np.isclose(x, y, equal_nan=equal_nan)
        assert_allclose(mx.isclose(a, b, equal_nan=equal_nan), expected, dtype=dt.bool_)
        assert mx.allclose(a, b, equal_nan=equal_nan).item() == bool(expected.all())
        assert mx.allclose(a, a, equal_nan=True).item()
        assert mx.array_equal(a, b, equal_nan).item() == np.array_equal(x, y, equal_nan)
    assert mx.isclose(mx.array([1.0]), mx.array([1.05]), rtol=0.1).item()
    assert not mx.isclose(mx.array([1.0]), mx.array([1.05]), rtol=0.0, atol=0.01).item()


@pytest.mark.parametrize("d", [dt.float16, dt.float32, dt.float64, dt.complex64], ids=str)
def test_isclose_infinities(d):
    # an infinite bound must not make opposite infinities, or a finite value and inf, close
    big = 6e4 if d is dt.float16 else 3e38
    x = np.array([np.inf, -np.inf, np.inf, big, -np.inf, 1.0, np.nan])
    y = np.array([np.inf, np.inf, big, np.inf, -np.inf, np.inf, np.inf])
    a, b = mx.array(x, d), mx.array(y, d)
    for equal_nan in (False, True):
        expected = np.isclose(x, y, equal_nan=equal_nan)
        assert_allclose(mx.isclose(a, b, equal_nan=equal_nan), expected, dtype=dt.bool_)
        assert_allclose(mx.isclose(b, a, equal_nan=equal_nan), np.isclose(y, x), dtype=dt.bool_)
    assert not mx.allclose(mx.array([np.inf]), mx.array([-np.inf])).item()


def test_array_equal_shapes_and_dtypes():
    assert mx.array_equal(mx.array([1, 2]), mx.array([1.0, 2.0])).item()
    assert not mx.array_equal(mx.array([1, 2]), mx.array([[1, 2]])).item()
    assert not mx.array_equal(mx.array([1.0, np.nan]), mx.array([1.0, np.nan])).item()
    assert mx.array_equal(mx.array([1.0, np.nan]), mx.array([1.0, np.nan]), True).item()
    assert mx.array_equal(mx.array([1.0, 2.0]), mx.array([1.0, 2.0])).dtype is dt.bool_


SHAPE_PAIRS = [((), ()), ((0,), (0,)), ((0, 3), (1, 3)), ((1,), (4,)), ((2, 1, 3), (4, 1)),
               ((3,), ()), ((1, 1), (1,))]


@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
def test_special_and_broadcast_shapes(shapes):
    x, y = sample(dt.float32, shapes[0], 1), sample(dt.float32, shapes[1], 2, nonzero=True)
    a, b = mx.array(x), mx.array(y)
    for name in ("add", "subtract", "multiply", "divide", "maximum", "arctan2", "logaddexp"):
        assert_allclose(getattr(mx, name)(a, b), getattr(np, name)(x, y), rtol=1e-5)
    for name in COMPARISONS:
        assert_allclose(getattr(mx, name)(a, b), getattr(np, name)(x, y))
    assert_allclose(mx.where(mx.greater(a, 0), a, b), np.where(x > 0, x, y))


def test_transposed_and_strided_views():
    x, y = sample(dt.float32, (4, 6), 1), sample(dt.float32, (6, 4), 2, nonzero=True)
    a, b = mx.transpose(mx.array(x)), mx.array(y)
    assert_allclose(a + b, x.T + y)
    assert_allclose(mx.divide(a, b), x.T / y)
    assert_allclose(mx.remainder(b, a), np.remainder(y, x.T), rtol=1e-5, atol=1e-5)
    assert_allclose(mx.where(a > b, a, b), np.where(x.T > y, x.T, y))
    xs = x[::2, ::-3]
    assert_allclose(mx.array(xs) * mx.array(xs), xs * xs)


@pytest.mark.parametrize("name", sorted(ARITHMETIC) + ["floor_divide", "remainder"] + COMPARISONS)
def test_nuvec_views_as_inputs(name):
    # step-sliced (negative steps) and transposed views of evaluated arrays, as both operands
    x = sample(dt.float32, (6, 8), 1, low=0.5, high=3)
    base = mx.array(x)
    mx.eval(base)
    op, np_op = getattr(mx, name), getattr(np, name)
    pairs = [(base[::2, ::-3], base[1::2, 1::3], x[::2, ::-3], x[1::2, 1::3]),
             (base.T, base[::-1].T, x.T, x[::-1].T),
             (base[::3], base[0], x[::3], x[0])]
    for a, b, xa, xb in pairs:
        with np.errstate(all="ignore"):
            expected = np_op(xa.astype(np.float64), xb.astype(np.float64))
        got = op(a, b)
        assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
        assert_allclose(op(got, b), np_op(expected, xb.astype(np.float64)), rtol=1e-4, atol=1e-4)
    assert_allclose(base, x)  # the viewed array is never written


def test_operators_and_reflections():
    x = np.array([[1.0, -2.0], [3.0, 4.0]], np.float32)
    a = mx.array(x)
    with np.errstate(all="ignore"):
        cases = [
            (a + 2, x + 2), (2 + a, 2 + x), (a - 2, x - 2), (2 - a, 2 - x), (a * 3, x * 3),
            (3 * a, 3 * x), (a / 2, x / 2), (2 / a, 2 / x), (a // 2, x // 2), (7 // a, 7 // x),
            (a % 2, x % 2), (7 % a, 7 % x), (a**2, x**2), (2**a, 2**x), (-a, -x), (abs(a), abs(x)),
        ]
    for got, want in cases:
        assert_allclose(got, want, dtype=dt.float32)
    for got, want in [(a == 1, x == 1), (a != 1, x != 1), (a < 1, x < 1), (a <= 1, x <= 1),
                      (a > 1, x > 1), (a >= 1, x >= 1), (1 < a, 1 < x), (a == a, x == x)]:
        assert_allclose(got, want, dtype=dt.bool_)
    assert (a == None) is False  # noqa: E711
    assert (a != None) is True  # noqa: E711
    assert a.__hash__() == id(a)


def test_bitwise_operators_reflected_and_numpy_left_operands():
    x = np.array([[1, 6], [3, 12]], np.int32)
    a = mx.array(x)
    for got, want in [(5 & a, 5 & x), (5 | a, 5 | x), (5 ^ a, 5 ^ x), (1 << a, 1 << x),
                      (4096 >> a, 4096 >> x), (a & 5, x & 5), (a << 1, x << 1)]:
        assert_allclose(got, want, dtype=dt.int32)
    # a NumPy array on the left defers to nuvec: the result is an Array, promoted as MLX does
    y = np.array([2, 3], np.int16)
    for got, want in [(y + a, y + x), (y * a, y * x), (y & a, y & x), (y << a, y << x),
                      (y < a, y < x), (y == a, y == x)]:
        assert isinstance(got, mx.Array)
        assert_allclose(got, want)
    assert (y - a).dtype is dt.int32 and (np.float32(2.0) * a).dtype is dt.float32


def test_in_place_operators_rebind():
    a = mx.array([1, 2, 3])
    original = a
    a += 1
    assert a is original and a.tolist() == [2, 3, 4]
    for op, want in (("__isub__", [1, 2, 3]), ("__imul__", [2, 4, 6]),
                     ("__ifloordiv__", [1, 2, 3]), ("__imod__", [1, 0, 1])):
        getattr(a, op)(2 if op != "__isub__" else 1)
        assert a.tolist() == want, op
    a **= 2
    assert a.tolist() == [1, 0, 1]
    a <<= 1
    a |= 1
    a ^= 2
    a &= 7
    a >>= 1
    assert a.tolist() == [0, 1, 0]
    f = mx.array([1.0, 2.0])
    f /= 2
    assert f.tolist() == [0.5, 1.0]
    i = mx.array([1, 2])
    i += 1.5  # the handle now refers to a float32 array, as in MLX
    assert i.dtype is dt.float32 and i.tolist() == [2.5, 3.5]
    for d in (dt.int32, dt.uint8, dt.bool_):  # MLX refuses in-place true division of these
        k = mx.array([1, 0], d)
        with pytest.raises(ValueError, match=f"^divide: in-place division needs an inexact "
                                             f"array, got {d.name}"):
            k /= 2
        assert k.dtype is d and k.tolist() == [1, 0]


def test_in_place_update_keeps_earlier_results():
    a = mx.array([1, 2])
    b = a + 1
    a += 1
    assert b.tolist() == [2, 3] and a.tolist() == [2, 3]


def test_maximum_minimum_tie_gradients_go_to_second_operand():
    x, y = mx.array([1.0, 2.0, 3.0]), mx.array([1.0, 1.0, 4.0])
    gx, gy = mx.grad(lambda a, b: mx.sum(mx.maximum(a, b)), argnums=(0, 1))(x, y)
    assert gx.tolist() == [0.0, 1.0, 0.0] and gy.tolist() == [1.0, 0.0, 1.0]
    gx, gy = mx.grad(lambda a, b: mx.sum(mx.minimum(a, b)), argnums=(0, 1))(x, y)
    assert gx.tolist() == [0.0, 0.0, 1.0] and gy.tolist() == [1.0, 1.0, 0.0]


def test_maximum_minimum_masks_from_the_output_match_the_inputs_masks():
    """The rules compare the output with `b`: the same masks as `a > b` (`a < b`) and
    `a <= b` (`a >= b`) for NaNs, signed zeros, infinities and ties, so the gradients equal
    the formulas on the inputs."""
    inf, nan = float("inf"), float("nan")
    a = np.array([nan, 1.0, 0.0, -0.0, 2.0, -inf, inf, 3.0, nan], np.float32)
    b = np.array([1.0, nan, -0.0, 0.0, 2.0, -inf, 1.0, 5.0, nan], np.float32)
    for fn, first, second in ((mx.maximum, np.greater, np.less_equal),
                              (mx.minimum, np.less, np.greater_equal)):
        ga, gb = mx.grad(lambda x, y: mx.sum(fn(x, y)), argnums=(0, 1))(mx.array(a), mx.array(b))
        assert np.asarray(ga).tolist() == first(a, b).astype(np.float32).tolist()
        assert np.asarray(gb).tolist() == second(a, b).astype(np.float32).tolist()


def test_relu_backward_reads_the_output_not_the_pre_activation():
    """`maximum(x @ w, 0)`'s rule compares its output with 0 (as PyTorch's ReLU gradient):
    the pre-activation product is read by the maximum alone, so it can be written over."""
    x, w = mx.ones((2, 3)), mx.ones((3, 4))

    def loss(w):
        return mx.sum(mx.maximum(x @ w, 0.0) * 2.0)

    _, g = mx.vjp(loss, [w], [mx.array(1.0)])
    stack, compared = [g[0]], []  # (a small graph: walked as a tree)
    while stack:
        node = stack.pop()
        if node.primitive is not None:
            if node.primitive.name == "Compare":
                compared.append(node.inputs[0].primitive.name)
            stack.extend(node.inputs)
    assert compared == ["Maximum"]


def test_power_gradients():
    base, exponent = mx.array([0.0, 2.0, 3.0]), mx.array([2.0, 3.0, 0.5])
    gb, ge = mx.grad(lambda a, b: mx.sum(mx.power(a, b)), argnums=(0, 1))(base, exponent)
    np.testing.assert_allclose(np.asarray(gb), [0.0, 12.0, 0.5 / np.sqrt(3.0)], rtol=1e-6)
    # d/db 0**b is 0 (not 0 * log 0 = nan), as in MLX
    np.testing.assert_allclose(np.asarray(ge), [0.0, 8 * np.log(2), np.sqrt(3) * np.log(3)],
                               rtol=1e-6)


def test_no_gradient_to_condition_or_comparisons():
    x = mx.array([1.0, -2.0])
    g = mx.grad(lambda v: mx.sum(mx.where(v > 0, v * 2.0, v * 3.0)))(x)
    assert g.tolist() == [2.0, 3.0]
    g = mx.grad(lambda v: mx.sum(mx.astype(mx.greater(v, 0), mx.float32) + v))(x)
    assert g.tolist() == [1.0, 1.0]


# -- hypothesis: broadcasting and promotion --------------------------------------------------

DTYPES = st.sampled_from(ALL)


@st.composite
def broadcastable_shapes(draw):
    ndim = draw(st.integers(0, 3))
    full = draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim))
    shapes = []
    for _ in range(2):
        drop = draw(st.integers(0, ndim))
        shapes.append(tuple(1 if draw(st.booleans()) else d for d in full[drop:]))
    return shapes


@settings(max_examples=60, deadline=None)
@given(broadcastable_shapes(), DTYPES, DTYPES, st.integers(0, 2**16))
def test_hypothesis_broadcast_and_promotion(shapes, da, db, seed):
    x, y = sample(da, shapes[0], seed), sample(db, shapes[1], seed + 1)
    a, b = mx.array(x, da), mx.array(y, db)
    out = mx.promote_types(da, db)
    got = mx.add(a, b)
    assert got.shape == np.broadcast_shapes(x.shape, y.shape)
    assert got.dtype is out
    expected = ref(x).astype(out.np).astype(ref(np.zeros(0, out.np)).dtype) + \
        ref(y).astype(out.np).astype(ref(np.zeros(0, out.np)).dtype)
    if out is not dt.bool_:
        assert_allclose(got, expected.astype(out.np), dtype=out)
    assert_allclose(mx.less(a, b), np.less(ref(x.astype(out.np)), ref(y.astype(out.np))),
                    dtype=dt.bool_)


def _weak_expected(d: dt.Dtype, scalar) -> dt.Dtype:
    """MLX's rule, written out: the array's dtype wins within its kind."""
    if isinstance(scalar, bool):
        return d
    if isinstance(scalar, int):
        return dt.int32 if d is dt.bool_ else d
    if isinstance(scalar, float):
        return d if d.is_inexact else dt.float32
    return dt.complex64


@settings(max_examples=60, deadline=None)
@given(DTYPES, st.one_of(st.booleans(), st.integers(-300, 300), st.floats(-10, 10),
                         st.complex_numbers(max_magnitude=5)), st.booleans())
def test_hypothesis_weak_scalars(d, scalar, scalar_first):
    x = sample(d, (3,), 0, low=0, high=5)
    a = mx.array(x, d)
    out = _weak_expected(d, scalar)
    fits = not (type(scalar) is int and out.is_integer and out is not dt.uint64
                and not np.iinfo(out.np).min <= scalar <= np.iinfo(out.np).max)
    if not fits:  # MLX refuses a weak int the integer dtype cannot hold
        with pytest.raises(ValueError, match=f"^multiply: the Python int {scalar} does not fit"):
            mx.multiply(scalar, a) if scalar_first else mx.multiply(a, scalar)
        return
    got = mx.multiply(scalar, a) if scalar_first else mx.multiply(a, scalar)
    assert got.dtype is out
    weak = scalar % 2**64 if out is dt.uint64 and type(scalar) is int else scalar  # wraps
    expected = np.multiply(ref(x.astype(out.np)), np.asarray(weak).astype(out.np))
    tol = {"rtol": 1e-2, "atol": 1e-1} if out in (dt.float16, dt.bfloat16) else {}
    assert_allclose(got, expected.astype(out.np) if out.is_integer else expected, dtype=out,
                    **tol)


# -- errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "floor_divide",
                                  "remainder", "power", "maximum", "minimum", "equal", "less",
                                  "logical_and", "logical_xor", "bitwise_and", "left_shift",
                                  "arctan2", "logaddexp", "isclose"])
def test_shape_mismatch(name):
    a, b = mx.zeros((2, 3), mx.int32), mx.zeros((4,), mx.int32)
    with pytest.raises(ValueError, match=rf"^{name}: shapes \(2, 3\) and \(4,\) cannot be"):
        getattr(mx, name)(a, b)


def test_where_and_clip_errors():
    with pytest.raises(ValueError, match="^where: shapes"):
        mx.where(mx.array([True, False]), mx.zeros((3,)), 0.0)
    with pytest.raises(ValueError, match="^clip: at most one of a_min and a_max may be None"):
        mx.clip(mx.array([1.0]), None, None)
    with pytest.raises(ValueError, match="^clip: shapes"):
        mx.clip(mx.zeros((3,)), mx.zeros((2,)), None)
    with pytest.raises(ValueError, match=r"^clip: shapes \(3,\) and \(2,\) and \(1,\) cannot"):
        mx.clip(mx.zeros((3,)), mx.zeros((2,)), mx.ones((1,)))
    # complex values compare real part first, as in maximum and minimum (MLX's values)
    z = mx.clip(mx.array([1.26 + 2.71j, -0.5 + 0.5j, 0.5 - 3j]), 0.0, 1.0)
    assert z.tolist() == [1 + 0j, 0j, 0.5 - 3j]


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
                                  "right_shift"])
@pytest.mark.parametrize("d", [dt.float32, dt.float16, dt.complex64], ids=str)
def test_bitwise_rejects_inexact(name, d):
    with pytest.raises(TypeError, match=f"^{name}: only integer and boolean arrays"):
        getattr(mx, name)(mx.array([1], d), mx.array([1], mx.int32))


def test_bitwise_invert_and_operator_reject_floats():
    with pytest.raises(TypeError, match="^bitwise_invert: only integer and boolean"):
        mx.bitwise_invert(mx.array([1.0]))
    with pytest.raises(TypeError, match="^bitwise_invert: "):
        ~mx.array([1.0])
    with pytest.raises(TypeError, match="^bitwise_and: "):
        mx.array([1.0]) & 1


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "arctan2", "logaddexp"])
def test_complex_rejected(name):
    with pytest.raises(TypeError, match=f"^{name}: not supported for complex64"):
        getattr(mx, name)(mx.array([1 + 1j]), mx.array([1 + 0j]))


@pytest.mark.parametrize("d", [d for d in INTS if d is not dt.uint64], ids=str)
def test_weak_int_out_of_range_rejected(d):
    # MLX refuses a Python int the integer dtype cannot hold (uint64 wraps negatives, as MLX)
    info = np.iinfo(d.np)
    a = mx.array([1, 0], d)
    assert (a * int(info.max)).dtype is d and (int(info.min) + a).dtype is d
    for value in (int(info.min) - 1, int(info.max) + 1):
        with pytest.raises(ValueError, match=f"^add: the Python int {value} does not fit in "
                                             f"{d.name}"):
            a + value
        with pytest.raises(ValueError, match=f"^less: the Python int {value} does not fit"):
            a < value
        with pytest.raises(ValueError, match="^multiply: "):
            a *= value
        assert a.tolist() == [1, 0] and a.dtype is d
    assert (mx.array([1], mx.uint64) + (-1)).tolist() == [0]


@pytest.mark.parametrize("op", [mx.isclose, mx.allclose])
def test_tolerances_must_be_real_numbers(op):
    name = op.__name__  # allclose names itself, though isclose checks
    with pytest.raises(TypeError, match=f"^{name}: rtol must be a real number, got '0.1' "
                                        r"\(str\)"):
        op(mx.ones((2,)), mx.ones((2,)), rtol="0.1")
    with pytest.raises(TypeError, match=f"^{name}: atol must be a real number, got None "
                                        r"\(NoneType\)"):
        op(mx.ones((2,)), mx.ones((2,)), atol=None)


def test_unconvertible_operands():
    with pytest.raises(TypeError, match="^add: cannot convert"):
        mx.add(mx.array([1]), "x")
    with pytest.raises(TypeError, match="^where: cannot convert"):
        mx.where(object(), 1, 2)
    with pytest.raises(TypeError, match="^logical_or: cannot convert"):
        mx.logical_or(mx.array([True]), object())
