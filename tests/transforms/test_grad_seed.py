"""`grad`'s seed cotangent is a stored leaf of ones: rules reshape and broadcast it without
nodes and skip multiplying by it (1 * x is x exactly), so a backward pass records only the
work a hand-written gradient does."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from nuvec.graph.toposort import toposort
from nuvec.ops.families import is_ones, ones, times
from nuvec.testing import assert_allclose


def _primitives(a):
    nodes = toposort([a._node], lambda n: n.primitive is not None)
    return [type(n.primitive).__name__ for n in nodes if n.primitive is not None]


def test_tanh_chain_gradient_records_no_work_on_the_seed():
    rng = np.random.default_rng(0)
    x_np, w_np = rng.standard_normal((6, 5)), rng.standard_normal((5, 4)) * 0.5
    x = mx.array(x_np, mx.float64)
    g = mx.grad(lambda w: mx.sum(mx.tanh(mx.tanh(x @ w))))(mx.array(w_np, mx.float64))
    names = _primitives(g)
    assert "BroadcastTo" not in names and "Reshape" not in names
    # 1 - t2² from t2 alone (no product with ones), then times 1 - t1², one node each
    assert names.count("DerivativeProduct") == 2 and "Multiply" not in names
    t1 = np.tanh(x_np @ w_np)
    t2 = np.tanh(t1)
    assert_allclose(g, x_np.T @ ((1 - t2 ** 2) * (1 - t1 ** 2)))


@pytest.mark.parametrize("dtype", [mx.float16, mx.float32, mx.float64])
def test_relu_gradient_is_one_node_with_the_compositions_bits(dtype):
    """`maximum(x, 0)`'s rule records one `DerivativeProduct` (the mask and its product as
    one pass) with the bits of `g * (out > 0)`: NaN, -0.0 and the tie at 0 (to `b`)."""
    x = np.array([[-1.0, 0.0, -0.0, 2.0], [np.nan, 3.0, -np.inf, np.inf]])
    g = np.array([[2.0, -3.0, 1.0, -0.5], [4.0, np.nan, -1.0, -2.0]])
    xa, ga = mx.array(x, dtype), mx.array(g, dtype)
    _, (got,) = mx.vjp(lambda v: mx.maximum(v, 0), [xa], [ga])
    seed = mx.grad(lambda v: mx.sum(mx.maximum(v, 0)))(xa)
    assert _primitives(got).count("DerivativeProduct") == 1
    assert {"Compare", "AsType", "Multiply"}.isdisjoint(_primitives(got))
    gn, xn = np.asarray(ga), np.asarray(xa)
    want = gn * (np.maximum(xn, 0) > 0).astype(gn.dtype)
    np.testing.assert_array_equal(np.asarray(got).view(np.uint8), want.view(np.uint8))
    np.testing.assert_array_equal(np.asarray(seed), (xn > 0).astype(gn.dtype))
    # a maximum with anything but the integer 0 keeps the general rule
    _, (other,) = mx.vjp(lambda v: mx.maximum(v, 0.5), [xa], [ga])
    assert "DerivativeProduct" not in _primitives(other)


def test_gradient_of_a_sum_and_mean_are_exact():
    x = mx.array([[1.0, -2.0, np.inf], [np.nan, 0.0, -0.0]])
    g = np.asarray(mx.grad(lambda v: mx.sum(v))(x))
    np.testing.assert_array_equal(g, np.ones((2, 3)))
    g = np.asarray(mx.grad(lambda v: mx.mean(v * 3.0))(x))
    np.testing.assert_allclose(g, np.full((2, 3), 0.5), rtol=1e-7)
    # a product with the seed keeps every value bit for bit: NaN, infinities and -0.0
    y = mx.array([np.nan, -np.inf, -0.0, 1e-45], mx.float32)
    out = times(ones(y.shape, y.dtype), y)
    assert out is not y and np.array_equal(np.asarray(out), np.asarray(y), equal_nan=True)
    assert np.signbit(np.asarray(out)[2])


def test_is_ones_only_for_the_stored_leaf():
    assert is_ones(ones((2, 3), mx.float32))
    assert not is_ones(ones((2, 3), mx.float32) * 1.0)  # a node, even of ones
    assert not is_ones(mx.full((2, 3), 2.0))
    assert times(ones((2,), mx.float32), mx.ones((3,))) is None  # shapes differ
    assert times(ones((2,), mx.float64), mx.ones((2,))) is None  # dtypes differ


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16, mx.float32, mx.float64])
def test_tanh_and_sigmoid_derivatives_of_a_scalar(dtype):
    """`DerivativeProduct` on 0-d arrays (NumPy gives them scalars), to the second order."""
    t, s = np.tanh(0.3), 1 / (1 + np.exp(-0.3))
    x = mx.array(0.3, dtype)
    tol = 1e-2 if dtype in (mx.float16, mx.bfloat16) else 1e-6
    got = [mx.grad(lambda v: mx.tanh(v) * 3.0)(x), mx.grad(lambda v: mx.sigmoid(v))(x),
           mx.grad(mx.grad(lambda v: mx.tanh(v)))(x), mx.grad(mx.grad(mx.sigmoid))(x)]
    want = [3 * (1 - t * t), s * (1 - s), -2 * t * (1 - t * t), s * (1 - s) * (1 - 2 * s)]
    for g, w in zip(got, want):
        assert g.dtype is dtype and g.shape == ()
        assert abs(g.item() - w) <= tol * max(1.0, abs(w))
