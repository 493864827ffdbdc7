"""Conformance of `nuvec.linalg` against `numpy.linalg` (float64 references) and its errors."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from nuvec.graph.evaluator import EvaluationError
from nuvec.testing import assert_allclose

L = mx.linalg
RNG = np.random.default_rng(3)
DTYPES = [mx.float32, mx.float64]
BATCHES = [(), (2,), (2, 3)]


def matrix(shape, dtype=mx.float64):
    return RNG.standard_normal(shape).astype(dtype.np)


def well_conditioned(n, batch=(), dtype=mx.float64):
    return (RNG.standard_normal((*batch, n, n)) + 3 * np.eye(n)).astype(dtype.np)


def spd(n, batch=(), dtype=mx.float64):
    m = RNG.standard_normal((*batch, n, n))
    return (m @ np.swapaxes(m, -1, -2) + n * np.eye(n)).astype(dtype.np)


def ref(x):
    return np.asarray(x, np.float64)


def ids(values):
    return [getattr(v, "name", str(v)) for v in values]


@pytest.mark.parametrize("batch", BATCHES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_inv_and_tri_inv(dtype, batch):
    a = well_conditioned(3, batch, dtype)
    assert_allclose(L.inv(mx.array(a, dtype)), np.linalg.inv(ref(a)), dtype=dtype)
    assert_allclose(L.tri_inv(mx.array(a, dtype), upper=True),
                    np.linalg.inv(np.triu(ref(a))), dtype=dtype)
    assert_allclose(L.tri_inv(mx.array(a, dtype)), np.linalg.inv(np.tril(ref(a))), dtype=dtype)


@pytest.mark.parametrize("upper", [False, True])
def test_tri_inv_other_triangle_is_exactly_zero(upper):
    # the LU inverse pivots the rows of a lower triangle; MLX's result is exactly triangular
    a = np.random.default_rng(3).standard_normal((4, 8, 8)).astype(np.float32)
    y = np.asarray(L.tri_inv(mx.array(a), upper=upper))
    other = np.tril(y, -1) if upper else np.triu(y, 1)
    assert not other.any()


@pytest.mark.parametrize("a_shape,b_shape", [
    ((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((2, 3, 3), (3, 4)),
    ((2, 1, 3, 3), (4, 3, 1)), ((3, 3), (2, 3, 2)),
], ids=str)
def test_solve_shapes_and_broadcasting(a_shape, b_shape):
    a = well_conditioned(3, a_shape[:-2])
    b = matrix(b_shape)
    out = L.solve(mx.array(a, mx.float64), mx.array(b, mx.float64))
    if len(b_shape) == 1:
        expected = np.linalg.solve(a, b[..., None])[..., 0]
    else:
        expected = np.linalg.solve(a, b)
    assert_allclose(out, expected, dtype=mx.float64)


@pytest.mark.parametrize("upper", [False, True], ids=["lower", "upper"])
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_solve_triangular_reads_one_triangle(dtype, upper):
    a, b = well_conditioned(4, (2,), dtype), matrix((2, 4, 3), dtype)
    tri = np.triu(ref(a)) if upper else np.tril(ref(a))
    out = L.solve_triangular(mx.array(a, dtype), mx.array(b, dtype), upper=upper)
    assert_allclose(out, np.linalg.solve(tri, ref(b)), dtype=dtype, rtol=1e-4 if dtype is
                    mx.float32 else None)


def test_solve_promotes_mixed_dtypes():
    a, b = well_conditioned(2), np.array([1.0, 2.0])
    out = L.solve(mx.array(a, mx.float32), mx.array(b, mx.float64))
    assert_allclose(out, np.linalg.solve(a.astype(np.float32), b), dtype=mx.float64, rtol=1e-6)


@pytest.mark.parametrize("upper", [False, True], ids=["lower", "upper"])
@pytest.mark.parametrize("batch", BATCHES, ids=str)
def test_cholesky_and_cholesky_inv(batch, upper):
    a = spd(3, batch)
    low = np.linalg.cholesky(a)
    factor = L.cholesky(mx.array(a, mx.float64), upper=upper)
    assert_allclose(factor, np.swapaxes(low, -1, -2) if upper else low, dtype=mx.float64)
    assert_allclose(L.cholesky_inv(factor, upper=upper), np.linalg.inv(a), dtype=mx.float64,
                    rtol=1e-9)


def test_cholesky_reads_only_its_triangle():
    a = spd(3)
    noisy_upper = np.tril(a) + np.triu(RNG.standard_normal((3, 3)), 1)
    assert_allclose(L.cholesky(mx.array(noisy_upper, mx.float64)), np.linalg.cholesky(a))
    noisy_lower = np.triu(a) + np.tril(RNG.standard_normal((3, 3)), -1)
    assert_allclose(L.cholesky(mx.array(noisy_lower, mx.float64), upper=True),
                    np.linalg.cholesky(a).T)


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_eigh_and_eigvalsh(dtype, uplo):
    a = matrix((2, 4, 4), dtype)
    w_ref, v_ref = np.linalg.eigh(ref(a), UPLO=uplo)
    w, v = L.eigh(mx.array(a, dtype), UPLO=uplo)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype is mx.float32 else {}
    assert_allclose(w, w_ref, dtype=dtype, **tol)
    assert_allclose(L.eigvalsh(mx.array(a, dtype), UPLO=uplo), w_ref, dtype=dtype, **tol)
    # Eigenvectors are unique up to sign: compare |V| and check A V = V diag(w).
    assert_allclose(mx.abs(v), np.abs(v_ref), dtype=dtype, **tol)
    sym = np.tril(ref(a)) + np.swapaxes(np.tril(ref(a), -1), -1, -2) if uplo == "L" else \
        np.triu(ref(a)) + np.swapaxes(np.triu(ref(a), 1), -1, -2)
    np.testing.assert_allclose(sym @ ref(v), ref(v) * ref(w)[..., None, :], atol=1e-4)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 2), (1, 1)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_svd_full_factors(shape, dtype):
    a = matrix(shape, dtype)
    factors = L.svd(mx.array(a, dtype))
    assert type(factors) is tuple  # as MLX's
    u, s, vt = factors
    m, n = shape[-2:]
    assert u.shape == (*shape[:-2], m, m) and vt.shape == (*shape[:-2], n, n)
    assert u.dtype is dtype and s.dtype is dtype and vt.dtype is dtype
    tol = dict(rtol=1e-4, atol=1e-5) if dtype is mx.float32 else dict(rtol=1e-9, atol=1e-12)
    assert_allclose(s, np.linalg.svd(ref(a), compute_uv=False), **tol)
    assert_allclose(L.svd(mx.array(a, dtype), compute_uv=False), np.linalg.svd(ref(a),
                    compute_uv=False), dtype=dtype, **tol)
    k = min(m, n)
    rebuilt = (ref(u)[..., :, :k] * ref(s)[..., None, :]) @ ref(vt)[..., :k, :]
    np.testing.assert_allclose(rebuilt, ref(a), **tol)
    np.testing.assert_allclose(np.swapaxes(ref(u), -1, -2) @ ref(u), np.broadcast_to(
        np.eye(m), u.shape), atol=1e-5)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 4, 2)], ids=str)
def test_qr_reduced(shape):
    a = matrix(shape)
    q, r = L.qr(mx.array(a, mx.float64))
    q_ref, r_ref = np.linalg.qr(a)
    assert_allclose(q, q_ref, dtype=mx.float64)
    assert_allclose(r, r_ref, dtype=mx.float64)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 6, 6), (40, 40), (1, 1)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_lu_reconstructs(shape, dtype):
    a = matrix(shape, dtype)
    p, low, up = L.lu(mx.array(a, dtype))
    m, n = shape[-2:]
    k = min(m, n)
    assert p.dtype is mx.uint32 and p.shape == (*shape[:-2], m)
    assert low.shape == (*shape[:-2], m, k) and up.shape == (*shape[:-2], k, n)
    rows = np.asarray(p).astype(np.int64)
    rebuilt = np.take_along_axis(ref(low), rows[..., None], axis=-2) @ ref(up)
    np.testing.assert_allclose(rebuilt, ref(a), atol=1e-5 if dtype is mx.float32 else 1e-12)
    assert np.all(np.abs(ref(low)) <= 1 + 1e-6)
    np.testing.assert_array_equal(np.triu(ref(low), 1), 0)
    np.testing.assert_array_equal(np.tril(ref(up), -1), 0)


def test_lu_factor_pivots_follow_lapack():
    a = np.array([[1.0, 2.0, 0.0], [4.0, 1.0, 1.0], [2.0, 8.0, 3.0]])
    packed, pivots = L.lu_factor(mx.array(a, mx.float64))
    assert pivots.dtype is mx.uint32
    # Replay the interchanges on A and compare with L @ U.
    permuted = a.copy()
    for i, pivot in enumerate(np.asarray(pivots)):
        permuted[[i, pivot]] = permuted[[pivot, i]]
    lu = ref(packed)
    np.testing.assert_allclose((np.tril(lu, -1) + np.eye(3)) @ np.triu(lu), permuted)
    np.testing.assert_array_equal(np.asarray(pivots), [1, 2, 2])


@pytest.mark.parametrize("shape", [(2, 3, 4, 4), (2, 5, 3), (3, 5)], ids=str)
def test_lu_factor_batched_and_rectangular(shape):
    a = matrix(shape)
    packed, pivots = L.lu_factor(mx.array(a, mx.float64))
    (m, n), k = shape[-2:], min(shape[-2:])
    assert packed.shape == shape and pivots.shape == (*shape[:-2], k)
    flat_a, flat_lu = a.reshape(-1, m, n), ref(packed).reshape(-1, m, n)
    for matrix_a, lu, swaps in zip(flat_a, flat_lu, np.asarray(pivots).reshape(-1, k)):
        permuted = matrix_a.copy()
        for i, pivot in enumerate(swaps):
            permuted[[i, pivot]] = permuted[[pivot, i]]
        low = np.tril(lu, -1)[:, :k] + np.eye(m, k)
        np.testing.assert_allclose(low @ np.triu(lu)[:k], permuted, atol=1e-12)


def test_singular_matrices():
    singular = mx.array([[1.0, 2.0], [2.0, 4.0]], mx.float64)
    # LU of a singular matrix succeeds with a zero on U's diagonal (LAPACK's getrf).
    _, _, up = L.lu(singular)
    assert np.asarray(up)[1, 1] == 0
    # inv and solve fail when evaluated; pinv gives the least-squares inverse.
    with pytest.raises(EvaluationError, match="Singular"):
        mx.eval(L.inv(singular))
    with pytest.raises(EvaluationError, match="Singular"):
        mx.eval(L.solve(singular, mx.array([1.0, 1.0], mx.float64)))
    assert_allclose(L.pinv(singular), np.linalg.pinv(np.asarray(singular)), rtol=1e-9)
    with pytest.raises(EvaluationError, match="positive definite"):
        mx.eval(L.cholesky(mx.array([[1.0, 2.0], [2.0, 1.0]], mx.float64)))


@pytest.mark.parametrize("shape", [(3, 3), (5, 2), (2, 5), (2, 4, 3)], ids=str)
def test_pinv(shape):
    a = matrix(shape)
    assert_allclose(L.pinv(mx.array(a, mx.float64)), np.linalg.pinv(a), dtype=mx.float64,
                    rtol=1e-8, atol=1e-10)


def test_views_are_read_correctly():
    a = well_conditioned(3, (2,))
    view = mx.swapaxes(mx.array(a, mx.float64), -1, -2)
    assert_allclose(L.inv(view), np.linalg.inv(np.swapaxes(a, -1, -2)))
    stepped = mx.array(np.tile(a, (1, 2, 2)), mx.float64)[:, ::2, ::2]
    assert_allclose(L.inv(stepped), np.linalg.inv(np.tile(a, (1, 2, 2))[:, ::2, ::2]))


VECTOR_ORDS = [None, 0, 1, 2, 3, 0.5, -1, np.inf, -np.inf]


@pytest.mark.parametrize("ord", VECTOR_ORDS, ids=str)
def test_vector_norms(ord):
    x = matrix((3, 5))
    x[0, 1] = 0.0
    for axis, keepdims in [(-1, False), (0, True)]:
        out = L.norm(mx.array(x, mx.float64), ord, axis=axis, keepdims=keepdims)
        with np.errstate(divide="ignore"):  # negative orders of a zero entry: NumPy warns
            expected = np.linalg.norm(x, ord, axis=axis, keepdims=keepdims)
        assert_allclose(out, expected, dtype=mx.float64)


MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@pytest.mark.parametrize("ord", MATRIX_ORDS, ids=str)
def test_matrix_norms(ord):
    x = matrix((2, 3, 4))
    for axis, keepdims in [((1, 2), False), ((2, 0), True), ((-1, -2), False)]:
        out = L.norm(mx.array(x, mx.float64), ord, axis=axis, keepdims=keepdims)
        assert_allclose(out, np.linalg.norm(x, ord, axis=axis, keepdims=keepdims),
                        dtype=mx.float64)


def test_norm_defaults_and_dtypes():
    x = matrix((2, 3, 4))
    assert_allclose(L.norm(mx.array(x, mx.float64)), np.sqrt(np.sum(x * x)))
    assert_allclose(L.norm(mx.array(x, mx.float64), keepdims=True),
                    np.sqrt(np.sum(x * x)).reshape(1, 1, 1))
    assert_allclose(L.norm(mx.array(x[0], mx.float64), 1), np.linalg.norm(x[0], 1))
    assert_allclose(L.norm(mx.array([3, 4]), 1), np.array(7.0), dtype=mx.float32)
    assert_allclose(L.norm(mx.array([3, 4])), np.array(5.0), dtype=mx.float32)
    assert L.norm(mx.array([1.0, 2.0], mx.float16)).dtype is mx.float16
    assert_allclose(L.norm(mx.array(2.0)), np.array(2.0))


@pytest.mark.parametrize("ord,axis", [(o, (1, 2)) for o in MATRIX_ORDS]
                         + [(o, -1) for o in VECTOR_ORDS], ids=str)
def test_norms_of_complex_input(ord, axis):
    z = (matrix((2, 3, 4)) + 1j * matrix((2, 3, 4))).astype(np.complex64)
    out = L.norm(mx.array(z), ord, axis=axis)
    assert_allclose(out, np.linalg.norm(z.astype(np.complex128), ord, axis=axis),
                    dtype=mx.float32, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16], ids=ids([mx.float16, mx.bfloat16]))
@pytest.mark.parametrize("ord", ["nuc", 2, -2, 1, "fro"], ids=str)
def test_matrix_norms_keep_half_precision_dtypes(ord, dtype):
    out = L.norm(mx.array([[3.0, 0.0], [0.0, 4.0]], dtype), ord)
    expected = np.linalg.norm(np.array([[3.0, 0.0], [0.0, 4.0]]), ord)
    assert_allclose(out, expected, dtype=dtype)


@pytest.mark.parametrize("a_shape,b_shape,axis", [
    ((3,), (3,), -1), ((4, 3), (3,), -1), ((3, 4), (3, 4), 0), ((2,), (3,), -1),
    ((5, 2), (5, 2), 1), ((3,), (2,), 0),
], ids=str)
def test_cross(a_shape, b_shape, axis):
    a, b = matrix(a_shape), matrix(b_shape)

    def pad3(v):
        if v.shape[axis] == 3:
            return v
        widths = [(0, 0)] * v.ndim
        widths[axis] = (0, 1)
        return np.pad(v, widths)

    out = L.cross(mx.array(a, mx.float64), mx.array(b, mx.float64), axis=axis)
    assert_allclose(out, np.cross(pad3(a), pad3(b), axis=axis), dtype=mx.float64)
    assert L.cross(mx.array([1, 0, 0]), mx.array([0, 1, 0])).tolist() == [0, 0, 1]


def test_empty_batches():
    a = np.zeros((0, 3, 3))
    assert L.inv(mx.array(a, mx.float64)).shape == (0, 3, 3)
    assert L.svd(mx.array(a, mx.float64), compute_uv=False).shape == (0, 3)


def test_grad_through_norm_and_solve():
    a, b = well_conditioned(3), matrix((3,))

    def loss(m, v):
        return L.norm(L.solve(m, v))

    ga, gb = mx.grad(loss, argnums=(0, 1))(mx.array(a, mx.float64), mx.array(b, mx.float64))
    x = np.linalg.solve(a, b)
    gx = x / np.linalg.norm(x)
    gb_ref = np.linalg.solve(a.T, gx)
    assert_allclose(gb, gb_ref)
    assert_allclose(ga, -np.outer(gb_ref, x))


def _int_matrix():
    return mx.array([[1, 2], [3, 4]])


SQUARE_OPS = ["inv", "tri_inv", "cholesky", "cholesky_inv", "eigh", "eigvalsh", "eig", "eigvals"]
ANY_SHAPE_OPS = ["qr", "svd", "lu", "lu_factor", "pinv"]


COMPLEX_OPS = ["svd", "eigh", "eigvalsh", "eig", "eigvals"]


@pytest.mark.parametrize("op", SQUARE_OPS + ANY_SHAPE_OPS)
def test_matrix_ops_reject_bad_inputs(op):
    fn = getattr(L, op)
    kinds = "float32, float64 or complex64" if op in COMPLEX_OPS else "float32 or float64"
    rejected = (mx.int32, mx.float16, mx.bfloat16) + (() if op in COMPLEX_OPS else (mx.complex64,))
    for dtype in rejected:
        with pytest.raises(TypeError, match=f"^{op}: arrays must have type {kinds}, got"):
            fn(mx.zeros((2, 2), dtype))
    with pytest.raises(ValueError, match=f"^{op}: arrays must have at least 2 dimensions"):
        fn(mx.zeros((3,)))
    if op in SQUARE_OPS:
        with pytest.raises(ValueError, match=f"^{op}: expected square matrices"):
            fn(mx.zeros((2, 3)))


@pytest.mark.parametrize("op", ["eigh", "eigvalsh"])
def test_eigh_rejects_bad_uplo(op):
    with pytest.raises(ValueError, match=f"^{op}: UPLO must be"):
        getattr(L, op)(mx.zeros((2, 2)), UPLO="X")


SOLVE_ERRORS = [
    (mx.zeros((3,)), mx.zeros((3,)), ValueError, "at least 2 dimensions"),
    (mx.zeros((3, 3)), mx.array(1.0), ValueError, "at least 1 dimension"),
    (mx.zeros((2, 3)), mx.zeros((3,)), ValueError, "must be square"),
    (mx.zeros((3, 3)), mx.zeros((2,)), ValueError, "do not match"),
    (mx.zeros((3, 3)), mx.zeros((2, 3)), ValueError, "do not match"),
    (mx.zeros((2, 3, 3)), mx.zeros((4, 3, 1)), ValueError, "cannot be broadcast"),
    (_int_matrix(), mx.array([1, 2]), TypeError, "must promote to float32 or float64"),
    (mx.zeros((2, 2), mx.float16), mx.zeros((2,), mx.float16), TypeError, "must promote"),
]


@pytest.mark.parametrize("op", ["solve", "solve_triangular"])
@pytest.mark.parametrize("a,b,error,message", SOLVE_ERRORS, ids=[e[3] for e in SOLVE_ERRORS])
def test_solve_rejects_bad_inputs(op, a, b, error, message):
    with pytest.raises(error, match=f"^{op}: .*{message}"):
        getattr(L, op)(a, b)


NORM_ERRORS = [
    (dict(axis=(0, 1, 2)), ValueError, "expected 1 or 2 axes"),
    (dict(ord=2), ValueError, "expected 1 or 2 axes"),
    (dict(ord="fro", axis=0), ValueError, "only supported for matrices"),
    (dict(ord="bad", axis=(0, 1)), ValueError, "invalid ord 'bad'"),
    (dict(ord=3, axis=(0, 1)), ValueError, "invalid ord 3"),
    (dict(axis=(1, 1)), ValueError, "repeated axis"),
    (dict(axis=3), ValueError, "out of bounds"),
    (dict(ord=[1], axis=0), TypeError, "ord must be"),
]


@pytest.mark.parametrize("kwargs,error,message", NORM_ERRORS, ids=[e[2] for e in NORM_ERRORS])
def test_norm_rejects_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=f"^norm: .*{message}"):
        L.norm(mx.zeros((2, 3, 4)), **kwargs)


def test_cross_rejects_bad_axes():
    with pytest.raises(ValueError, match="^cross: axis 2 is out of bounds"):
        L.cross(mx.zeros((3, 3)), mx.zeros((3, 3)), axis=2)
    with pytest.raises(ValueError, match="^cross: axis -1 must have size 2 or 3"):
        L.cross(mx.zeros((4,)), mx.zeros((3,)))
    with pytest.raises(ValueError, match="^cross: .*cannot be broadcast"):
        L.cross(mx.zeros((2, 3)), mx.zeros((4, 3)))


@pytest.mark.parametrize("name,fn,make", [
    ("inv", lambda a: mx.sum(L.inv(a) * L.inv(a)), lambda: well_conditioned(3)),
    ("cholesky", lambda a: mx.sum(L.cholesky(a) ** 3), lambda: spd(3)),
    ("eigvalsh", lambda a: mx.sum(L.eigvalsh(a) ** 2 * mx.arange(3)), lambda: spd(3)),
    ("svd", lambda a: mx.sum(L.svd(a, compute_uv=False) ** 3), lambda: spd(3)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_second_derivatives(name, fn, make):
    from nuvec.testing import check_grads

    check_grads(mx.grad(fn), [mx.array(make(), mx.float64)], rtol=1e-5, atol=1e-7)


def test_lu_has_no_derivative():
    with pytest.raises(mx.TransformError, match="LUFactor has no reverse-mode derivative"):
        mx.grad(lambda a: mx.sum(L.lu(a)[1]))(mx.array(well_conditioned(2), mx.float64))


def test_stream_argument():
    a = mx.array(well_conditioned(2), mx.float64)
    for fn in (L.inv, L.cholesky, L.pinv, L.norm, lambda x, **k: L.qr(x, **k)[0],
               lambda x, **k: L.svd(x, **k)[1], lambda x, **k: L.eigh(x, **k)[0],
               lambda x, **k: L.lu(x, **k)[1], lambda x, **k: L.solve(x, x, **k),
               lambda x, **k: L.cross(x, x, **k)):
        out = fn(a, stream=mx.cpu)
        assert out.stream.device == mx.cpu
        mx.eval(out)


def test_complex_svd_and_eigh():
    a = matrix((2, 3, 4)) + 1j * matrix((2, 3, 4))
    u, s, vt = L.svd(mx.array(a))
    assert (u.dtype, s.dtype, vt.dtype) == (mx.complex64, mx.float32, mx.complex64)
    assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-5, atol=1e-5)
    rebuilt = (ref_complex(u)[..., :, :3] * ref(s)[..., None, :]) @ ref_complex(vt)[..., :3, :]
    np.testing.assert_allclose(rebuilt, a, atol=1e-5)
    h = a[..., :3] + np.conj(np.swapaxes(a[..., :3], -1, -2))
    w, v = L.eigh(mx.array(h))
    assert (w.dtype, v.dtype) == (mx.float32, mx.complex64)
    assert_allclose(w, np.linalg.eigvalsh(h), rtol=1e-5, atol=1e-5)
    assert_allclose(L.eigvalsh(mx.array(h), UPLO="U"), np.linalg.eigvalsh(h, UPLO="U"),
                    rtol=1e-5, atol=1e-5)
    with pytest.raises(mx.TransformError, match="^svd: derivatives of complex"):
        mx.grad(lambda x: mx.sum(L.svd(x, compute_uv=False)))(mx.array(a))
    with pytest.raises(mx.TransformError, match="^eigh: derivatives of complex"):
        mx.grad(lambda x: mx.sum(L.eigvalsh(x)))(mx.array(h))


def ref_complex(x):
    return np.asarray(x, np.complex128)


@pytest.mark.parametrize("dtype", DTYPES + [mx.complex64], ids=ids(DTYPES + [mx.complex64]))
def test_eig_and_eigvals(dtype):
    a = matrix((2, 4, 4)).astype(dtype.np)
    w, v = L.eig(mx.array(a, dtype))
    w_ref, v_ref = np.linalg.eig(np.asarray(mx.array(a, dtype)))
    assert (w.dtype, v.dtype) == (mx.complex64, mx.complex64)
    assert_allclose(w, w_ref, rtol=1e-4, atol=1e-5)
    assert_allclose(L.eigvals(mx.array(a, dtype)), w_ref, rtol=1e-4, atol=1e-5)
    # A V = V diag(w) for the eigenvectors returned.
    a64, v64 = a.astype(np.complex128), ref_complex(v)
    np.testing.assert_allclose(a64 @ v64, v64 * ref_complex(w)[..., None, :], atol=1e-4)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 6])
@pytest.mark.parametrize("batch", BATCHES, ids=str)
def test_slogdet_and_det(batch, n):
    a = matrix((*batch, n, n))
    sign, logabs = L.slogdet(mx.array(a, mx.float64))
    sign_ref, logabs_ref = np.linalg.slogdet(a)
    assert_allclose(sign, sign_ref, dtype=mx.float64)
    assert_allclose(logabs, logabs_ref, dtype=mx.float64)
    assert_allclose(L.det(mx.array(a, mx.float64)), np.linalg.det(a), dtype=mx.float64)


def test_det_of_integers_and_singular_matrices():
    assert_allclose(L.det(mx.array([[1, 2], [3, 4]])), np.array(-2.0), dtype=mx.float32)
    sign, logabs = L.slogdet(mx.array([[1.0, 2.0], [2.0, 4.0]]))
    assert sign.item() == 0 and logabs.item() == -np.inf
    assert L.det(mx.array([[1.0, 2.0], [2.0, 4.0]])).item() == 0


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16], ids=lambda d: d.name)
@pytest.mark.parametrize("n", [2, 4])  # the cofactor formula and slogdet's
def test_det_of_half_floats_computes_in_float32(dtype, n):
    a = np.random.default_rng(n).standard_normal((3, n, n)).astype(np.float32)
    half = mx.array(a).astype(dtype)
    exact = np.asarray(half.astype(mx.float32)).astype(np.float64)  # the values det sees
    det, (sign, logabs) = L.det(half), L.slogdet(half)
    assert det.dtype == sign.dtype == logabs.dtype == dtype
    tol = 1e-2 if dtype == mx.float16 else 8e-2
    np.testing.assert_allclose(np.asarray(det.astype(mx.float32)), np.linalg.det(exact),
                               rtol=tol, atol=tol)
    ref_sign, ref_logabs = np.linalg.slogdet(exact)
    np.testing.assert_array_equal(np.asarray(sign.astype(mx.float32)), ref_sign)
    np.testing.assert_allclose(np.asarray(logabs.astype(mx.float32)), ref_logabs, rtol=tol,
                               atol=tol)


@pytest.mark.parametrize("op", ["det", "slogdet"])
def test_det_rejects_bad_inputs(op):
    fn = getattr(L, op)
    with pytest.raises(TypeError, match=f"^{op}: arrays must have type float32 or float64"):
        fn(mx.zeros((2, 2), mx.complex64))
    with pytest.raises(ValueError, match=f"^{op}: expected square matrices"):
        fn(mx.zeros((2, 3)))
    with pytest.raises(ValueError, match=f"^{op}: arrays must have at least 2 dimensions"):
        fn(mx.zeros((3,)))


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0), (2, 0, 3)], ids=str)
def test_pinv_of_empty_matrices_is_empty_zeros(shape):
    out = L.pinv(mx.ones(shape, mx.float64))
    assert out.shape == (*shape[:-2], shape[-1], shape[-2]) and out.dtype is mx.float64
    np.testing.assert_array_equal(np.asarray(out), np.linalg.pinv(np.ones(shape)))


@pytest.mark.parametrize("shape, ord, message", [
    ((0, 3), 2, r"^norm: an empty matrix has no largest or smallest singular value \(ord=2\), "
                r"got shape \(0, 3\)"),
    ((3, 0), -2, r"^norm: an empty matrix has no .* \(ord=-2\)"),
    ((0, 3), np.inf, r"^norm: ord=inf takes an extremum over axis 0, which is empty, got shape "
                     r"\(0, 3\)"),
    ((3, 0), 1, r"^norm: ord=1 takes an extremum over axis 1, which is empty"),
], ids=str)
def test_norm_extremum_of_an_empty_matrix_names_norm(shape, ord, message):
    with pytest.raises(ValueError, match=message):
        L.norm(mx.ones(shape), ord=ord)


def test_norm_sums_of_empty_matrices_are_zero():
    for shape, ord in [((0, 3), 1), ((3, 0), np.inf), ((0, 3), "nuc"), ((0, 0), "fro")]:
        assert L.norm(mx.ones(shape), ord=ord).item() == 0.0
