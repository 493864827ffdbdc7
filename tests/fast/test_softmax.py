"""Fused softmax, logsumexp and cross_entropy: values, checks, closed-form rules, batching."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
import fast_refs as ref
from fast_refs import DTYPE_IDS, DTYPES, nodes, normal64, sample
from nuvec.fast.cross_entropy import CrossEntropy, CrossEntropyVjp
from nuvec.fast.softmax import LogSumExp, Softmax
from nuvec.graph.array import record
from nuvec.testing import assert_allclose, check_grads, check_jvp_vjp

SHAPES = [(7,), (3, 4, 9), (2, 1)]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_softmax_and_logsumexp(dtype, shape):
    rng = np.random.default_rng(0)
    x, xr = sample(rng, shape, dtype, scale=3.0)
    assert_allclose(mx.fast.softmax(x), ref.softmax(xr), dtype=dtype)
    assert_allclose(mx.fast.logsumexp(x), ref.logsumexp(xr), dtype=dtype)


def test_infinities():
    data = np.array([[np.inf, 1.0], [-np.inf, -np.inf], [0.0, -np.inf]])
    for dtype in (mx.float32, mx.float64):
        x = mx.array(data, dtype)
        assert_allclose(mx.fast.logsumexp(x), ref.logsumexp(data), dtype=dtype)
        (y,) = LogSumExp().fallback([x])
        assert_allclose(y, ref.logsumexp(data), dtype=dtype)
        assert_allclose(mx.fast.softmax(x)[2], [1.0, 0.0], dtype=dtype)


def test_fallback_graphs_agree():
    rng = np.random.default_rng(1)
    x, xr = sample(rng, (3, 5), mx.float16)
    assert_allclose(Softmax().fallback([x])[0], ref.softmax(xr), dtype=mx.float16)
    assert_allclose(LogSumExp().fallback([x])[0], ref.logsumexp(xr), dtype=mx.float16)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_cross_entropy(dtype):
    rng = np.random.default_rng(2)
    x, xr = sample(rng, (2, 3, 10), dtype, scale=2.0)
    t = rng.integers(-10, 10, size=(2, 3))
    y = mx.fast.cross_entropy(x, mx.array(t, mx.int64))
    tol = {"float16": 2e-3, "bfloat16": 1e-2}.get(dtype.name, 1e-5)
    assert_allclose(y, ref.cross_entropy(xr, t), dtype=mx.float32, rtol=tol, atol=tol)
    (z,) = CrossEntropy().fallback([x, mx.array(t, mx.int32)])
    assert_allclose(z, ref.cross_entropy(xr, t), dtype=mx.float32, rtol=tol, atol=tol)


def test_cross_entropy_rejects_evaluated_targets_out_of_range():
    x = mx.ones((4, 5))
    for bad in (5, -6):
        with pytest.raises(ValueError, match=rf"^cross_entropy: target {bad} is out of range "
                                             r"for 5 classes \(targets must lie in \[-5, 5\)\)"):
            mx.fast.cross_entropy(x, mx.array([0, bad, 1, 2]))


@pytest.mark.parametrize("path", ["node", "fallback"])
def test_cross_entropy_of_lazy_targets_out_of_range_is_nan(path):
    """Targets computed lazily cannot be checked at the call: a target outside [-C, C) gives
    its row a NaN loss and gradient, never a plausible value."""
    rng = np.random.default_rng(7)
    x, xr = sample(rng, (4, 5), mx.float32)
    t = mx.add(mx.array([5, -6, -1, 2]), 0)  # not evaluated yet
    if path == "node":
        y = mx.fast.cross_entropy(x, t)
    else:
        (y,) = CrossEntropy().fallback([x, mx.astype(t, mx.int32)])
    want = ref.logsumexp(xr)[:, 0]
    want[:2] = np.nan
    want[2] -= xr[2, 4]
    want[3] -= xr[3, 2]
    assert_allclose(y, want, dtype=mx.float32)
    g = mx.grad(lambda x: mx.sum(mx.fast.cross_entropy(x, mx.add(mx.array([5, 2]), 0))))(x[:2])
    p = ref.softmax(xr[:2])
    p[0] = np.nan
    p[1, 2] -= 1
    assert_allclose(g, p, dtype=mx.float32)


@pytest.mark.parametrize("shape", [(6, 5), (70, 1000)], ids=["one_block", "blocks"])
def test_cross_entropy_kernel_paths(shape):
    """Rows that fit one block and rows over several take different kernel paths: both give
    the reference loss and gradient, with wrapped, out-of-range and infinite entries."""
    rng = np.random.default_rng(8)
    rows, classes = shape
    xr = rng.standard_normal(shape) * 2.0
    xr[1, 3] = np.inf
    t = rng.integers(-classes, classes, size=rows)
    t[2], t[4] = classes, -classes - 3  # out of range: NaN rows
    x = mx.array(xr, mx.float32)
    xr = np.asarray(x).astype(np.float64)

    def lazy():  # not evaluated yet: not checked at the call
        return mx.add(mx.array(t, mx.int32), 0)

    with np.errstate(invalid="ignore"):  # the row holding inf
        want = ref.cross_entropy(xr, np.where((t >= classes) | (t < -classes), 0, t))
        p = ref.softmax(xr)
    want[[2, 4]] = np.nan
    assert_allclose(mx.fast.cross_entropy(x, lazy()), want, dtype=mx.float32)
    w = rng.standard_normal(rows)
    g = mx.grad(lambda x: mx.sum(mx.fast.cross_entropy(x, lazy()) * mx.array(w, mx.float32)))(x)
    keep = [i for i in range(rows) if i not in (1, 2, 4)]
    p[np.arange(rows), t % classes] -= 1
    got = np.asarray(g)
    np.testing.assert_allclose(got[keep], (p * w[:, None])[keep], rtol=1e-4, atol=1e-6)
    assert np.isnan(got[[2, 4]]).all()


def test_cross_entropy_of_one_row():
    y = mx.fast.cross_entropy(mx.array([1.0, 2.0, 3.0]), mx.array(-1))
    assert y.shape == () and abs(y.item() - ref.cross_entropy(np.array([1.0, 2, 3]), 2)) < 1e-6


@pytest.mark.parametrize("call, message, error", [
    (lambda: mx.fast.softmax(mx.array(1.0)), "softmax: the input needs at least one dimension",
     ValueError),
    (lambda: mx.fast.softmax(mx.array([1, 2])), "softmax: unsupported dtype int32", TypeError),
    (lambda: mx.fast.logsumexp(mx.array(1.0)),
     "logsumexp: the input needs at least one dimension", ValueError),
    (lambda: mx.fast.logsumexp(mx.array([True])), "logsumexp: unsupported dtype bool",
     TypeError),
    (lambda: mx.fast.logsumexp(mx.zeros((3, 0))),
     r"logsumexp: cannot reduce over an empty last axis, got shape \(3, 0\)", ValueError),
    (lambda: mx.fast.cross_entropy(mx.zeros((3, 0)), mx.zeros((3,), mx.int32)),
     r"cross_entropy: logits of shape \(3, 0\) have no classes", ValueError),
    (lambda: mx.fast.cross_entropy(mx.ones((2, 3)), mx.array([0, 1, 2])),
     r"cross_entropy: targets of shape \(3,\) do not match logits of shape \(2, 3\)",
     ValueError),
    (lambda: mx.fast.cross_entropy(mx.array(1.0), mx.array(0)),
     r"cross_entropy: targets of shape \(\) do not match logits of shape \(\)", ValueError),
    (lambda: mx.fast.cross_entropy(mx.array([[1, 2]]), mx.array([0])),
     "cross_entropy: unsupported dtype int32", TypeError),
    (lambda: mx.fast.cross_entropy(mx.ones((2, 3)), mx.array([0.0, 1.0])),
     "cross_entropy: targets must be integer class indices, got float32", TypeError),
], ids=lambda v: v if isinstance(v, str) else None)
def test_rejected_inputs(call, message, error):
    with pytest.raises(error, match="^" + message):
        call()


CPU = mx.default_stream(mx.cpu)
X = mx.ones((2, 3))


@pytest.mark.parametrize("op, inputs", [
    (CrossEntropy(), [X, mx.array([0, 1], mx.int64)]),
    (CrossEntropy(), [X, mx.array([0, 1, 2], mx.int32)]),
    (CrossEntropyVjp(), [X, mx.array([0, 1], mx.int32), mx.ones((2,), mx.float16),
                         mx.ones((2,))]),
    (CrossEntropyVjp(), [X, mx.array([0, 1], mx.int32), mx.ones((2,)), mx.ones((3,))]),
], ids=lambda v: v.op if hasattr(v, "op") else None)
def test_a_node_built_directly_with_invalid_inputs_is_rejected(op, inputs):
    with pytest.raises(ValueError, match=f"^{op.op}: invalid inputs"):
        record(op, inputs, CPU)


def test_softmax_arity_is_checked():
    with pytest.raises(ValueError, match="^softmax: 1 inputs expected, got 2"):
        record(Softmax(), [X, X], CPU)
    # A 0-d input is rejected with the arity message, as the seed's `outputs` does.
    with pytest.raises(ValueError, match="^logsumexp: 1 inputs expected, got 1"):
        record(LogSumExp(), [mx.array(1.0)], CPU)
    with pytest.raises(TypeError, match="^softmax: unsupported dtype int32"):
        record(Softmax(), [mx.array([1, 2])], CPU)


def test_closed_form_derivatives():
    rng = np.random.default_rng(3)
    x = normal64(rng, (3, 5))
    for f, cls in ((mx.fast.softmax, Softmax), (mx.fast.logsumexp, LogSumExp)):
        assert isinstance(f(x).primitive, cls)
        check_grads(f, [x])
        check_jvp_vjp(f, [x])
        check_grads(lambda x: mx.grad(lambda x: mx.sum(mx.sin(f(x))))(x), [x])


def test_cross_entropy_gradient():
    rng = np.random.default_rng(4)
    x = normal64(rng, (4, 6))
    t = mx.array([0, -1, 3, 5])

    def loss(x):
        return mx.sum(mx.multiply(mx.fast.cross_entropy(x, t), mx.array([1.0, 2.0, -1.0, 0.5])))

    g = mx.grad(loss)(x)
    assert nodes(g, CrossEntropyVjp) == 1
    # The loss is float32, so the finite differences are at float32 precision.
    check_grads(loss, [x], eps=1e-3, rtol=1e-3, atol=1e-4)
    check_jvp_vjp(lambda x: mx.fast.cross_entropy(x, t), [x],
                  rtol=1e-5, atol=1e-6)
    xr = np.asarray(x)
    p = ref.softmax(xr)
    p[np.arange(4), [0, 5, 3, 5]] -= 1
    np.testing.assert_allclose(np.asarray(g), p * np.array([1.0, 2.0, -1.0, 0.5])[:, None],
                               rtol=1e-5, atol=1e-6)


def test_no_gradient_with_respect_to_the_targets():
    t = mx.array([0.0, 1.0])
    with pytest.raises(ValueError, match="^cross_entropy: no gradient with respect to the targ"):
        mx.grad(lambda t: mx.sum(mx.fast.cross_entropy(X, mx.astype(t, mx.int32))))(t)


@pytest.mark.parametrize("f, cls", [(mx.fast.softmax, Softmax), (mx.fast.logsumexp, LogSumExp)])
def test_vmap_keeps_one_node(f, cls):
    rng = np.random.default_rng(5)
    x, xr = sample(rng, (3, 4, 5), mx.float32)
    y = mx.vmap(f, in_axes=1)(x)
    assert nodes(y, cls) == 1
    want = (ref.softmax if cls is Softmax else ref.logsumexp)(np.moveaxis(xr, 1, 0))
    assert_allclose(y, want, dtype=mx.float32)


def test_vmap_of_cross_entropy_moves_both_inputs_first():
    rng = np.random.default_rng(6)
    x, xr = sample(rng, (5, 3, 4), mx.float32)
    t = np.array([1, 2, 0, -1, 3])
    y = mx.vmap(mx.fast.cross_entropy, in_axes=(1, None))(x, mx.array(t))
    assert nodes(y, CrossEntropy) == 1
    want = ref.cross_entropy(np.moveaxis(xr, 1, 0), np.broadcast_to(t, (3, 5)))
    assert_allclose(y, want, dtype=mx.float32)


@pytest.mark.parametrize("shape", [(2, 0), (0, 3), (0,)], ids=str)
def test_softmax_of_empty_input_is_empty(shape):
    x = mx.zeros(shape)
    y = mx.fast.softmax(x)
    assert y.shape == shape and y.dtype == mx.float32 and y.size == 0
    assert mx.grad(lambda x: mx.sum(mx.fast.softmax(x)))(x).shape == shape
