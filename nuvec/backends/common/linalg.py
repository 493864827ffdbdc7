"""Shared bodies of `nuvec.ops.linalg` (batched LAPACK / cuSOLVER; LU by blocked elimination)."""

from __future__ import annotations

import math

from typing import Any

import numpy as np

from nuvec.backends.common.registry import body
from nuvec.ops import linalg as la

# Columns factored one at a time below this panel width; wider panels recurse (BLAS-3 updates).
_PANEL = 32


@body(la.Inverse)
def inverse(xp, p, a):
    return xp.linalg.inv(a)


@body(la.Solve)
def solve(xp, p, a, b):
    return xp.linalg.solve(a, b)


@body(la.Cholesky)
def cholesky(xp, p, a):
    # NumPy's potrf reads only the requested triangle, as the primitive promises.
    return xp.linalg.cholesky(a, upper=p.upper)


@body(la.Eigh)
def eigh(xp, p, a):
    if p.vectors:
        return tuple(xp.linalg.eigh(a, UPLO=p.uplo))
    return xp.linalg.eigvalsh(a, UPLO=p.uplo)


@body(la.SVD)
def svd(xp, p, a):
    if p.compute_uv:
        return tuple(xp.linalg.svd(a, full_matrices=True, compute_uv=True))
    return xp.linalg.svd(a, compute_uv=False)


@body(la.QR)
def qr(xp, p, a):
    return tuple(xp.linalg.qr(a, mode="reduced"))


@body(la.Eig)
def eig(xp, p, a):
    if p.vectors:
        return tuple(xp.linalg.eig(a))
    return xp.linalg.eigvals(a)


@body(la.SlogDet)
def slogdet(xp, p, a):
    return tuple(xp.linalg.slogdet(a))


@body(la.LUFactor)
def lu_factor(xp, p, a):
    *batch, m, n = a.shape
    k = min(m, n)
    work = xp.array(a, copy=True).reshape(math.prod(batch), m, n)
    pivots = xp.zeros((work.shape[0], k), dtype=np.int64)
    order = _factor(xp, work, pivots, 0, k)
    if n > k:  # wide: the columns right of the square part belong to U only
        _permute_rows(xp, work, order, 0, slice(k, n))
        work[:, :, k:] = xp.linalg.solve(_unit_lower(xp, work[:, :, :k]), work[:, :, k:])
    # A[order] = L @ U, so the row indices with A = L[rows] @ U are order's inverse.
    rows = xp.argsort(order, axis=1)
    return (work.reshape(a.shape), pivots.reshape(*batch, k).astype(np.uint32),
            rows.reshape(*batch, m).astype(np.uint32))


def _factor(xp, work: Any, pivots: Any, start: int, stop: int) -> Any:
    """Factors columns [start, stop) of the batch `work` in place, rows start: onwards.

    Recursive panel LU (Toledo): factor the left half, apply its row interchanges to the
    right half, update that with a triangular solve and one matmul, factor it, and apply its
    interchanges back to the left half. Only columns [start, stop) change; the returned
    permutation of rows start: (relative indices) is for the caller to apply elsewhere.
    """
    width = stop - start
    if width <= _PANEL:
        return _factor_columns(xp, work, pivots, start, stop)
    mid = start + width // 2
    left = _factor(xp, work, pivots, start, mid)
    _permute_rows(xp, work, left, start, slice(mid, stop))
    lower = _unit_lower(xp, work[:, start:mid, start:mid])
    top = xp.linalg.solve(lower, work[:, start:mid, mid:stop])
    work[:, start:mid, mid:stop] = top
    work[:, mid:, mid:stop] -= work[:, mid:, start:mid] @ top
    right = _factor(xp, work, pivots, mid, stop)
    _permute_rows(xp, work, right, mid, slice(start, mid))
    left[:, mid - start:] = xp.take_along_axis(left[:, mid - start:], right, axis=1)
    return left


def _permute_rows(xp, work: Any, order: Any, start: int, cols: slice) -> None:
    """Reorders rows start: of the columns `cols` by `order` (indices relative to start)."""
    block = work[:, start:, cols]
    block[...] = xp.take_along_axis(block, order[:, :, None], axis=1)


def _unit_lower(xp, block: Any) -> Any:
    return xp.tril(block, -1) + xp.eye(block.shape[-1], dtype=block.dtype)


def _factor_columns(xp, work: Any, pivots: Any, start: int, stop: int) -> Any:
    """Unblocked partial-pivoting elimination of columns [start, stop), batched.

    Row interchanges touch only the panel's columns; the permutation is returned.
    """
    batch, m, _ = work.shape
    index = xp.arange(batch)
    panel = work[:, :, start:stop]
    order = xp.broadcast_to(xp.arange(m - start), (batch, m - start)).copy()
    for j in range(start, stop):
        c = j - start
        pj = j + xp.argmax(xp.abs(panel[:, j:, c]), axis=1)
        pivots[:, j] = pj
        if xp.any(pj != j):
            row = panel[index, j].copy()
            panel[index, j] = panel[index, pj]
            panel[index, pj] = row
            moved = order[index, c].copy()
            order[index, c] = order[index, pj - start]
            order[index, pj - start] = moved
        pivot = panel[:, j, c]
        # An exactly zero pivot column is left alone (getrf reports it; U is singular).
        panel[:, j + 1:, c] /= xp.where(pivot == 0, 1, pivot)[:, None]
        panel[:, j + 1:, c + 1:] -= panel[:, j + 1:, c:c + 1] * panel[:, j:j + 1, c + 1:]
    return order
