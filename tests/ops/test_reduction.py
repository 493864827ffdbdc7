"""Conformance of `nuvec.ops.reduction` against NumPy (float64 references), errors and ties."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nuvec as mx
from helpers import ids
from nuvec.graph import dtypes as dt
from nuvec.testing import assert_allclose, to_numpy64

ALL = list(dt.ALL_DTYPES)
REAL = [d for d in ALL if d is not mx.complex64]
FLOATS = [mx.float16, mx.float32, mx.float64, mx.bfloat16]
SHAPES = [(), (0,), (1,), (5,), (3, 4), (2, 0, 3), (2, 3, 4)]
SUM_DTYPE = {mx.bool_: mx.int32, mx.int8: mx.int32, mx.int16: mx.int32, mx.uint8: mx.uint32,
             mx.uint16: mx.uint32}


def sample(shape, dtype, rng, low=-3, high=4):
    """Random data of `dtype`: small integers (no overflow in products), normal floats."""
    if dtype is mx.bool_:
        return mx.array(rng.random(shape) > 0.5)
    if dtype.is_integer:
        lo = 0 if dtype.kind == "u" else low
        return mx.array(rng.integers(lo, high, size=shape).astype(dtype.np))
    data = rng.standard_normal(shape)
    if dtype is mx.complex64:
        data = data + 1j * rng.standard_normal(shape)
    return mx.array(data, dtype)


def axes_for(shape):
    out = [None]
    if len(shape) >= 1:
        out += [0, -1]
    if len(shape) >= 2:
        out += [(0, -1), [1]]
    return out


def cases(dtypes):
    return [(d, s, a) for d in dtypes for s in SHAPES for a in axes_for(s)]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype,shape,axis", cases(ALL), ids=ids)
def test_sum(dtype, shape, axis, keepdims):
    x = sample(shape, dtype, np.random.default_rng(0))
    want = np.sum(to_numpy64(x), axis=None if axis is None else tuple(np.atleast_1d(axis)),
                  keepdims=keepdims)
    out = mx.sum(x, axis, keepdims)
    assert_allclose(out, want, dtype=SUM_DTYPE.get(dtype, dtype) if shape else x.dtype)


@pytest.mark.parametrize("dtype,shape,axis", cases(ALL), ids=ids)
def test_prod(dtype, shape, axis):
    rng = np.random.default_rng(1)
    x = sample(shape, dtype, rng, low=-2, high=3) if dtype.is_integer else sample(shape, dtype, rng)
    ax = None if axis is None else tuple(np.atleast_1d(axis))
    out = mx.prod(x, axis)
    assert_allclose(out, np.prod(to_numpy64(x), axis=ax), dtype=SUM_DTYPE.get(dtype, dtype)
                    if shape else x.dtype)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dtype,shape,axis", [c for c in cases(REAL) if 0 not in c[1]], ids=ids)
def test_extrema(op, dtype, shape, axis):
    x = sample(shape, dtype, np.random.default_rng(2))
    ax = None if axis is None else tuple(np.atleast_1d(axis))
    assert_allclose(getattr(mx, op)(x, axis), getattr(np, op)(to_numpy64(x), axis=ax),
                    dtype=dtype)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", REAL, ids=ids)
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_arg_extrema(op, keepdims, dtype, axis):
    x = sample((3, 4), dtype, np.random.default_rng(3))
    want = getattr(np, op)(to_numpy64(x), axis=axis, keepdims=keepdims)
    assert_allclose(getattr(mx, op)(x, axis, keepdims), want, dtype=mx.uint32)


def test_argmax_first_of_ties_and_nan():
    assert mx.argmax(mx.array([1, 5, 5, 2])).item() == 1
    assert mx.argmin(mx.array([3.0, 1.0, 1.0])).item() == 1
    assert mx.argmax(mx.array(7)).shape == ()
    assert mx.argmax(mx.array([[1, 2]]), keepdims=True).shape == (1, 1)


@pytest.mark.parametrize("op", ["all", "any"])
@pytest.mark.parametrize("dtype,shape,axis", cases(ALL), ids=ids)
def test_logic(op, dtype, shape, axis):
    x = sample(shape, dtype, np.random.default_rng(4), low=0, high=2)
    ax = None if axis is None else tuple(np.atleast_1d(axis))
    assert_allclose(getattr(mx, op)(x, axis), getattr(np, op)(np.asarray(x), axis=ax),
                    dtype=mx.bool_)


@pytest.mark.parametrize("dtype", ALL, ids=ids)
@pytest.mark.parametrize("axis", [None, 0, (0, 1)])
def test_count_nonzero(dtype, axis):
    x = sample((3, 4), dtype, np.random.default_rng(5), low=-1, high=2)
    assert_allclose(mx.count_nonzero(x, axis), np.count_nonzero(np.asarray(x), axis=axis),
                    dtype=mx.int32)


def _mean_dtype(dtype):
    return dtype if dtype.is_inexact else mx.float32


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype,shape,axis", [c for c in cases(ALL) if 0 not in c[1]], ids=ids)
def test_mean(dtype, shape, axis, keepdims):
    x = sample(shape, dtype, np.random.default_rng(6))
    ax = None if axis is None else tuple(np.atleast_1d(axis))
    want = np.mean(to_numpy64(x), axis=ax, keepdims=keepdims)
    assert_allclose(mx.mean(x, axis, keepdims), want, dtype=_mean_dtype(dtype))


@pytest.mark.parametrize("ddof", [0, 1])
@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("dtype", [d for d in REAL if d is not mx.bool_], ids=ids)
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
def test_var_std(ddof, op, dtype, axis):
    x = sample((3, 4, 2), dtype, np.random.default_rng(7))
    want = getattr(np, op)(to_numpy64(x), axis=axis, ddof=ddof)
    out = getattr(mx, op)(x, axis, ddof=ddof)
    rtol = 1e-2 if dtype in (mx.float16, mx.bfloat16) else None
    assert_allclose(out, want, dtype=_mean_dtype(dtype), rtol=rtol, atol=rtol)


def test_var_ddof_at_least_count_is_inf_or_nan():
    assert mx.var(mx.array([1.0, 2.0]), ddof=2).item() == float("inf")
    assert np.isnan(mx.var(mx.array([1.0]), ddof=1).item())


@pytest.mark.parametrize("dtype", FLOATS + [mx.int32], ids=ids)
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp(dtype, axis, keepdims):
    x = sample((3, 4, 2), dtype, np.random.default_rng(8))
    x64 = to_numpy64(x).astype(np.float64)
    m = np.max(x64, axis=axis, keepdims=True)
    want = np.log(np.sum(np.exp(x64 - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        want = np.squeeze(want, axis=axis)
    assert_allclose(mx.logsumexp(x, axis, keepdims), want, dtype=_mean_dtype(dtype))


def test_logsumexp_is_stable_and_handles_infinities():
    assert_allclose(mx.logsumexp(mx.array([1000.0, 1000.0])), 1000.0 + np.log(2.0))
    inf = float("inf")
    assert mx.logsumexp(mx.array([-inf, -inf])).item() == -inf
    assert mx.logsumexp(mx.array([1.0, inf])).item() == inf
    assert np.isnan(mx.logsumexp(mx.array([1.0, float("nan")])).item())
    assert_allclose(mx.logsumexp(mx.array([-inf, 0.0])), 0.0)


def _softmax64(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@pytest.mark.parametrize("precise", [False, True])
@pytest.mark.parametrize("dtype", FLOATS + [mx.int32], ids=ids)
@pytest.mark.parametrize("axis", [None, 0, -1, (1, 2)])
def test_softmax(precise, dtype, axis):
    x = sample((3, 4, 2), dtype, np.random.default_rng(9))
    want = _softmax64(to_numpy64(x).astype(np.float64), axis)
    assert_allclose(mx.softmax(x, axis, precise=precise), want, dtype=_mean_dtype(dtype))


def test_softmax_large_values_and_edge_shapes():
    assert_allclose(mx.softmax(mx.array([1000.0, 1000.0])), [0.5, 0.5])
    assert_allclose(mx.softmax(mx.array(3.0)), 1.0)
    assert mx.softmax(mx.zeros((0, 3)), axis=0).shape == (0, 3)
    assert mx.softmax(mx.zeros((0, 3), mx.int32), axis=1).dtype == mx.float32
    assert_allclose(mx.softmax(mx.array([[1.0, 2.0]]), axis=[]), [[1.0, 1.0]])


@pytest.mark.parametrize("dtype", [mx.int32, mx.float16, mx.float32, mx.bfloat16], ids=ids)
@pytest.mark.parametrize("shape,axis", [((5,), None), ((4,), None), ((3, 4), 1),
                                        ((3, 4, 2), (0, 2)), ((2, 3), 0), ((), None)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_median(dtype, shape, axis, keepdims):
    x = sample(shape, dtype, np.random.default_rng(10))
    want = np.median(to_numpy64(x).astype(np.float64), axis=axis, keepdims=keepdims)
    assert_allclose(mx.median(x, axis, keepdims), want, dtype=_mean_dtype(dtype))


def test_views_transposed():
    rng = np.random.default_rng(11)
    base = rng.standard_normal((3, 4, 5)).astype(np.float32)
    x = mx.transpose(mx.array(base), (2, 0, 1))
    ref = np.transpose(base, (2, 0, 1)).astype(np.float64)
    assert_allclose(mx.sum(x, (0, 2)), ref.sum(axis=(0, 2)))
    assert_allclose(mx.max(x, 1), ref.max(axis=1))
    assert_allclose(mx.argmin(x, 2), ref.argmin(axis=2))
    assert_allclose(mx.softmax(x, -1), _softmax64(ref, -1))
    assert_allclose(mx.var(x, 0), ref.var(axis=0))


def test_nan_and_inf():
    nan, inf = float("nan"), float("inf")
    x = mx.array([[1.0, nan], [2.0, 3.0]])
    out = np.asarray(mx.max(x, 1))
    assert np.isnan(out[0]) and out[1] == 3.0
    assert np.isnan(np.asarray(mx.min(x, 1))[0])
    assert np.isnan(mx.sum(x).item())
    assert mx.sum(mx.array([inf, 1.0])).item() == inf
    assert mx.count_nonzero(mx.array([nan, 0.0])).item() == 1


def _np_logsumexp(x, axis):
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    return np.log(np.sum(np.exp(x - top), axis=axis)) + np.squeeze(top, axis)


def _np_softmax(x, axis):
    top = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - top)
    return e / np.sum(e, axis=axis, keepdims=True)


NAN_REFERENCES = {
    "sum": np.sum, "prod": np.prod, "mean": np.mean, "var": np.var, "std": np.std,
    "max": np.max, "min": np.min, "argmax": np.argmax, "argmin": np.argmin, "all": np.all,
    "any": np.any, "count_nonzero": np.count_nonzero, "median": np.median,
    "logsumexp": _np_logsumexp, "softmax": _np_softmax,
}


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64], ids=ids)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("op", sorted(NAN_REFERENCES))
def test_nan_and_inf_against_numpy(op, axis, dtype):
    # rows: plain, one NaN, +inf, -inf, both infinities, all -inf, NaN with inf, a zero
    nan, inf = np.nan, np.inf
    x = np.array([[1.0, 2.0, 3.0], [1.0, nan, 3.0], [inf, 1.0, 2.0], [-inf, 1.0, 2.0],
                  [inf, -inf, 0.0], [-inf, -inf, -inf], [nan, inf, 1.0], [0.0, 4.0, -1.0]])
    x = x if axis == 1 else x.T
    with np.errstate(all="ignore"):
        expected = NAN_REFERENCES[op](x, axis=axis)
    got = getattr(mx, op)(mx.array(x, dtype), axis=axis)
    assert_allclose(got, np.asarray(expected).astype(got.dtype.np), rtol=1e-6, atol=1e-6)


def test_empty_reductions():
    e = mx.zeros((0, 3))
    assert_allclose(mx.sum(e), 0.0)
    assert_allclose(mx.sum(e, 0), np.zeros(3))
    assert_allclose(mx.prod(e), 1.0)
    assert mx.all(e).item() is True and mx.any(e).item() is False
    assert np.isnan(mx.mean(e).item())


def test_half_sums_accumulate_in_float32():
    x = mx.ones((4096,), mx.float16)
    assert mx.sum(x).item() == 4096.0  # float16 accumulation would stop at 2048
    assert mx.mean(mx.full((3000,), 0.1, mx.bfloat16)).item() == pytest.approx(0.1, rel=1e-2)


def test_empty_axes_return_input():
    x = mx.array([1, 2], mx.int8)
    out = mx.sum(x, axis=[])  # the values of `x` on a new handle (MLX returns a copy)
    assert out is not x and out.dtype is mx.int8 and out.tolist() == [1, 2]
    assert mx.all(x, axis=[]).dtype is mx.bool_
    assert mx.sum(mx.array(3, mx.int8)).dtype is mx.int8  # 0-d: no axes (MLX)


def test_methods():
    x = mx.array([[1.0, 2.0], [3.0, 5.0]])
    assert x.prod().item() == 30.0
    assert x.mean(axis=0).tolist() == [2.0, 3.5]
    assert x.max(1, keepdims=True).shape == (2, 1)
    assert x.min().item() == 1.0
    assert x.argmax(1).tolist() == [1, 1]
    assert x.argmin().item() == 0
    assert x.var(ddof=1).item() == pytest.approx(np.var([1, 2, 3, 5], ddof=1))
    assert x.std().item() == pytest.approx(np.std([1, 2, 3, 5]), rel=1e-6)
    assert x.all().item() and x.any(0).tolist() == [True, True]
    assert x.logsumexp().item() == pytest.approx(np.log(np.exp([1, 2, 3, 5]).sum()), rel=1e-6)


def test_max_gradient_splits_ties():
    g = mx.grad(lambda v: mx.max(v))(mx.array([1.0, 3.0, 3.0, 2.0]))
    assert g.tolist() == [0.0, 0.5, 0.5, 0.0]
    g = mx.grad(lambda v: mx.sum(mx.min(v, axis=1)))(mx.array([[1.0, 1.0, 2.0], [4.0, 0.0, 3.0]]))
    assert g.tolist() == [[0.5, 0.5, 0.0], [0.0, 1.0, 0.0]]


@pytest.mark.parametrize(
    "op, x, axis, expected",
    [  # MLX 0.32's values: the tangent at the first extreme, row-major over the axes
        (mx.max, [3.0, 1.0, 3.0], None, 1.0),
        (mx.min, [1.0, 1.0, 3.0], None, 1.0),
        (mx.max, [1.0, float("nan"), 3.0], None, 2.0),
        (mx.max, [[[1.0, 5.0], [5.0, 1.0]], [[5.0, 1.0], [1.0, 1.0]]], (0, 2), [1.0, 2.0]),
        (mx.max, [[[1.0, 5.0], [5.0, 1.0]], [[5.0, 1.0], [1.0, 1.0]]], (2, 0), [1.0, 2.0]),
        (mx.max, [[[1.0, 5.0], [5.0, 1.0]], [[5.0, 1.0], [1.0, 1.0]]], (0, 1), [2.0, 1.0]),
        (mx.min, [[[1.0, 5.0], [5.0, 1.0]], [[5.0, 1.0], [1.0, 1.0]]], 2, [[0.0, 3.0], [5.0, 6.0]]),
    ],
)
def test_max_min_jvp_takes_the_first_tie(op, x, axis, expected):
    x = mx.array(x)
    t = mx.arange(x.size, dtype=mx.float32).reshape(x.shape) + (x.ndim == 1)
    (out,), (tangent,) = mx.jvp(lambda v: op(v, axis=axis), [x], [t])
    assert tangent.tolist() == expected and tangent.shape == out.shape
    (_,), (kept,) = mx.jvp(lambda v: op(v, axis=axis, keepdims=True), [x], [t])
    assert kept.shape == op(x, axis=axis, keepdims=True).shape


def test_prod_gradient_with_zeros():
    g = mx.grad(lambda v: mx.prod(v))(mx.array([2.0, 0.0, 3.0]))
    assert g.tolist() == [0.0, 6.0, 0.0]
    g = mx.grad(lambda v: mx.prod(v))(mx.array([0.0, 0.0, 3.0]))
    assert g.tolist() == [0.0, 0.0, 0.0]


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    data=st.data(),
    keepdims=st.booleans(),
)
def test_hypothesis_reductions(shape, data, keepdims):
    ndim = len(shape)
    picked = data.draw(st.lists(st.integers(-ndim, ndim - 1), unique_by=lambda a: a % ndim,
                                max_size=ndim))
    axis = data.draw(st.sampled_from([None, tuple(picked)]))
    rng = np.random.default_rng(len(picked) + 7 * ndim)
    x64 = rng.standard_normal(shape)
    x = mx.array(x64, mx.float64)
    for name in ("sum", "prod", "max", "min", "mean"):
        want = getattr(np, name)(x64, axis=axis, keepdims=keepdims)
        assert_allclose(getattr(mx, name)(x, axis, keepdims), want, dtype=mx.float64)
    assert_allclose(mx.var(x, axis, keepdims, ddof=0), np.var(x64, axis=axis, keepdims=keepdims))


@settings(max_examples=40, deadline=None)
@given(
    dtype=st.sampled_from(REAL),
    shape=st.lists(st.integers(0, 4), min_size=0, max_size=3),
    data=st.data(),
    keepdims=st.booleans(),
)
def test_hypothesis_reductions_over_dtypes(dtype, shape, data, keepdims):
    ndim = len(shape)
    picked = data.draw(st.lists(st.integers(-ndim, ndim - 1), unique_by=lambda a: a % ndim,
                                max_size=ndim)) if ndim else []
    axis = data.draw(st.sampled_from([None, tuple(picked)]))
    x = sample(tuple(shape), dtype, np.random.default_rng(len(picked) + 7 * ndim))
    x64 = to_numpy64(x)
    reduced = range(ndim) if axis is None else [a % ndim for a in axis]
    sum_dtype = SUM_DTYPE.get(dtype, dtype) if reduced else dtype  # no axes: the input (MLX)
    tol = {"rtol": 2e-2, "atol": 5e-2} if dtype in (mx.float16, mx.bfloat16) else {}
    assert_allclose(mx.sum(x, axis, keepdims), np.sum(x64, axis=axis, keepdims=keepdims),
                    dtype=sum_dtype, **tol)
    for name in ("all", "any"):
        want = getattr(np, name)(x64, axis=axis, keepdims=keepdims)
        assert_allclose(getattr(mx, name)(x, axis, keepdims), want, dtype=mx.bool_)
    if all(shape[a] for a in reduced):  # max and min of an empty axis are rejected
        for name in ("max", "min"):
            want = getattr(np, name)(x64, axis=axis, keepdims=keepdims)
            assert_allclose(getattr(mx, name)(x, axis, keepdims), want, dtype=dtype)


REDUCERS = ["sum", "prod", "max", "min", "mean", "var", "std", "all", "any", "logsumexp",
            "count_nonzero", "median", "softmax"]


@pytest.mark.parametrize("op", REDUCERS + ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [2, -3])
def test_axis_out_of_range(op, axis):
    x = mx.ones((2, 3))
    with pytest.raises(ValueError, match=f"^{op}: axis {axis} is out of bounds"):
        getattr(mx, op)(x, axis)
    with pytest.raises(IndexError):  # MLX raises IndexError for reduction axes
        getattr(mx, op)(x, axis)


@pytest.mark.parametrize("op", [r for r in REDUCERS if r not in ("count_nonzero",)])
def test_repeated_axis(op):
    with pytest.raises(ValueError, match=f"^{op}: repeated axis"):
        getattr(mx, op)(mx.ones((2, 3)), (0, -2))


@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin", "logsumexp"])
@pytest.mark.parametrize("axis", [0, None])
def test_empty_reduced_axis_rejected(op, axis):
    with pytest.raises(ValueError, match=f"^{op}: cannot reduce over an empty axis"):
        getattr(mx, op)(mx.zeros((0, 3)), axis)


@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin", "logsumexp"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_empty_array_with_nonempty_reduced_axis(op, keepdims):
    out = getattr(mx, op)(mx.zeros((2, 0, 3)), -1, keepdims)
    want = getattr(np, op if op != "logsumexp" else "max")(np.zeros((2, 0, 3)), -1,
                                                           keepdims=keepdims)
    assert out.shape == want.shape
    if op != "logsumexp":
        assert out.dtype == (mx.uint32 if op.startswith("arg") else mx.float32)
    assert mx.max(mx.zeros((0, 3)), axis=(1,)).shape == (0,)


def test_median_of_empty_axis_rejected():
    with pytest.raises(ValueError, match="^median: cannot take the median of an empty axis"):
        mx.median(mx.zeros((0, 3)), 0)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_axis_must_be_int(op):
    with pytest.raises(TypeError, match=f"^{op}: axis must be an int or None"):
        getattr(mx, op)(mx.ones((2, 3)), (0, 1))


def test_axis_type_rejected():
    with pytest.raises(TypeError, match="^sum: axis must be an int"):
        mx.sum(mx.ones((2,)), 0.5)


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("ddof", [0.5, "1", True, None], ids=repr)
def test_ddof_must_be_an_int(op, ddof):  # a float ddof is rejected, never truncated
    with pytest.raises(TypeError, match=f"^{op}: ddof must be an int, got {re.escape(repr(ddof))}"):
        getattr(mx, op)(mx.ones((3,)), ddof=ddof)
    with pytest.raises(ValueError, match=f"^{op}: ddof must be <= 2147483647, got {2**40}"):
        getattr(mx, op)(mx.ones((3,)), ddof=2**40)


@pytest.mark.parametrize("op", ["mean", "var", "std"])
@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16], ids=["float16", "bfloat16"])
def test_half_precision_statistics_accumulate_in_float32(op, dtype):
    # float16: the sum of squares (67500) overflows float16 though the variance fits; bfloat16:
    # 4096 + 1 is 4096 in bfloat16, so a bfloat16 running sum of 5000 ones stalls
    x = np.array([0, 0, 0, 300] * 2, np.float64) if dtype is mx.float16 else np.ones(5000)
    if op == "mean" and dtype is mx.float16:
        x = np.full(1000, 60000.0)
    out = getattr(mx, op)(mx.array(x, dtype))
    assert out.dtype == dtype
    want = getattr(np, op)(x)
    np.testing.assert_allclose(float(out.item()), want, rtol=1e-2 if dtype is mx.bfloat16 else 2e-3)


def test_second_derivatives_compose():
    x = mx.array([0.3, -0.2, 0.5], mx.float64)
    s = np.exp([0.3, -0.2, 0.5]) / np.exp([0.3, -0.2, 0.5]).sum()
    # d/dx0 of softmax(x)[0] through logsumexp's gradient, and through softmax itself
    h = mx.grad(lambda v: mx.grad(lambda w: mx.logsumexp(w))(v)[0])(x)
    assert_allclose(h, s[0] * (np.eye(3)[0] - s))
    h2 = mx.grad(lambda v: mx.softmax(v)[0])(x)
    assert_allclose(h2, s[0] * (np.eye(3)[0] - s))
    batched = mx.vmap(mx.grad(lambda v: mx.max(v)))(mx.array([[1.0, 2.0], [3.0, 0.0]]))
    assert batched.tolist() == [[0.0, 1.0], [1.0, 0.0]]


def test_views_step_sliced():
    base = np.random.default_rng(12).standard_normal((6, 8)).astype(np.float32)
    x = mx.array(base)[::2, ::-3]
    ref = base[::2, ::-3].astype(np.float64)
    assert_allclose(mx.sum(x, 1), ref.sum(axis=1))
    assert_allclose(mx.prod(x, 0), ref.prod(axis=0))
    assert_allclose(mx.argmax(x, 0), ref.argmax(axis=0))
    assert_allclose(mx.logsumexp(x, 1), np.log(np.exp(ref).sum(axis=1)))
    assert_allclose(mx.softmax(x, 0), _softmax64(ref, 0))
