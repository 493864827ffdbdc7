"""Scans against NumPy: every dtype, axes, reverse/inclusive, special shapes, views, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nuvec as mx
from nuvec.graph import dtypes as dt
from nuvec.testing import assert_allclose

REAL = [d for d in dt.ALL_DTYPES if d is not dt.complex64]
UFUNCS = {"cumsum": np.add, "cumprod": np.multiply, "cummax": np.maximum,
          "cummin": np.minimum, "logcumsumexp": np.logaddexp}
IDENTITY = {"cumsum": 0.0, "cumprod": 1.0, "logcumsumexp": -np.inf}


def reference(name, x, axis, reverse, inclusive):
    """Running result in float64 (int64 for integers), built from NumPy's accumulate."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    work = x.astype(np.float64) if x.dtype.kind in "fV" or name == "logcumsumexp" else x
    if work.dtype.kind == "b" and name in ("cumsum", "cumprod"):
        work = work.astype(np.int64)
    if reverse:
        work = np.flip(work, axis)
    out = UFUNCS[name].accumulate(work, axis=axis) if work.shape[axis] else work.copy()
    if not inclusive and work.shape[axis]:
        if name in IDENTITY:
            first = IDENTITY[name]
        elif work.dtype.kind == "f":
            first = -np.inf if name == "cummax" else np.inf
        elif work.dtype.kind == "b":
            first = name == "cummin"
        else:
            info = np.iinfo(work.dtype)
            first = info.min if name == "cummax" else info.max
        head = np.full_like(np.take(out, [0], axis=axis), first)
        out = np.concatenate([head, np.take(out, range(work.shape[axis] - 1), axis=axis)], axis)
    return np.flip(out, axis) if reverse else out


def sample(d, shape=(3, 5), seed=0):
    rng = np.random.default_rng(seed)
    if d is dt.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    if d.is_integer:
        return rng.integers(0 if d.kind == "u" else -3, 4, size=shape).astype(d.np)
    return rng.uniform(-2, 2, size=shape).astype(d.np)


def result_dtype(name, d):
    if name == "cumsum" and d is dt.bool_:
        return dt.int32
    if name == "logcumsumexp" and not d.is_floating:
        return dt.float32
    return d


@pytest.mark.parametrize("d", REAL, ids=lambda d: d.name)
@pytest.mark.parametrize("name", sorted(UFUNCS))
@pytest.mark.parametrize("reverse,inclusive", [(False, True), (True, True), (False, False),
                                               (True, False)], ids=["fwd", "rev", "fwd-excl",
                                                                    "rev-excl"])
def test_scan_dtypes(name, d, reverse, inclusive):
    x = sample(d)
    out = getattr(mx, name)(mx.array(x, d), axis=1, reverse=reverse, inclusive=inclusive)
    expected = reference(name, x, 1, reverse, inclusive)
    want = result_dtype(name, d)
    if want.is_integer or want is dt.bool_:  # wraps like the dtype does
        expected = expected.astype(want.np)
    tol = {"rtol": 1e-2, "atol": 1e-2} if d in (dt.float16, dt.bfloat16) else {}
    assert_allclose(out, expected, dtype=want, **tol)


@pytest.mark.parametrize("name", sorted(UFUNCS))
@pytest.mark.parametrize("axis", [None, 0, -1])
def test_scan_axes_and_views(name, axis):
    x = sample(dt.float32, shape=(4, 6), seed=1)
    view = mx.array(x).T[:, ::2]
    expected = reference(name, x.T[:, ::2], axis, False, True)
    assert_allclose(getattr(mx, name)(view, axis=axis), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("d", [dt.float32, dt.bfloat16, dt.int32, dt.bool_], ids=str)
@pytest.mark.parametrize("name", sorted(UFUNCS))
@pytest.mark.parametrize("shape,axis", [((6, 600), 0), ((3, 5, 520), 1), ((2, 1, 600), 1)],
                         ids=str)
def test_scan_over_a_leading_axis_steps_with_the_same_bits(name, shape, axis, d):
    # from 512 elements after the axis the CPU steps along it, one ufunc call a step: the same
    # operations in the same order as a scan over the last axis
    if name == "logcumsumexp" and not d.is_inexact:
        return
    x = mx.array(sample(d, shape=shape, seed=3), d)
    fn = getattr(mx, name)
    for reverse, inclusive in [(False, True), (True, False)]:
        got = fn(x, axis=axis, reverse=reverse, inclusive=inclusive)
        last = fn(mx.moveaxis(x, axis, -1), axis=-1, reverse=reverse, inclusive=inclusive)
        assert got.dtype == last.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(mx.moveaxis(last, -1, axis)))


@pytest.mark.parametrize("shape", [(0,), (1,), (2, 0), (1, 1)], ids=str)
@pytest.mark.parametrize("name", sorted(UFUNCS))
def test_scan_special_shapes(name, shape):
    x = sample(dt.float32, shape=shape)
    out = getattr(mx, name)(mx.array(x), axis=-1, inclusive=False)
    assert_allclose(out, reference(name, x, -1, False, False))


def test_scan_nan_and_inf():
    x = np.array([1.0, np.nan, 2.0, np.inf, -np.inf], np.float32)
    assert_allclose(mx.cumsum(mx.array(x)), np.cumsum(x))
    assert_allclose(mx.cummax(mx.array(x)), np.maximum.accumulate(x))
    assert_allclose(mx.logcumsumexp(mx.array([-np.inf, 0.0], mx.float32)), [-np.inf, 0.0])


def test_logcumsumexp_is_stable():
    x = np.array([1000.0, 1000.0, -1000.0], np.float64)
    assert_allclose(mx.logcumsumexp(mx.array(x, mx.float64)), np.logaddexp.accumulate(x))


def test_cumprod_grad_with_zeros():
    x = mx.array([[1.0, 0.0, 2.0, 3.0], [0.0, 0.0, 2.0, 1.0]])
    g = mx.grad(lambda x: mx.cumprod(x, axis=1).sum())(x)
    assert g.tolist() == [[1.0, 9.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]


def test_cummax_grad_goes_to_the_running_maximum():
    x = mx.array([1.0, 3.0, 2.0, 5.0, 4.0])
    g = mx.grad(lambda x: mx.cummax(x).sum())(x)
    assert g.tolist() == [1.0, 2.0, 0.0, 2.0, 0.0]


def test_cumsum_grad_is_reversed_cumsum():
    x = mx.array([1.0, 2.0, 3.0])
    g = mx.grad(lambda x: (mx.cumsum(x) * mx.array([1.0, 10.0, 100.0])).sum())(x)
    assert g.tolist() == [111.0, 110.0, 100.0]


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                  elements=st.floats(-10, 10)),
       st.sampled_from(sorted(UFUNCS)), st.integers(-3, 2), st.booleans(), st.booleans())
def test_scan_fuzz(x, name, axis, reverse, inclusive):
    axis = axis % x.ndim
    out = getattr(mx, name)(mx.array(x, mx.float64), axis=axis, reverse=reverse,
                            inclusive=inclusive)
    assert_allclose(out, reference(name, x, axis, reverse, inclusive), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", sorted(UFUNCS))
def test_scan_axis_errors(name):
    op = getattr(mx, name)
    with pytest.raises(ValueError, match=f"^{name}: axis 2"):
        op(mx.array([[1.0]]), axis=2)
    with pytest.raises(ValueError, match=f"^{name}: axis 0"):
        op(mx.array(1.0), axis=0)
    with pytest.raises(TypeError, match=f"^{name}: axis must be an int"):
        op(mx.array([1.0]), axis=0.5)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_scan_complex_errors(name):
    with pytest.raises(TypeError, match=f"^{name}: complex64"):
        getattr(mx, name)(mx.array([1j]))


def test_scan_complex_sum_and_product():
    x = np.array([1 + 1j, 2 - 1j, 0.5j], np.complex64)
    assert_allclose(mx.cumsum(mx.array(x)), np.cumsum(x), dtype=dt.complex64)
    assert_allclose(mx.cumprod(mx.array(x)), np.cumprod(x), dtype=dt.complex64)


def test_scan_array_methods():
    a = mx.array([[1.0, 3.0], [2.0, 0.5]])
    assert a.cumsum().tolist() == [1.0, 4.0, 6.0, 6.5]
    assert a.cummax(0, reverse=True).tolist() == [[2.0, 3.0], [2.0, 0.5]]
    assert a.cumprod(1, inclusive=False).tolist() == [[1.0, 1.0], [1.0, 2.0]]
    assert a.cummin(axis=1).tolist() == [[1.0, 1.0], [2.0, 0.5]]
    assert_allclose(a.logcumsumexp(1), np.logaddexp.accumulate(np.asarray(a), axis=1))


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("reverse,inclusive", [(False, True), (True, True), (False, False),
                                               (True, False)])
def test_extremum_rules_split_ties(name, reverse, inclusive):
    """vjp and jvp against the definition: each output's cotangent is shared equally by the
    inputs of its window that equal it."""
    rng = np.random.default_rng(1)
    x = rng.integers(0, 4, (3, 9)).astype(np.float64)  # many ties
    u = rng.standard_normal((3, 9))

    def fn(z):
        return getattr(mx, name)(z, axis=1, reverse=reverse, inclusive=inclusive)

    y = np.asarray(fn(mx.array(x, mx.float64)))
    _, (grad,) = mx.vjp(fn, [mx.array(x, mx.float64)], [mx.array(u, mx.float64)])
    _, (tangent,) = mx.jvp(fn, [mx.array(x, mx.float64)], [mx.array(u, mx.float64)])
    want_grad, want_tangent = np.zeros_like(x), np.zeros_like(x)
    for r in range(3):
        for i in range(9):
            window = [k for k in range(9)
                      if (k > i if reverse else k < i) or (inclusive and k == i)]
            ties = [k for k in window if x[r, k] == y[r, i]]
            for k in ties:
                want_grad[r, k] += u[r, i] / len(ties)
                want_tangent[r, i] += u[r, k] / len(ties)
    assert_allclose(grad, want_grad, dtype=dt.float64)
    assert_allclose(tangent, want_tangent, dtype=dt.float64)


def test_cumprod_grad_long_axis():
    """The product rule is O(n log n): a long axis, against the closed form E_k * S_k."""
    x = np.random.default_rng(2).uniform(0.9, 1.1, 3000)
    x[1000] = 0.0
    g = np.asarray(mx.grad(lambda z: mx.cumprod(z).sum())(mx.array(x, mx.float64)))
    products = np.cumprod(x)
    before = np.concatenate([[1.0], products[:-1]])
    for k in (0, 999, 1000, 1001, 2999):
        later = np.cumprod(np.concatenate([[1.0], x[k + 1:]])).sum()
        assert np.isclose(g[k], before[k] * later, rtol=1e-9, atol=1e-12)
