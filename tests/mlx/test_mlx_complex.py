"""complex64 wherever MLX takes it (issue 12, item 3), against NumPy complex128."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
import nuvec.optimizers as optim
from nuvec.testing import check_grads

RNG = np.random.default_rng(7)
A = (RNG.normal(size=(3, 4)) + 1j * RNG.normal(size=(3, 4))).astype(np.complex64)
B = (RNG.normal(size=(4, 2)) + 1j * RNG.normal(size=(4, 2))).astype(np.complex64)
V = np.array([1 + 2j, 3 - 1j, 1 - 1j, -2 + 0.5j, 1 + 2j, 1 + 0j], np.complex64)


def close(got, want, rtol=1e-5, atol=1e-5):
    assert got.dtype is mx.complex64 or np.isrealobj(want)
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


def test_matmul_and_blas_paths():
    a, b = mx.array(A), mx.array(B)
    close(mx.matmul(a, b), A.astype(np.complex128) @ B)
    close(a @ b, A @ B)
    close(mx.addmm(mx.ones((3, 2), mx.complex64), a, b, 2.0, 0.5), 2 * (A @ B) + 0.5)
    close(mx.inner(a[0], a[1]), np.inner(A[0], A[1]))
    close(mx.tensordot(a, b, 1), np.tensordot(A, B, 1))
    close(mx.einsum("ij,jk->ik", a, b), A @ B)
    close(mx.matmul(a, mx.array(B.real)), A @ B.real)  # complex times float promotes


def test_matmul_gradient_matches_the_elementwise_rule():
    """d/dA of real(sum(A @ B)) equals the same sum written with multiply (one convention)."""
    a, b = mx.array(A), mx.array(B)
    g = mx.grad(lambda x: mx.real(x @ b).sum())(a)
    g_ref = mx.grad(lambda x: mx.real((x[:, :, None] * b[None]).sum(1)).sum())(a)
    close(g, np.asarray(g_ref))


def test_random_normal_complex():
    z = np.asarray(mx.random.normal((100000,), mx.complex64, key=mx.random.key(3)))
    assert z.dtype == np.complex64
    assert abs(np.mean(np.abs(z) ** 2) - 1.0) < 0.02  # E|z|^2 = 1: each part has variance 1/2
    assert abs(z.real.var() - 0.5) < 0.01 and abs(z.imag.var() - 0.5) < 0.01
    shifted = mx.random.normal((3,), mx.complex64, loc=1 + 1j, scale=0.0)
    assert shifted.tolist() == [1 + 1j] * 3


@pytest.mark.parametrize("op", ["sort", "argsort"])
def test_sort_is_lexicographic(op):
    got = getattr(mx, op)(mx.array(V))
    want = getattr(np, op)(V, kind="stable") if op == "argsort" else np.sort(V)
    np.testing.assert_array_equal(np.asarray(got), want)


def test_partition_median_topk_of_complex():
    p = np.asarray(mx.partition(mx.array(V), 2))
    assert set(p[:2].tolist()) <= set(np.sort(V)[:2].tolist()) and p[2] == np.sort(V)[2]
    close(mx.median(mx.array(V)), np.median(V))
    assert sorted(mx.topk(mx.array(V), 2).tolist(), key=lambda z: (z.real, z.imag)) == \
        np.sort(V)[-2:].tolist()


@pytest.mark.parametrize("op, ddof", [("var", 0), ("var", 1), ("std", 0), ("std", 2)])
def test_var_std_of_complex_are_float32(op, ddof):
    got = getattr(mx, op)(mx.array(V), ddof=ddof)
    assert got.dtype is mx.float32
    np.testing.assert_allclose(got.item(), getattr(np, op)(V.astype(np.complex128), ddof=ddof),
                               rtol=1e-6)


def _real_loss(f):
    """A real loss of a complex function: finite differences check its gradient."""
    return lambda x: mx.real(f(x) * mx.array(0.3 - 0.7j)).sum()


@pytest.mark.parametrize("name", ["exp", "log", "sin", "cos", "tanh", "sqrt", "square",
                                  "reciprocal", "sinh", "cosh", "tan", "arctan", "negative"])
def test_holomorphic_gradients_match_the_derivative(name):
    """For holomorphic f, nuvec's (MLX 0.32's) vjp of cotangent 1 is conj(f'(z)) at each
    entry: the cotangent u pulls back to u * conj(f'(z))."""
    fn = getattr(mx, name)
    z = V[:4]
    _, (g,) = mx.vjp(fn, [mx.array(z)], [mx.ones(4, mx.complex64)])
    h = 1e-4
    zz = z.astype(np.complex128)
    ref = {"negative": lambda w: -w, "reciprocal": lambda w: 1 / w, "square": lambda w: w * w,
           "arctan": np.arctan}.get(name, getattr(np, name, None))
    derivative = (ref(zz + h) - ref(zz - h)) / (2 * h)
    np.testing.assert_allclose(np.asarray(g), np.conj(derivative), rtol=2e-3, atol=2e-3)


def test_complex_gradients_follow_mlx_convention_and_descend():
    z = mx.array([1 + 2j, -0.5 + 1j])
    _, (g,) = mx.vjp(lambda a: a * (2 + 1j), [z], [mx.array([1 + 1j, 1j])])
    np.testing.assert_allclose(np.asarray(g), np.array([1 + 1j, 1j]) * (2 - 1j), rtol=1e-6)
    target = np.array([0.25 - 1j, 2 + 0.5j])
    loss = lambda a: mx.sum(mx.abs(a - mx.array(target)) ** 2)  # noqa: E731
    np.testing.assert_allclose(np.asarray(mx.grad(loss)(z)), 2 * (np.asarray(z) - target),
                               rtol=1e-5)  # dL/dx + i dL/dy
    params = {"z": z}
    optimizer = optim.SGD(0.25)
    for _ in range(20):
        params = optimizer.apply_gradients({"z": mx.grad(loss)(params["z"])}, params)
    np.testing.assert_allclose(np.asarray(params["z"]), target, atol=1e-5)
    # a custom rule is written in the same convention: u * conj(c) for z -> c z
    scaled = mx.custom_function(lambda a: a * (2 + 1j))
    scaled.vjp(lambda a, u, out: u * (2 - 1j))
    real_loss = lambda f: lambda a: mx.sum(mx.real(f(a) * mx.array(0.3 - 0.7j)))  # noqa: E731
    np.testing.assert_allclose(np.asarray(mx.grad(real_loss(scaled))(z)),
                               np.asarray(mx.grad(real_loss(lambda a: a * (2 + 1j)))(z)),
                               rtol=1e-6)


def test_abs_and_prod_gradients():
    z = V[:4]
    _, (g,) = mx.vjp(mx.abs, [mx.array(z)], [mx.ones(4)])
    np.testing.assert_allclose(np.asarray(g), z / np.abs(z), rtol=1e-6)  # MLX's sign(z)
    _, (g,) = mx.vjp(mx.prod, [mx.array(z)], [mx.array(1 + 0j)])
    others = np.array([np.prod(np.delete(z, i)) for i in range(4)])
    np.testing.assert_allclose(np.asarray(g), np.conj(others), rtol=1e-5)


def test_complex_rejected_where_mlx_rejects_it():
    for name in ("ceil", "floor", "erf", "erfinv"):  # (round takes the parts, as MLX 0.32)
        with pytest.raises(ValueError, match=f"^{name}: not supported for complex64"):
            getattr(mx, name)(mx.array(V))
    with pytest.raises(ValueError, match="^remainder: not supported for complex64"):
        mx.remainder(mx.array(V), mx.array(V))


@pytest.mark.parametrize("axis", [0, 1, None, (0, 1)])
def test_logsumexp_and_softmax_of_complex(axis):
    x = A[:, :3].astype(np.complex128)
    ax = tuple(range(x.ndim)) if axis is None else axis
    # equal up to multiples of 2*pi*i in the imaginary part: compare exp of both
    np.testing.assert_allclose(np.exp(np.asarray(mx.logsumexp(mx.array(x), axis))),
                               np.exp(x).sum(ax), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(mx.softmax(mx.array(x), axis)),
                               np.exp(x) / np.exp(x).sum(ax, keepdims=True), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("axis, reverse", [(0, False), (1, False), (1, True), (None, False)])
def test_logcumsumexp_of_complex(axis, reverse):
    x = A[:, :3]
    got = np.asarray(mx.logcumsumexp(mx.array(x), axis, reverse=reverse))
    data = x.astype(np.complex128).ravel() if axis is None else x.astype(np.complex128)
    ax = 0 if axis is None else axis
    data = np.flip(data, ax) if reverse else data
    ref = np.log(np.cumsum(np.exp(data), axis=ax))
    ref = np.flip(ref, ax) if reverse else ref
    # equal up to multiples of 2*pi*i in the imaginary part: compare exp of both
    np.testing.assert_allclose(np.exp(got), np.exp(ref), rtol=1e-5, atol=1e-5)


def test_scan_gradients_of_complex_match_finite_differences():
    check_grads(lambda x: mx.real(mx.cumprod(mx.astype(x, mx.complex64) * (1 + 1j))),
                [mx.array([0.5, 1.5, -2.0], mx.float64)], eps=1e-2, rtol=1e-2, atol=1e-3)
    check_grads(lambda x: mx.real(mx.logcumsumexp(mx.astype(x, mx.complex64) * (1 + 1j))),
                [mx.array([0.5, 1.5, -2.0], mx.float64)], eps=1e-2, rtol=1e-2, atol=1e-3)
