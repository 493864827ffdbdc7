"""`nuvec.linalg`: MLX's `mlx.core.linalg` namespace (re-exports; see docs/linalg.md)."""

from nuvec.ops.linalg_compose import (
    cholesky_inv, cross, det, lu, norm, pinv, solve_triangular, tri_inv,
)
from nuvec.ops.linalg_functions import (
    cholesky, eig, eigh, eigvals, eigvalsh, inv, lu_factor, qr, slogdet, solve, svd,
)

__all__ = [
    "cholesky", "cholesky_inv", "cross", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv",
    "lu", "lu_factor", "norm", "pinv", "qr", "slogdet", "solve", "solve_triangular", "svd",
    "tri_inv",
]
