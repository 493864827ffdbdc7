"""The initializers of `nn.init` against their distributions' formulas (moments, bounds,
structure) and their rejected shapes."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nuvec as mx
import nuvec.nn as nn

I = nn.init


@pytest.fixture(autouse=True)
def _seed() -> None:
    mx.random.seed(42)


def test_constant_normal_uniform_identity() -> None:
    a = mx.zeros((200, 300))
    assert np.asarray(I.constant(0.25, mx.float16)(a)).tolist()[0][:2] == [0.25, 0.25]
    assert I.constant(0.25, mx.float16)(a).dtype == mx.float16
    x = np.asarray(I.normal(1.5, 0.5)(a))
    np.testing.assert_allclose([x.mean(), x.std()], [1.5, 0.5], rtol=0.02)
    u = np.asarray(I.uniform(-2.0, 4.0)(a))
    assert u.min() >= -2 and u.max() < 4
    np.testing.assert_allclose([u.mean(), u.std()], [1.0, 6 / math.sqrt(12)], rtol=0.02,
                               atol=0.02)
    assert I.uniform(dtype=mx.float64)(a).dtype == mx.float64
    np.testing.assert_array_equal(np.asarray(I.identity()(mx.zeros((3, 3)))), np.eye(3))
    with pytest.raises(ValueError, match=r"identity: the input array must be a square matrix "
                                         r"but got shape \(2, 3\)"):
        I.identity()(mx.zeros((2, 3)))


def test_glorot_and_he() -> None:
    w = mx.zeros((400, 20, 30))  # fan_in = 30 * 20, fan_out = 400 * 20
    fan_in, fan_out = 600, 8000
    g = np.asarray(I.glorot_normal()(w, gain=2.0))
    np.testing.assert_allclose(g.std(), 2.0 * math.sqrt(2 / (fan_in + fan_out)), rtol=0.02)
    gu = np.asarray(I.glorot_uniform()(w))
    limit = math.sqrt(6 / (fan_in + fan_out))
    assert np.abs(gu).max() <= limit
    np.testing.assert_allclose(gu.std(), limit / math.sqrt(3), rtol=0.02)
    h = np.asarray(I.he_normal()(w))
    np.testing.assert_allclose(h.std(), 1 / math.sqrt(fan_in), rtol=0.02)
    h_out = np.asarray(I.he_normal()(w, mode="fan_out", gain=3.0))
    np.testing.assert_allclose(h_out.std(), 3 / math.sqrt(fan_out), rtol=0.02)
    hu = np.asarray(I.he_uniform()(w))
    limit = math.sqrt(3 / fan_in)
    assert np.abs(hu).max() <= limit
    np.testing.assert_allclose(hu.std(), limit / math.sqrt(3), rtol=0.02)
    with pytest.raises(ValueError, match="he_uniform: invalid mode: fan_avg. Valid modes are: "
                                         "fan_in, fan_out"):
        I.he_uniform()(w, mode="fan_avg")
    with pytest.raises(ValueError, match="glorot_normal: Glorot / He initialization requires at "
                                         "least 2 dimensional input but input with 1 dimensions"):
        I.glorot_normal()(mx.zeros((3,)))


def test_sparse_and_orthogonal() -> None:
    s = np.asarray(I.sparse(0.3, mean=0.0, std=2.0)(mx.zeros((500, 10))))
    assert ((s == 0).sum(axis=1) == 3).all()
    np.testing.assert_allclose(s[s != 0].std(), 2.0, rtol=0.05)
    with pytest.raises(ValueError, match=r"sparse: only arrays with 2 dimensions are "
                                         r"supported, got shape \(3,\)"):
        I.sparse(0.5)(mx.zeros((3,)))
    for shape in [(4, 6), (6, 4), (5, 5)]:
        q = np.asarray(I.orthogonal(gain=1.5)(mx.zeros(shape)), np.float64)
        small = min(shape)
        gram = q @ q.T if shape[0] <= shape[1] else q.T @ q
        np.testing.assert_allclose(gram, 2.25 * np.eye(small), atol=1e-5)
    with pytest.raises(ValueError, match="orthogonal: requires a 2D array but got a 3D array"):
        I.orthogonal()(mx.zeros((2, 2, 2)))


INIT_ERRORS = [
    ("sparse-inf", lambda: nn.init.sparse(float("inf")), ValueError,
     "^sparse: sparsity must be finite, got inf"),
    ("sparse-nan", lambda: nn.init.sparse(float("nan")), ValueError,
     "^sparse: sparsity must be finite, got nan"),
    ("sparse-above-1", lambda: nn.init.sparse(1.5), ValueError,
     r"^sparse: sparsity must be in \[0, 1\], got 1.5"),
    ("sparse-str", lambda: nn.init.sparse("x"), TypeError,
     "^sparse: sparsity must be a real number"),
    ("normal-None", lambda: nn.init.normal()(None), TypeError,
     "^normal: cannot convert NoneType to an array"),
    ("he_uniform-None", lambda: nn.init.he_uniform()(None), TypeError,
     "^he_uniform: cannot convert NoneType to an array"),
    ("glorot_normal-None", lambda: nn.init.glorot_normal()(None), TypeError,
     "^glorot_normal: cannot convert NoneType to an array"),
    ("constant-str", lambda: nn.init.constant(1.0)("ab"), TypeError,
     "^constant: cannot convert str to an array"),
    ("orthogonal-None", lambda: nn.init.orthogonal()(None), TypeError,
     "^orthogonal: cannot convert NoneType to an array"),
    ("normal-mean-str", lambda: nn.init.normal(mean="a", std=1.0), TypeError,
     "^normal: mean must be a real number, got 'a'"),
    ("normal-std-str", lambda: nn.init.normal(std="b"), TypeError,
     "^normal: std must be a real number, got 'b'"),
    ("uniform-low-str", lambda: nn.init.uniform(low="a"), TypeError,
     "^uniform: low must be a real number, got 'a'"),
    ("uniform-high-None", lambda: nn.init.uniform(high=None), TypeError,
     "^uniform: high must be a real number, got None"),
    ("constant-value-str", lambda: nn.init.constant("a"), TypeError,
     "^constant: value must be a real number, got 'a'"),
]


def test_initializer_parameters_may_be_arrays() -> None:
    """As in MLX: array parameters broadcast against the initialized array."""
    assert nn.init.constant(mx.array([1.0, 2.0]))(mx.zeros((2, 2))).tolist() == [[1, 2], [1, 2]]
    low = nn.init.uniform(low=mx.array(2.0), high=mx.array([3.0, 4.0]))(mx.zeros((2,)))
    assert bool(mx.all(low >= 2.0))
    spread = nn.init.normal(mean=mx.array([0.0, 100.0]), std=mx.array(0.0))(mx.zeros((2,)))
    assert spread.tolist() == [0.0, 100.0]


@pytest.mark.parametrize("call,error,message", [c[1:] for c in INIT_ERRORS],
                         ids=[c[0] for c in INIT_ERRORS])
def test_initializer_rejects_bad_arguments(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()
