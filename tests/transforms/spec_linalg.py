"""Rule rows for `nuvec.linalg`: every primitive of `nuvec.ops.linalg` and the compositions.

Inputs are well conditioned: SPD matrices for Cholesky, symmetric matrices with separated
eigenvalues for eigh, distinct singular values for the SVD. Eigen- and singular vectors enter
the losses squared elementwise, which removes their sign ambiguity.
"""

from __future__ import annotations

import numpy as np

import nuvec as mx
from nuvec.ops.linalg import QR, SVD, Cholesky, Eig, Eigh, Inverse, LUFactor, SlogDet, Solve
from nuvec.testing import OpSpec

L = mx.linalg


def general(n, batch=()):
    """A well-conditioned square matrix (random plus a dominant diagonal)."""
    return lambda rng: rng.standard_normal((*batch, n, n)) + 3 * np.eye(n)


def spd(n):
    def make(rng):
        m = rng.standard_normal((n, n))
        return m @ m.T + n * np.eye(n)

    return make


def separated(n):
    """A symmetric matrix with eigenvalues 1..n in a random basis."""

    def make(rng):
        q, _ = np.linalg.qr(rng.standard_normal((n, n)))
        return (q * np.arange(1.0, n + 1)) @ q.T

    return make


def distinct_singular(m, n):
    """A matrix with singular values 1..k (well separated) in random bases."""

    def make(rng):
        k = min(m, n)
        u, _ = np.linalg.qr(rng.standard_normal((m, k)))
        v, _ = np.linalg.qr(rng.standard_normal((n, k)))
        return (u * np.arange(1.0, k + 1)) @ v.T

    return make


def with_rhs(make_a, *shape):
    return lambda rng: [make_a(rng), rng.standard_normal(shape)]


def one(make):
    return lambda rng: [make(rng)]


def svd_features(a):
    u, s, vt = L.svd(a)
    k = s.shape[-1]
    return [u[..., :, :k] * u[..., :, :k], s, vt[..., :k, :] * vt[..., :k, :]]


def eigh_features(uplo):
    def f(a):
        w, v = L.eigh(a, UPLO=uplo)
        return [w, v * v]

    return f


SPECS = [
    OpSpec("inv", L.inv, one(general(3)), [Inverse]),
    OpSpec("inv_batched", L.inv, one(general(2, (2,))), [Inverse]),
    OpSpec("tri_inv_upper", lambda a: L.tri_inv(a, upper=True), one(general(3)), [Inverse]),
    OpSpec("solve_matrix", L.solve, with_rhs(general(3), 3, 2), [Solve]),
    OpSpec("solve_vector", L.solve, with_rhs(general(3), 3), [Solve]),
    OpSpec("solve_broadcast_batch", L.solve, with_rhs(general(3, (2,)), 3, 2), [Solve]),
    OpSpec("solve_triangular_lower", L.solve_triangular, with_rhs(general(3), 3, 2), [Solve]),
    OpSpec("solve_triangular_upper", lambda a, b: L.solve_triangular(a, b, upper=True),
           with_rhs(general(3), 3), [Solve]),
    OpSpec("cholesky_lower", L.cholesky, one(spd(3)), [Cholesky]),
    OpSpec("cholesky_upper", lambda a: L.cholesky(a, upper=True), one(spd(3)), [Cholesky]),
    OpSpec("cholesky_inv", lambda a: L.cholesky_inv(L.cholesky(a)), one(spd(3)),
           [Cholesky, Inverse]),
    OpSpec("eigh_lower", eigh_features("L"), one(separated(3)), [Eigh]),
    OpSpec("eigh_upper", eigh_features("U"), one(separated(3)), [Eigh]),
    OpSpec("eigvalsh", lambda a: L.eigvalsh(a, UPLO="U"), one(separated(4)), [Eigh]),
    OpSpec("svd_square", svd_features, one(distinct_singular(3, 3)), [SVD]),
    OpSpec("svd_tall", svd_features, one(distinct_singular(4, 2)), [SVD]),
    OpSpec("svd_wide", svd_features, one(distinct_singular(2, 4)), [SVD]),
    OpSpec("svd_values", lambda a: L.svd(a, compute_uv=False), one(distinct_singular(3, 4)),
           [SVD]),
    OpSpec("qr_square", lambda a: list(L.qr(a)), one(general(3)), [QR]),
    OpSpec("qr_tall", lambda a: list(L.qr(a)), lambda rng: [rng.standard_normal((4, 2))], [QR]),
    OpSpec("qr_wide", lambda a: list(L.qr(a)), lambda rng: [rng.standard_normal((2, 4))], [QR]),
    OpSpec("lu", lambda a: list(L.lu(a)), lambda rng: [rng.standard_normal((4, 3))],
           [LUFactor], grad=False),
    OpSpec("lu_factor", lambda a: list(L.lu_factor(a)), one(general(3)), [LUFactor],
           grad=False),
    OpSpec("eig", lambda a: list(L.eig(a)), one(general(3)), [Eig], grad=False),
    OpSpec("eigvals", L.eigvals, one(general(3, (2,))), [Eig], grad=False),
    OpSpec("slogdet", lambda a: L.slogdet(a)[1], one(general(3)), [SlogDet]),
    OpSpec("det_small", L.det, one(general(3, (2,))), []),
    OpSpec("det_large", L.det, one(general(4)), [SlogDet]),
    OpSpec("pinv", L.pinv, one(distinct_singular(3, 2)), [SVD]),
    OpSpec("norm_vector_3", lambda a: L.norm(a, 3, axis=-1), lambda rng: [rng.random((2, 3)) + 1],
           []),
    OpSpec("norm_fro", lambda a: L.norm(a, "fro", axis=(0, 1)), lambda rng: [
        rng.standard_normal((3, 2))], []),
    OpSpec("norm_nuc", lambda a: L.norm(a, "nuc"), one(distinct_singular(3, 2)), [SVD]),
    OpSpec("norm_2", lambda a: L.norm(a, 2, axis=(1, 0), keepdims=True),
           one(distinct_singular(2, 3)), [SVD]),
    OpSpec("cross", L.cross, lambda rng: [rng.standard_normal((2, 3)),
                                          rng.standard_normal((3,))], []),
]
