"""CPU kernels of `nuvec.ops.linalg` (NumPy's batched LAPACK; LU by blocked elimination)."""

from __future__ import annotations

import math

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.ops import linalg as la

# Columns factored one at a time below this panel width; wider panels recurse (BLAS-3 updates).
_PANEL = 32


@kernel(la.Inverse)
def inverse(p, a):
    return np.linalg.inv(a)


@kernel(la.Solve)
def solve(p, a, b):
    return np.linalg.solve(a, b)


@kernel(la.Cholesky)
def cholesky(p, a):
    # NumPy's potrf reads only the requested triangle, as the primitive promises.
    return np.linalg.cholesky(a, upper=p.upper)


@kernel(la.Eigh)
def eigh(p, a):
    if p.vectors:
        return tuple(np.linalg.eigh(a, UPLO=p.uplo))
    return np.linalg.eigvalsh(a, UPLO=p.uplo)


@kernel(la.SVD)
def svd(p, a):
    if p.compute_uv:
        return tuple(np.linalg.svd(a, full_matrices=True, compute_uv=True))
    return np.linalg.svd(a, compute_uv=False)


@kernel(la.QR)
def qr(p, a):
    return tuple(np.linalg.qr(a, mode="reduced"))


@kernel(la.Eig)
def eig(p, a):
    if p.vectors:
        return tuple(np.linalg.eig(a))
    return np.linalg.eigvals(a)


@kernel(la.SlogDet)
def slogdet(p, a):
    return tuple(np.linalg.slogdet(a))


@kernel(la.LUFactor)
def lu_factor(p, a):
    *batch, m, n = a.shape
    k = min(m, n)
    work = np.array(a, copy=True).reshape(math.prod(batch), m, n)
    pivots = np.zeros((work.shape[0], k), dtype=np.int64)
    order = _factor(work, pivots, 0, k)
    if n > k:  # wide: the columns right of the square part belong to U only
        _permute_rows(work, order, 0, slice(k, n))
        work[:, :, k:] = np.linalg.solve(_unit_lower(work[:, :, :k]), work[:, :, k:])
    # A[order] = L @ U, so the row indices with A = L[rows] @ U are order's inverse.
    rows = np.argsort(order, axis=1)
    return (work.reshape(a.shape), pivots.reshape(*batch, k).astype(np.uint32),
            rows.reshape(*batch, m).astype(np.uint32))


def _factor(work: np.ndarray, pivots: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Factors columns [start, stop) of the batch `work` in place, rows start: onwards.

    Recursive panel LU (Toledo): factor the left half, apply its row interchanges to the
    right half, update that with a triangular solve and one matmul, factor it, and apply its
    interchanges back to the left half. Only columns [start, stop) change; the returned
    permutation of rows start: (relative indices) is for the caller to apply elsewhere.
    """
    width = stop - start
    if width <= _PANEL:
        return _factor_columns(work, pivots, start, stop)
    mid = start + width // 2
    left = _factor(work, pivots, start, mid)
    _permute_rows(work, left, start, slice(mid, stop))
    top = np.linalg.solve(_unit_lower(work[:, start:mid, start:mid]), work[:, start:mid, mid:stop])
    work[:, start:mid, mid:stop] = top
    work[:, mid:, mid:stop] -= work[:, mid:, start:mid] @ top
    right = _factor(work, pivots, mid, stop)
    _permute_rows(work, right, mid, slice(start, mid))
    left[:, mid - start:] = np.take_along_axis(left[:, mid - start:], right, axis=1)
    return left


def _permute_rows(work: np.ndarray, order: np.ndarray, start: int, cols: slice) -> None:
    """Reorders rows start: of the columns `cols` by `order` (indices relative to start)."""
    block = work[:, start:, cols]
    block[...] = np.take_along_axis(block, order[:, :, None], axis=1)


def _unit_lower(block: np.ndarray) -> np.ndarray:
    return np.tril(block, -1) + np.eye(block.shape[-1], dtype=block.dtype)


def _factor_columns(work: np.ndarray, pivots: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Unblocked partial-pivoting elimination of columns [start, stop), batched.

    Row interchanges touch only the panel's columns; the permutation is returned.
    """
    batch, m, _ = work.shape
    index = np.arange(batch)
    panel = work[:, :, start:stop]
    order = np.broadcast_to(np.arange(m - start), (batch, m - start)).copy()
    for j in range(start, stop):
        c = j - start
        pj = j + np.argmax(np.abs(panel[:, j:, c]), axis=1)
        pivots[:, j] = pj
        if np.any(pj != j):
            row = panel[index, j].copy()
            panel[index, j] = panel[index, pj]
            panel[index, pj] = row
            moved = order[index, c].copy()
            order[index, c] = order[index, pj - start]
            order[index, pj - start] = moved
        pivot = panel[:, j, c]
        # An exactly zero pivot column is left alone (getrf reports it; U is singular).
        panel[:, j + 1:, c] /= np.where(pivot == 0, 1, pivot)[:, None]
        panel[:, j + 1:, c + 1:] -= panel[:, j + 1:, c:c + 1] * panel[:, j:j + 1, c + 1:]
    return order
