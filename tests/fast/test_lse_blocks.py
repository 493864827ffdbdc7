"""logsumexp and cross_entropy on the CPU bodies' two paths: inputs of one block (the rows at
once) and inputs split into cache-sized blocks of rows (with a ragged last block)."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
import fast_refs as ref
from fast_refs import sample
from nuvec.backends.common import fast as bodies
from nuvec.testing import assert_allclose


@pytest.fixture(params=["one block", "blocks"])
def path(request, monkeypatch):
    if request.param == "blocks":
        monkeypatch.setattr(bodies, "_BLOCK", 64)  # [37, 9]: 7 rows a block, 2 in the last
    return request.param


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64, mx.float16], ids=lambda d: d.name)
def test_logsumexp_and_cross_entropy_on_both_paths(path, dtype):
    rng = np.random.default_rng(11)
    x, xr = sample(rng, (37, 9), dtype, scale=3.0)
    data = np.asarray(x).copy()
    data[3], data[5, 2], data[6, 4] = -np.inf, np.inf, -np.inf  # a -inf row, a +inf maximum
    x, xr = mx.array(data, dtype), data.astype(np.float64)
    t_np = rng.integers(-9, 9, 37).astype(np.int32)
    assert_allclose(mx.fast.logsumexp(x), ref.logsumexp(xr), dtype=dtype)
    with np.errstate(invalid="ignore"):
        want = ref.cross_entropy(xr, t_np)
    tol = 2e-3 if dtype is mx.float16 else 1e-5  # (the loss is float32 for every dtype)
    assert_allclose(mx.fast.cross_entropy(x, mx.array(t_np)), want, dtype=mx.float32,
                    rtol=tol, atol=tol)


def _bits(a) -> np.ndarray:
    data = np.ascontiguousarray(np.asarray(a))
    return data.view(np.dtype(f"u{data.itemsize}"))


def _loss_and_grad(x, t):
    w = mx.array(np.linspace(-1.0, 2.0, t.size).reshape(t.shape), mx.float32)
    loss = mx.fast.cross_entropy(x, t)
    g = mx.grad(lambda x: mx.sum(mx.fast.cross_entropy(x, t) * w))(x)
    return np.asarray(loss), np.asarray(g)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64, mx.float16], ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(256, 10), (3, 5, 7), (4, 70), ()], ids=str)
def test_cross_entropy_small_rows_match_the_general_path(monkeypatch, dtype, shape):
    """Targets all in range on one block of logits take the short path (no wrapping or masks,
    the row maximum from a transposed copy for short rows): bit for bit the general path's
    loss and gradient, infinite and NaN entries included, and the float64 reference's."""
    rng = np.random.default_rng(5)
    *rows, classes = shape or (9,)
    data = rng.standard_normal((*rows, classes)) * 3.0
    flat = data.reshape(-1, classes)
    if flat.shape[0] > 3:
        flat[0] = -np.inf
        flat[1, 2], flat[2, 1] = np.inf, np.nan
        flat[3, :2] = [-0.0, 0.0]
    x = mx.array(data, dtype)
    t = mx.array(rng.integers(0, classes, tuple(rows)).astype(np.int32))
    short = _loss_and_grad(x, t)
    monkeypatch.setattr(bodies, "_small_rows", lambda xp, x, targets: False)
    monkeypatch.setattr(bodies, "_SHORT_ROW", 0)
    general = _loss_and_grad(x, t)
    for a, b in zip(short, general):
        np.testing.assert_array_equal(_bits(a), _bits(b))
    xr = np.asarray(x).astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = ref.cross_entropy(xr, np.asarray(t))
    tol = 2e-3 if dtype is mx.float16 else 1e-5
    np.testing.assert_allclose(short[0], want, rtol=tol, atol=tol)


def test_short_row_maximum_is_the_row_maximum():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 33, 6)).astype(np.float32)
    x[0, 0, 3], x[1, 2, 0], x[2, 3] = np.nan, np.inf, -np.inf
    got = bodies._row_max(np, x)
    assert got.shape == (5, 33, 1)
    np.testing.assert_array_equal(got, x.max(axis=-1, keepdims=True))
