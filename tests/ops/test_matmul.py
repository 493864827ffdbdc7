"""Conformance of `matmul` and `addmm` against NumPy (float64 references), and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from helpers import ids
from nuvec.testing import assert_allclose, to_numpy64

FLOATS = [mx.float16, mx.float32, mx.float64, mx.bfloat16]
SHAPES = [
    ((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)), ((2, 1, 2, 3), (4, 3, 2)), ((5, 2, 3), (3,)), ((4,), (2, 4, 3)),
    ((0, 3), (3, 2)), ((2, 0), (0, 3)), ((1, 1), (1, 1)), ((2, 0, 3), (3, 4)),
    ((2, 3, 0), (0, 4)), ((0, 2, 3), (3, 4)),
]


def sample(shape, dtype, rng):
    return mx.array(rng.standard_normal(shape), dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
@pytest.mark.parametrize("sa,sb", SHAPES, ids=ids)
def test_matmul(dtype, sa, sb):
    rng = np.random.default_rng(0)
    a, b = sample(sa, dtype, rng), sample(sb, dtype, rng)
    want = np.matmul(to_numpy64(a), to_numpy64(b))
    tol = {mx.float16: 1e-2, mx.bfloat16: 5e-2}.get(dtype)
    assert_allclose(mx.matmul(a, b), want, dtype=dtype, rtol=tol, atol=tol)
    assert_allclose(a @ b, want, dtype=dtype, rtol=tol, atol=tol)


@pytest.mark.parametrize(
    "da,db,out",
    [(mx.float16, mx.float32, mx.float32), (mx.bfloat16, mx.float16, mx.float32),
     (mx.int32, mx.float16, mx.float16), (mx.float32, mx.float64, mx.float64),
     (mx.bool_, mx.bfloat16, mx.bfloat16)],
    ids=ids,
)
def test_promotion(da, db, out):
    a = mx.array(np.ones((2, 3)), da)
    b = mx.array(np.ones((3, 2)), db)
    assert_allclose(mx.matmul(a, b), np.full((2, 2), 3.0), dtype=out)


def test_views_and_reflected_operators():
    rng = np.random.default_rng(1)
    base = rng.standard_normal((4, 3)).astype(np.float32)
    at = mx.transpose(mx.array(base))
    want = base.T.astype(np.float64) @ base.astype(np.float64)
    assert_allclose(at @ mx.array(base), want)
    assert_allclose(base.T @ mx.array(base), want)  # __rmatmul__ via NumPy's deferral
    x = mx.array(base.T)
    x @= mx.array(base)
    assert_allclose(x, want)


def test_nan_propagates():
    a = mx.array([[1.0, float("nan")], [1.0, 2.0]])
    out = np.asarray(mx.matmul(a, mx.ones((2, 2))))
    assert np.isnan(out[0]).all() and (out[1] == 3.0).all()


@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (0.5, 2.0), (2.0, 0.0)])
@pytest.mark.parametrize("sc", [(), (4,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
def test_addmm(alpha, beta, sc, dtype):
    rng = np.random.default_rng(2)
    c, a, b = sample(sc, dtype, rng), sample((2, 3, 5), dtype, rng), sample((5, 4), dtype, rng)
    want = alpha * (to_numpy64(a) @ to_numpy64(b)) + beta * to_numpy64(c)
    tol = {mx.float16: 2e-2, mx.bfloat16: 1e-1}.get(dtype)
    assert_allclose(mx.addmm(c, a, b, alpha=alpha, beta=beta), want, dtype=dtype, rtol=tol,
                    atol=tol)


def test_addmm_promotes_over_all_three():
    out = mx.addmm(mx.ones((2, 2), mx.float64), mx.ones((2, 3)), mx.ones((3, 2)))
    assert_allclose(out, np.full((2, 2), 4.0), dtype=mx.float64)


def _graph(a):
    """The primitives recorded for `a`, inputs first (leaves left out)."""
    out, todo, seen = [], [a], set()
    while todo:
        x = todo.pop()
        if x.primitive is None or id(x._node) in seen:
            continue
        seen.add(id(x._node))
        out.append(type(x.primitive).__name__)
        todo.extend(x.inputs)
    return sorted(out)


@pytest.mark.parametrize("c_shape, c_dtype, a_shape, want", [
    ((4,), mx.float32, (2, 3), ["Addmm"]),
    ((2, 4), mx.float32, (2, 3), ["Addmm"]),
    ((1, 4), mx.float16, (2, 3), ["Addmm", "AsType"]),
    ((4,), mx.float64, (2, 3), ["Addmm", "AsType", "AsType"]),
    # a's batch rows flattened into one product: c along the last axis is one node still
    ((1, 1, 4), mx.float32, (5, 2, 3), ["Addmm", "Reshape", "Reshape", "Reshape"]),
    # c varying along the flattened rows: the product, a broadcast and an addition
    ((2, 4), mx.float32, (5, 2, 3), ["Add", "BroadcastTo", "Matmul", "Reshape", "Reshape"]),
    ((4,), mx.float32, (3,), ["Add", "Matmul", "Reshape", "Reshape"]),
])
def test_addmm_records_only_the_needed_nodes(c_shape, c_dtype, a_shape, want):
    c = mx.array(np.ones(c_shape), c_dtype)
    a = mx.array(np.ones(a_shape), mx.float32)
    out = mx.addmm(c, a, mx.array(np.ones((3, 4)), mx.float32))
    assert _graph(out) == want  # casts where a dtype differs, one node where c fits
    dtype = mx.float64 if c_dtype is mx.float64 else mx.float32
    assert out.dtype is dtype
    assert_allclose(out, np.full((*a_shape[:-1], 4), 4.0), dtype=dtype)


def test_addmm_node_computes_as_the_composition():
    """The one node rounds as the product, the scalings and the addition recorded apart."""
    rng = np.random.default_rng(5)
    c, a, b = (rng.standard_normal(s).astype(np.float32) for s in ((4,), (6, 3), (3, 4)))
    out = mx.addmm(mx.array(c), mx.array(a), mx.array(b), alpha=0.3, beta=-1.7)
    assert _graph(out) == ["Addmm"]
    want = np.float32(0.3) * (a @ b) + np.float32(-1.7) * c
    np.testing.assert_array_equal(np.asarray(out), want)


def test_matmul_of_matrices_records_one_node():
    a, b = mx.array(np.ones((2, 3)), mx.float32), mx.array(np.ones((3, 4)), mx.float32)
    out = a @ b
    assert _graph(out) == ["Matmul"] and out.inputs[0] is not a
    assert _graph(mx.array(np.ones(3), mx.float32) @ b) == ["Matmul", "Reshape", "Reshape"]


def test_gradients():
    a = mx.array(np.arange(6.0).reshape(2, 3))
    b = mx.array(np.ones((3, 2)))
    ga, gb = mx.grad(lambda x, y: mx.sum(x @ y), argnums=(0, 1))(a, b)
    assert_allclose(ga, np.ones((2, 2)) @ np.ones((3, 2)).T)
    assert_allclose(gb, np.arange(6.0).reshape(2, 3).T @ np.ones((2, 2)))


def test_gradient_of_a_transposed_weight_is_row_major():
    # `x @ w.T` (a linear layer): the weight's gradient g^T x, stored in w's own row-major
    # order, so that an optimizer's elementwise update reads both arrays in order
    rng = np.random.default_rng(1)
    x_np, w_np, g_np = (rng.standard_normal(s) for s in ((5, 3), (4, 3), (5, 4)))
    g = mx.array(g_np, mx.float64)
    gw = mx.grad(lambda w: mx.sum((mx.array(x_np, mx.float64) @ w.T) * g))(
        mx.array(w_np, mx.float64))
    assert_allclose(gw, g_np.T @ x_np)
    assert np.asarray(gw).flags["C_CONTIGUOUS"]


def test_gradients_of_a_transposed_weight_record_no_transpose_pair():
    # the rules undo a transpose they would otherwise stack on another: `x @ w.T`'s gradients
    # are the two products, with no Transpose node left over them
    from nuvec.ops.shape import Transpose

    rng = np.random.default_rng(2)
    x_np, w_np = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    x, w = mx.array(x_np), mx.array(w_np)
    gx = mx.grad(lambda x: mx.sum(mx.tanh(x @ w.T)))(x)
    gw = mx.grad(lambda w: mx.sum(mx.tanh(x @ w.T)))(w)
    for g in (gx, gw):
        assert g.primitive is not None and not isinstance(g.primitive, Transpose)
        assert not any(isinstance(a.primitive, Transpose) for a in g.inputs if a.ndim == 2
                       and a.shape == w_np.shape)
    d = 1 - np.tanh(x_np @ w_np.T) ** 2
    assert_allclose(gx, d @ w_np)
    assert_allclose(gw, d.T @ x_np)


@pytest.mark.parametrize("op", ["matmul", "addmm"])
def test_zero_dim_rejected(op):
    args = (mx.array(2.0), mx.ones((2,)))
    with pytest.raises(ValueError, match=f"^{op}: inputs must have at least one dimension"):
        mx.matmul(*args) if op == "matmul" else mx.addmm(mx.array(0.0), *args)


@pytest.mark.parametrize("sa,sb", [((2, 3), (4, 2)), ((3,), (4,)), ((2, 3), (2,))], ids=ids)
def test_inner_mismatch_rejected(sa, sb):
    with pytest.raises(ValueError, match=r"^matmul: the last dimension of the first input"):
        mx.matmul(mx.ones(sa), mx.ones(sb))


def test_batch_mismatch_rejected():
    with pytest.raises(ValueError, match="^matmul: shapes"):
        mx.matmul(mx.ones((2, 2, 3)), mx.ones((3, 3, 4)))


@pytest.mark.parametrize("da,db", [(mx.int32, mx.int32), (mx.bool_, mx.uint8)], ids=ids)
def test_non_float_rejected(da, db):
    with pytest.raises(TypeError, match="^matmul: only floating-point and complex types"):
        mx.matmul(mx.ones((2, 2), da), mx.ones((2, 2), db))


def test_addmm_errors():
    with pytest.raises(ValueError, match=r"^addmm: shapes \(3,\) and \(2, 2\) cannot be"):
        mx.addmm(mx.ones((3,)), mx.ones((2, 2)), mx.ones((2, 2)))
    with pytest.raises(ValueError, match=r"^addmm: c with shape \(3, 2, 2\) cannot be"):
        mx.addmm(mx.ones((3, 2, 2)), mx.ones((2, 2)), mx.ones((2, 2)))
    with pytest.raises(TypeError, match="^addmm: only floating-point and complex types"):
        mx.addmm(mx.ones((2,), mx.int32), mx.ones((2, 2), mx.int32), mx.ones((2, 2), mx.int32))


def test_step_sliced_views():
    base = np.random.default_rng(3).standard_normal((6, 8)).astype(np.float32)
    a = mx.array(base)[::2, ::-2]
    b = mx.transpose(mx.array(base)[1::2, ::2])
    want = base[::2, ::-2].astype(np.float64) @ base[1::2, ::2].T.astype(np.float64)
    assert_allclose(a @ b, want)
