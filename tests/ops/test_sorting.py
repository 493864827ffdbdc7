"""Sorting and selection against NumPy: dtypes, axes, special shapes, views, NaN, errors."""

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


def sample(d: dt.Dtype, shape=(4, 6), seed: int = 0) -> np.ndarray:
    """Values with ties (a small integer range) stored as `d`."""
    rng = np.random.default_rng(seed)
    if d is dt.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    x = rng.integers(0 if d.kind == "u" else -5, 6, size=shape)
    if d.is_floating:
        x = x + rng.uniform(0, 1, size=shape).round(1)
    return x.astype(d.np)


def _np(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) if x.dtype.name == "bfloat16" else x


@pytest.mark.parametrize("d", REAL, ids=lambda d: d.name)
@pytest.mark.parametrize("axis", [-1, 0, None], ids=lambda a: f"axis={a}")
def test_sort_argsort(d, axis):
    x = sample(d)
    a = mx.array(x, d)
    assert_allclose(mx.sort(a, axis=axis), np.sort(_np(x), axis=axis), dtype=d, rtol=0, atol=0)
    expected = np.argsort(_np(x), axis=axis, kind="stable")
    assert_allclose(mx.argsort(a, axis=axis), expected, dtype=dt.uint32)


@pytest.mark.parametrize("shape", [(0,), (1,), (3, 0), (0, 4), (1, 1)], ids=str)
def test_sort_special_shapes(shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    a = mx.array(x)
    assert_allclose(mx.sort(a), np.sort(x), dtype=dt.float32)
    assert_allclose(mx.argsort(a), np.argsort(x), dtype=dt.uint32)
    k = min(1, x.shape[-1])
    assert mx.topk(a, k).shape == (*x.shape[:-1], k)


def test_sort_views_and_nan():
    x = np.random.default_rng(2).standard_normal((5, 8)).astype(np.float32)
    view = mx.array(x).T[::2]
    assert_allclose(mx.sort(view, axis=0), np.sort(x.T[::2], axis=0))
    y = np.array([3.0, np.nan, -1.0, np.inf, -np.inf], np.float32)
    assert_allclose(mx.sort(mx.array(y)), np.sort(y))
    assert_allclose(mx.argsort(mx.array(y)), np.argsort(y, kind="stable"), dtype=dt.uint32)


def test_argsort_is_stable():
    x = np.array([2, 1, 2, 1, 2, 1, 0], np.int32)
    assert mx.argsort(mx.array(x)).tolist() == [6, 1, 3, 5, 0, 2, 4]


@pytest.mark.parametrize("d", [dt.int32, dt.uint8, dt.float16, dt.float32, dt.bfloat16],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("kth", [0, 2, -1])
def test_partition_argpartition(d, kth):
    x = sample(d, shape=(3, 7))
    a = mx.array(x, d)
    ref = np.sort(_np(x), axis=-1)
    out = np.asarray(mx.partition(a, kth)).astype(np.float64)
    k = kth % 7
    np.testing.assert_array_equal(out[:, k], ref[:, k])
    assert (out[:, :k] <= out[:, k:k + 1]).all() and (out[:, k + 1:] >= out[:, k:k + 1]).all()
    idx = mx.argpartition(a, kth, axis=1)
    assert idx.dtype is dt.uint32
    picked = np.take_along_axis(_np(x), np.asarray(idx).astype(np.int64), axis=1)
    np.testing.assert_array_equal(picked[:, k], ref[:, k])
    np.testing.assert_array_equal(np.sort(picked, axis=1), ref)


@pytest.mark.parametrize("d", [dt.int32, dt.float32, dt.float64], ids=lambda d: d.name)
@pytest.mark.parametrize("axis,k", [(-1, 1), (-1, 3), (0, 2), (None, 4), (-1, 0), (-1, 6)])
def test_topk(d, axis, k):
    x = sample(d)
    out = mx.topk(mx.array(x, d), k, axis=axis)
    flat = x.reshape(-1) if axis is None else x
    ax = 0 if axis is None else axis
    expected = np.sort(np.sort(flat, axis=ax), axis=ax)
    expected = np.take(expected, range(flat.shape[ax] - k, flat.shape[ax]), axis=ax)
    assert out.dtype is d
    assert_allclose(mx.sort(out, axis=ax), expected, dtype=d)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("d", [dt.int32, dt.float32, dt.float64], ids=lambda d: d.name)
def test_searchsorted(side, d):
    a = np.array([-2, 0, 0, 1, 3, 3, 7]).astype(d.np)
    v = np.array([[-5, 0, 3], [7, 8, 2]]).astype(d.np)
    out = mx.searchsorted(mx.array(a, d), mx.array(v, d), side=side)
    assert_allclose(out, np.searchsorted(a, v, side=side), dtype=dt.uint32)


def test_searchsorted_vmap_over_sorted_rows():
    a = np.sort(np.random.default_rng(3).standard_normal((4, 6)), axis=1)
    v = np.random.default_rng(4).standard_normal((4, 3))
    out = mx.vmap(lambda a, v: mx.searchsorted(a, v))(mx.array(a), mx.array(v))
    expected = np.stack([np.searchsorted(r, q) for r, q in zip(a.astype(np.float32),
                                                               v.astype(np.float32))])
    assert_allclose(out, expected, dtype=dt.uint32)
    for a_shape, v_shape in (((0, 3), (0, 2)), ((2, 0), (2, 2))):  # empty batch or rows
        out = mx.vmap(mx.searchsorted)(mx.zeros(a_shape), mx.zeros(v_shape))
        assert_allclose(out, np.zeros(v_shape), dtype=dt.uint32)


def test_sort_grad_scatters_back():
    x = mx.array([3.0, 1.0, 2.0])
    g = mx.grad(lambda x: (mx.sort(x) * mx.array([1.0, 10.0, 100.0])).sum())(x)
    assert g.tolist() == [100.0, 1.0, 10.0]
    g = mx.grad(lambda x: mx.topk(x, 2).sum())(x)
    assert g.tolist() == [1.0, 0.0, 1.0]


def test_index_outputs_have_no_gradient():
    x = mx.array([3.0, 1.0, 2.0])
    g = mx.grad(lambda x: (mx.argsort(x).astype(mx.float32) * x).sum())(x)
    assert g.tolist() == [1.0, 2.0, 0.0]  # the indices, as constants


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                  elements=st.floats(-100, 100, width=32)),
       st.integers(-3, 2))
def test_sort_fuzz(x, axis):
    axis = axis % x.ndim
    a = mx.array(x)
    assert_allclose(mx.sort(a, axis=axis), np.sort(x, axis=axis))
    assert_allclose(mx.argsort(a, axis=axis), np.argsort(x, axis=axis, kind="stable"),
                    dtype=dt.uint32)


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.int32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                  elements=st.integers(-3, 3)), st.data())
def test_selection_fuzz_with_ties(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    n, a = x.shape[axis], mx.array(x)
    np.testing.assert_array_equal(np.asarray(mx.argsort(a, axis=axis)),
                                  np.argsort(x, axis=axis, kind="stable"))
    kth = data.draw(st.integers(-n, n - 1), label="kth")
    k, ordered = kth % n, np.sort(x, axis=axis)

    def at(v, positions):
        return np.take(v, list(positions), axis=axis)

    order = np.asarray(mx.argpartition(a, kth, axis=axis)).astype(np.int64)
    positions = np.arange(n).reshape([-1 if i == axis % x.ndim else 1 for i in range(x.ndim)])
    np.testing.assert_array_equal(np.sort(order, axis=axis),
                                  np.broadcast_to(positions, x.shape))  # a permutation
    for part in (np.asarray(mx.partition(a, kth, axis=axis)),
                 np.take_along_axis(x, order, axis=axis)):
        pivot = at(part, [k])
        np.testing.assert_array_equal(pivot, at(ordered, [k]))
        assert (at(part, range(k)) <= pivot).all() and (at(part, range(k + 1, n)) >= pivot).all()
    top = data.draw(st.integers(1, n), label="k")
    np.testing.assert_array_equal(np.sort(np.asarray(mx.topk(a, top, axis=axis)), axis=axis),
                                  at(ordered, range(n - top, n)))
    side = data.draw(st.sampled_from(["left", "right"]), label="side")
    flat = np.sort(x.ravel())
    np.testing.assert_array_equal(np.asarray(mx.searchsorted(mx.array(flat), a, side=side)),
                                  np.searchsorted(flat, x, side=side))


@pytest.mark.parametrize("call,error,message", [
    (lambda: mx.sort(mx.array([1, 2]), axis=1), ValueError, "^sort: axis 1"),
    (lambda: mx.sort(mx.array(1.0)), ValueError, "^sort: axis -1"),
    (lambda: mx.argsort(mx.array([1, 2]), axis=-3), ValueError, "^argsort: axis -3"),
    (lambda: mx.partition(mx.array([1, 2]), 2), ValueError, "^partition: kth 2"),
    (lambda: mx.partition(mx.array([1, 2]), 0.5), TypeError, "^partition: kth must"),
    (lambda: mx.argpartition(mx.array([1, 2]), -3), ValueError, "^argpartition: kth -3"),
    (lambda: mx.argpartition(mx.array([[1, 2]]), 0, axis=2), ValueError, "^argpartition: axis"),
    (lambda: mx.topk(mx.array([1, 2]), 3), ValueError, "^topk: k 3"),
    (lambda: mx.topk(mx.array([1, 2]), -1), ValueError, "^topk: k -1"),
    (lambda: mx.topk(mx.array([1, 2]), 1.0), TypeError, "^topk: k must"),
    (lambda: mx.searchsorted(mx.array([[1, 2]]), mx.array([1])), ValueError,
     "^searchsorted: a must be 1-D"),
    (lambda: mx.searchsorted(mx.array([1, 2]), mx.array([1]), side="middle"), ValueError,
     "^searchsorted: side"),
    (lambda: mx.searchsorted(mx.array([1j]), mx.array([1j])), TypeError,
     "^searchsorted: complex64"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("op", ["topk", "partition", "sort"])
def test_cotangent_follows_each_value(op):
    """Each output's cotangent lands on the input element holding that output's value."""
    x = np.random.default_rng(5).permutation(200).astype(np.float64).reshape(4, 50)
    fn = {"topk": lambda a: mx.topk(a, 7), "partition": lambda a: mx.partition(a, 20),
          "sort": lambda a: mx.sort(a)}[op]
    out = np.asarray(fn(mx.array(x, mx.float64)))
    cot = np.random.default_rng(6).standard_normal(out.shape)
    _, (g,) = mx.vjp(fn, [mx.array(x, mx.float64)], [mx.array(cot, mx.float64)])
    expected = np.zeros_like(x)
    for row in range(x.shape[0]):
        positions = np.searchsorted(np.sort(x[row]), out[row])
        order = np.argsort(x[row])
        expected[row, order[positions]] = cot[row]
    assert_allclose(g, expected, dtype=mx.float64)
