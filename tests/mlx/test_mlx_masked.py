"""Boolean-mask assignment and `masked_scatter` (issue 12, item 3), against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from nuvec.testing import check_grads, check_jvp_vjp

X = np.arange(12, dtype=np.float32).reshape(3, 4)
MASK = (X % 3) == 1


def test_mask_assign_scalar():
    a, ref = mx.array(X), X.copy()
    a[mx.array(MASK)] = -1.0
    ref[MASK] = -1.0
    np.testing.assert_array_equal(np.asarray(a), ref)
    b = mx.array(X)
    b[b > 5] = 0
    np.testing.assert_array_equal(np.asarray(b), np.where(X > 5, 0, X))


def test_mask_assign_values_in_order():
    a, ref = mx.array(X), X.copy()
    values = np.arange(100, 100 + MASK.sum(), dtype=np.float32)
    a[mx.array(MASK)] = mx.array(values)
    ref[MASK] = values
    np.testing.assert_array_equal(np.asarray(a), ref)


def test_mask_over_leading_axes_selects_rows():
    rows = np.array([True, False, True])
    a, ref = mx.array(X), X.copy()
    a[mx.array(rows)] = mx.array([7.0, 8.0, 9.0, 10.0])  # one row, broadcast
    ref[rows] = [7.0, 8.0, 9.0, 10.0]
    np.testing.assert_array_equal(np.asarray(a), ref)
    a, ref = mx.array(X), X.copy()
    update = np.arange(8, dtype=np.float32).reshape(2, 4)
    a[mx.array(rows)] = mx.array(update)
    ref[rows] = update
    np.testing.assert_array_equal(np.asarray(a), ref)


def test_masked_scatter_matches_torch_semantics():
    src = np.arange(50, 62, dtype=np.float32)
    got = mx.masked_scatter(mx.array(X), mx.array(MASK), mx.array(src))
    ref = X.copy()
    ref[MASK] = src[: MASK.sum()]
    np.testing.assert_array_equal(np.asarray(got), ref)
    # a mask broadcast over the rows
    row = np.array([True, False, False, True])
    got = mx.masked_scatter(mx.array(X), mx.array(row), mx.array(src))
    ref = X.copy()
    ref[np.broadcast_to(row, X.shape)] = src[:6]
    np.testing.assert_array_equal(np.asarray(got), ref)


def test_masked_scatter_errors():
    with pytest.raises(TypeError, match="^masked_scatter: mask must be a bool array, got int32"):
        mx.masked_scatter(mx.zeros(3), mx.array([1, 0, 1]), mx.ones(3))
    with pytest.raises(ValueError, match=r"^masked_scatter: .*\(2,\) and \(3,\)"):
        mx.masked_scatter(mx.zeros(3), mx.array([True, False]), mx.ones(3))
    with pytest.raises(mx.EvaluationError, match="out of bounds"):
        mx.eval(mx.masked_scatter(mx.zeros(3), mx.array([True, True, True]), mx.ones(2)))
    with pytest.raises(ValueError, match=r"^setitem: a boolean index of shape \(2,\) must"):
        a = mx.zeros((3, 2))
        a[mx.array([True, False])] = 1.0


def test_masked_scatter_gradients():
    mask = mx.array(MASK)
    args = [mx.array(X, mx.float64), mx.array(np.linspace(-1, 1, 12), mx.float64)]
    check_grads(lambda a, s: mx.masked_scatter(a, mask, s) ** 2, args)
    check_jvp_vjp(lambda a, s: mx.masked_scatter(a, mask, s) ** 2, args)


def test_mask_assign_gradient():
    def f(a, v):
        a = a * 1.0
        a[a > 4] = v
        return (a * a).sum()

    a, v = mx.array(X), mx.array(3.0)
    ga, gv = mx.grad(f, argnums=(0, 1))(a, v)
    np.testing.assert_array_equal(np.asarray(ga), np.where(X > 4, 0, 2 * X))
    assert gv.item() == pytest.approx(2 * 3.0 * (X > 4).sum())


def test_masked_scatter_vmap():
    masks = np.array([[True, False, True], [False, True, True]])
    srcs = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
    got = mx.vmap(mx.masked_scatter)(mx.zeros((2, 3)), mx.array(masks), mx.array(srcs))
    ref = np.zeros((2, 3), np.float32)
    for i in range(2):
        ref[i][masks[i]] = srcs[i][: masks[i].sum()]
    np.testing.assert_array_equal(np.asarray(got), ref)
