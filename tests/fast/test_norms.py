"""rms_norm, layer_norm and add_rms_norm: values per dtype, checks, derivatives, batching."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
import fast_refs as ref
from fast_refs import DTYPE_IDS, DTYPES, nodes, normal64, sample
from nuvec.fast.norms import AddRmsNorm, LayerNorm, LayerNormVjp, RmsNorm, RmsNormVjp
from nuvec.graph.array import record
from nuvec.testing import assert_allclose, check_grads, check_jvp_vjp

SHAPES = [(8,), (2, 3, 16), (5, 1)]
EPS = 1e-5


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("weighted", [True, False], ids=["weight", "no-weight"])
def test_rms_norm(dtype, shape, weighted):
    rng = np.random.default_rng(1)
    x, xr = sample(rng, shape, dtype)
    w, wr = sample(rng, shape[-1:], dtype) if weighted else (None, None)
    y = mx.fast.rms_norm(x, w, EPS)
    assert_allclose(y, ref.rms_norm(xr, wr, EPS), dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("params", ["both", "weight", "bias", "none"])
def test_layer_norm(dtype, shape, params):
    rng = np.random.default_rng(2)
    x, xr = sample(rng, shape, dtype)
    w, wr = sample(rng, shape[-1:], dtype) if params in ("both", "weight") else (None, None)
    b, br = sample(rng, shape[-1:], dtype) if params in ("both", "bias") else (None, None)
    y = mx.fast.layer_norm(x, w, b, EPS)
    atol = 5e-2 if dtype is mx.bfloat16 and shape[-1] == 1 else None
    assert_allclose(y, ref.layer_norm(xr, wr, br, EPS), dtype=dtype, atol=atol)


def test_the_fallback_graphs_agree_with_the_references():
    rng = np.random.default_rng(3)
    x, xr = sample(rng, (3, 8), mx.float32)
    w, wr = sample(rng, (8,), mx.float32)
    (y,) = RmsNorm(EPS).fallback([x, w])
    assert_allclose(y, ref.rms_norm(xr, wr, EPS), dtype=mx.float32)
    (y,) = LayerNorm(EPS).fallback([x, w, w])
    assert_allclose(y, ref.layer_norm(xr, wr, wr, EPS), dtype=mx.float32)


def test_mixed_dtypes_promote():
    x = mx.array(np.ones((2, 4)), mx.float16)
    assert mx.fast.rms_norm(x, mx.ones((4,), mx.float32), EPS).dtype is mx.float32
    assert mx.fast.layer_norm(x, None, mx.ones((4,), mx.bfloat16), EPS).dtype is mx.float32


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("weighted", [True, False], ids=["weight", "no-weight"])
def test_add_rms_norm(dtype, weighted):
    rng = np.random.default_rng(4)
    x, xr = sample(rng, (3, 16), dtype)
    r, rr = sample(rng, (3, 16), dtype)
    w, wr = sample(rng, (16,), dtype) if weighted else (None, None)
    h, y = mx.fast.add_rms_norm(x, r, w, EPS)
    assert_allclose(h, xr + rr, dtype=dtype)
    assert_allclose(y, ref.rms_norm(np.asarray(h).astype(np.float64), wr, EPS), dtype=dtype)
    if dtype is not mx.float64:
        assert isinstance(y.primitive, AddRmsNorm) or y.is_evaluated


def test_add_rms_norm_broadcasts_a_0d_input_to_the_residual():
    h, y = mx.fast.add_rms_norm(mx.array(1.0), mx.full((2, 8), 2.0), mx.ones((8,)), EPS)
    assert h.shape == y.shape == (2, 8)
    assert_allclose(y, np.ones((2, 8)), dtype=mx.float32)


def test_add_rms_norm_broadcasts_without_fusing():
    rng = np.random.default_rng(5)
    x, xr = sample(rng, (2, 8), mx.float32)
    r, rr = sample(rng, (8,), mx.float32)
    h, y = mx.fast.add_rms_norm(x, r, None, EPS)
    assert nodes(y, AddRmsNorm) == 0
    assert_allclose(y, ref.rms_norm(xr + rr, None, EPS), dtype=mx.float32)


@pytest.mark.parametrize("call, message, error", [
    (lambda: mx.fast.rms_norm(mx.array(1.0), None, EPS),
     "rms_norm: the input needs at least one dimension", ValueError),
    (lambda: mx.fast.rms_norm(mx.ones((2, 4)), mx.ones((3,)), EPS),
     r"rms_norm: weight must be 1-D with 4 elements, got shape \(3,\)", ValueError),
    (lambda: mx.fast.rms_norm(mx.ones((2, 4)), mx.ones((1, 4)), EPS),
     r"rms_norm: weight must be 1-D with 4 elements, got shape \(1, 4\)", ValueError),
    (lambda: mx.fast.rms_norm(mx.array([[1, 2]]), None, EPS),
     "rms_norm: unsupported dtype int32", TypeError),
    (lambda: mx.fast.layer_norm(mx.array(1.0), None, None, EPS),
     "layer_norm: the input needs at least one dimension", ValueError),
    (lambda: mx.fast.layer_norm(mx.ones((2, 4)), None, mx.ones((5,)), EPS),
     r"layer_norm: bias must be 1-D with 4 elements, got shape \(5,\)", ValueError),
    (lambda: mx.fast.layer_norm(mx.ones((2, 4)), mx.ones((2,)), None, EPS),
     r"layer_norm: weight must be 1-D with 4 elements", ValueError),
    (lambda: mx.fast.layer_norm(mx.array([[1, 2]]), None, None, EPS),
     "layer_norm: unsupported dtype int32", TypeError),
    (lambda: mx.fast.add_rms_norm(mx.ones((2, 4)), mx.ones((3,)), None, EPS),
     "add_rms_norm: ", ValueError),
    (lambda: mx.fast.add_rms_norm(mx.array([1, 2]), mx.array([1, 2]), None, EPS),
     "add_rms_norm: unsupported dtype int32", TypeError),
    (lambda: mx.fast.add_rms_norm(mx.ones((2, 8), mx.complex64), mx.ones((2, 8)), mx.ones((8,)),
                                  EPS), "add_rms_norm: unsupported dtype complex64", TypeError),
    (lambda: mx.fast.add_rms_norm(mx.array(1.0), mx.array(2.0), mx.ones((8,)), EPS),
     r"add_rms_norm: the input needs at least one dimension, got shape \(\)", ValueError),
    (lambda: mx.fast.add_rms_norm(mx.ones((1, 8)), mx.ones((2, 8)), mx.ones((4,)), EPS),
     r"add_rms_norm: weight must be 1-D with 8 elements, got shape \(4,\)", ValueError),
], ids=lambda v: v if isinstance(v, str) else None)
def test_rejected_inputs(call, message, error):
    with pytest.raises(error, match="^" + message):
        call()


CPU = mx.default_stream(mx.cpu)


@pytest.mark.parametrize("op, inputs", [
    (RmsNorm(EPS), lambda x: [x, mx.ones((4,), mx.float16)]),
    (RmsNorm(EPS), lambda x: [x, mx.ones((2, 4))]),
    (RmsNorm(EPS), lambda x: [x, mx.ones((3,))]),
    (AddRmsNorm(EPS), lambda x: [x, mx.ones((2, 4), mx.float16), mx.ones((4,))]),
    (AddRmsNorm(EPS), lambda x: [x, x, mx.ones((5,))]),
    (RmsNormVjp(EPS), lambda x: [x, mx.ones((5,)), x]),
    (RmsNormVjp(EPS), lambda x: [x, mx.ones((4,)), mx.ones((2, 4), mx.float16)]),
    (LayerNorm(EPS), lambda x: [x, mx.array(1.0, mx.float16), mx.array(0.0)]),
    (LayerNormVjp(EPS), lambda x: [x, mx.ones((3,)), mx.array(0.0), x]),
    (LayerNormVjp(EPS), lambda x: [x, mx.ones((4,)), mx.ones((4,), mx.float16), x]),
    (AddRmsNorm(EPS), lambda x: [x, mx.ones((2, 3)), mx.ones((4,))]),
    (RmsNormVjp(EPS), lambda x: [x, mx.ones((4,)), mx.ones((4,))]),
    (LayerNorm(EPS), lambda x: [x, mx.ones((4,)), mx.ones((3,))]),
    (LayerNormVjp(EPS), lambda x: [x, mx.ones((4,)), mx.array(0.0), mx.ones((2, 5))]),
], ids=lambda v: v.op if hasattr(v, "op") else None)
def test_a_node_built_directly_with_invalid_inputs_is_rejected(op, inputs):
    x = mx.ones((2, 4))
    with pytest.raises(ValueError, match=f"^{op.op}: invalid inputs"):
        record(op, inputs(x), CPU)


def test_derivatives_of_the_fused_nodes_in_float64():
    rng = np.random.default_rng(6)
    x, w, b = normal64(rng, (3, 6)), normal64(rng, (6,)), normal64(rng, (6,))
    assert isinstance(mx.fast.rms_norm(x, w, EPS).primitive, RmsNorm)
    r = normal64(rng, (3, 6))
    cases = [
        (lambda x, w: mx.fast.rms_norm(x, w, EPS), [x, w]),
        (lambda x, w, b: mx.fast.layer_norm(x, w, b, EPS), [x, w, b]),
        (lambda x, r, w: list(mx.fast.add_rms_norm(x, r, w, EPS)), [x, r, w]),
    ]
    for f, args in cases:
        check_grads(f, args)
        check_jvp_vjp(f, args)


@pytest.mark.parametrize("which", ["rms", "layer"])
def test_grad_of_grad(which):
    rng = np.random.default_rng(7)
    x, w = normal64(rng, (2, 5)), normal64(rng, (5,))
    b, u = normal64(rng, (5,)), normal64(rng, (2, 5))

    def loss(x, w):
        y = mx.fast.rms_norm(x, w, EPS) if which == "rms" else mx.fast.layer_norm(x, w, b, EPS)
        return mx.sum(mx.multiply(y, u))

    first = mx.grad(loss, argnums=(0, 1))
    graph = first(x, w)
    assert nodes(graph[0], RmsNormVjp if which == "rms" else LayerNormVjp) == 1
    check_grads(lambda x, w: list(first(x, w)), [x, w])
    check_jvp_vjp(lambda x, w: list(first(x, w)), [x, w])


def test_the_fused_vjp_matches_the_fallback_graphs_vjp_in_float32():
    rng = np.random.default_rng(8)
    x, w, b, g = (mx.array(rng.standard_normal(s), mx.float32) for s in
                  ((4, 8), (8,), (8,), (4, 8)))
    for op, inputs in ((RmsNorm(EPS), [x, w]), (LayerNorm(EPS), [x, w, b])):
        fused = op.vjp(inputs, [g], list(range(len(inputs))), [])
        plain = op.fallback_vjp(inputs, [g], list(range(len(inputs))))
        for a, p in zip(fused, plain):
            np.testing.assert_allclose(np.asarray(a), np.asarray(p), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cls", [RmsNorm, LayerNorm])
def test_vmap_keeps_one_node_with_the_batch_axis_first(cls):
    rng = np.random.default_rng(9)
    x = mx.array(rng.standard_normal((2, 4, 3)), mx.float32)
    w = mx.array(rng.standard_normal((3,)), mx.float32)

    def f(row):
        if cls is RmsNorm:
            return mx.fast.rms_norm(row, w, EPS)
        return mx.fast.layer_norm(row, w, None, EPS)

    y = mx.vmap(f, in_axes=1, out_axes=0)(x)
    assert nodes(y, cls) == 1
    xr, wr = np.moveaxis(np.asarray(x, np.float64), 1, 0), np.asarray(w, np.float64)
    want = ref.rms_norm(xr, wr, EPS) if cls is RmsNorm else ref.layer_norm(xr, wr, None, EPS)
    assert_allclose(y, want, dtype=mx.float32, rtol=1e-5, atol=1e-5)
