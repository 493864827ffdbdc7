"""The decompositions and solvers of `nuvec.linalg` that record one primitive each: argument
checks (MLX's rules and messages, as TypeError/ValueError) and the public functions.
"""

from __future__ import annotations

from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array, record, record1
from nuvec.graph.device import to_stream
from nuvec.ops.arguments import as_array, bool_flag, broadcast_shapes
from nuvec.ops.linalg import (
    INVERSE, LU_FACTOR, QR_, SLOGDET, SOLVE, SVD, Cholesky, Eig, Eigh, triangle,
)
from nuvec.ops.shape import broadcast_to, expand_dims, squeeze
from nuvec.ops.unary import astype

__all__: list[str] = []


def check_float(op: str, a: Array, complex_ok: bool = False) -> None:
    """MLX's linear algebra accepts float32 and float64 (and complex64 where it says so)."""
    if a.dtype in (dt.float32, dt.float64) or (complex_ok and a.dtype is dt.complex64):
        return
    kinds = "float32, float64 or complex64" if complex_ok else "float32 or float64"
    raise DtypeError(f"{op}: arrays must have type {kinds}, got {a.dtype.name}")


def check_matrix(op: str, a: Any, square: bool = True, complex_ok: bool = False) -> Array:
    """`a` as a float (or complex) array of at least 2 dimensions (square if asked)."""
    a = as_array(a, op)
    check_float(op, a, complex_ok)
    if a.ndim < 2:
        raise ValueError(f"{op}: arrays must have at least 2 dimensions, got shape {a.shape}")
    if square and a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{op}: expected square matrices, got shape {a.shape}")
    return a


def inv(a: Any, *, stream: Any = None) -> Array:
    """The inverse of each square matrix in `a` (batched over leading axes).

    Args:
        a: float32 or float64 array of shape (..., n, n).

    Returns:
        The inverses, of `a`'s shape and dtype. A singular matrix fails at evaluation.

    Raises:
        TypeError: if `a` is not float32/float64.
        ValueError: if `a` has fewer than 2 dimensions or is not square.

    Example:
        >>> import nuvec as mx
        >>> mx.linalg.inv(mx.array([[2.0, 0.0], [0.0, 4.0]])).tolist()
        [[0.5, 0.0], [0.0, 0.25]]
    """
    a = check_matrix("inv", a)
    return record1(INVERSE, (a,), to_stream(stream))


def cholesky(a: Any, upper: bool = False, *, stream: Any = None) -> Array:
    """The Cholesky factor of each symmetric positive definite matrix in `a`.

    Only the lower triangle (the upper one if `upper`) of `a` is read.

    Args:
        a: float32 or float64 array of shape (..., n, n).
        upper: return the upper factor U (A = U^T U) instead of L (A = L L^T).

    Returns:
        The triangular factors, of `a`'s shape and dtype. A matrix that is not positive
        definite fails at evaluation.

    Raises:
        TypeError: if `a` is not float32/float64.
        ValueError: if `a` has fewer than 2 dimensions or is not square.

    Example:
        >>> import nuvec as mx
        >>> mx.linalg.cholesky(mx.array([[4.0, 2.0], [2.0, 2.0]])).tolist()
        [[2.0, 0.0], [1.0, 1.0]]
    """
    a = check_matrix("cholesky", a)
    return record1(Cholesky(bool_flag(upper, "cholesky", "upper")), (a,), to_stream(stream))


def qr(a: Any, *, stream: Any = None) -> tuple[Array, Array]:
    """The reduced QR factorization of each matrix in `a`.

    Args:
        a: float32 or float64 array of shape (..., m, n).

    Returns:
        (Q, R): Q of shape (..., m, k) with orthonormal columns and R of shape (..., k, n),
        upper triangular, k = min(m, n) (LAPACK's signs).

    Raises:
        TypeError: if `a` is not float32/float64.
        ValueError: if `a` has fewer than 2 dimensions.

    Example:
        >>> import nuvec as mx
        >>> [x.shape for x in mx.linalg.qr(mx.ones((3, 2)))]
        [(3, 2), (2, 2)]
    """
    a = check_matrix("qr", a, square=False)
    q, r = record(QR_, (a,), to_stream(stream))
    return q, r


def svd(a: Any, compute_uv: bool = True, *, stream: Any = None) -> Any:
    """The singular value decomposition A = U @ diag(S) @ Vt of each matrix in `a`.

    Args:
        a: float32, float64 or complex64 array of shape (..., m, n).
        compute_uv: return (U, S, Vt); otherwise S only.

    Returns:
        The tuple (U, S, Vt) with U (..., m, m), S (..., k) descending, Vt (..., n, n) (full
        factors, as MLX), or S alone. S is float32 for complex64 inputs, which have no
        derivative.

    Raises:
        TypeError: if `a` is not float32/float64/complex64, or `compute_uv` not a bool.
        ValueError: if `a` has fewer than 2 dimensions.

    Example:
        >>> import nuvec as mx
        >>> mx.linalg.svd(mx.array([[3.0, 0.0], [0.0, 4.0]]), compute_uv=False).tolist()
        [4.0, 3.0]
    """
    a = check_matrix("svd", a, square=False, complex_ok=True)
    compute_uv = bool_flag(compute_uv, "svd", "compute_uv")
    outs = record(SVD(compute_uv), (a,), to_stream(stream))
    return tuple(outs) if compute_uv else outs[0]


def _check_uplo(op: str, uplo: Any) -> str:
    if uplo not in ("L", "U"):
        raise ValueError(f"{op}: UPLO must be 'L' or 'U', got {uplo!r}")
    return uplo


def eigh(a: Any, UPLO: str = "L", *, stream: Any = None) -> tuple[Array, Array]:  # noqa: N803
    """Eigenvalues and eigenvectors of each symmetric (Hermitian) matrix in `a`.

    Args:
        a: float32, float64 or complex64 array of shape (..., n, n); only the `UPLO` triangle
            is read.
        UPLO: "L" (lower triangle) or "U" (upper triangle).

    Returns:
        (w, V): eigenvalues (..., n) in ascending order (float32 for complex64 inputs, which
        have no derivative) and eigenvectors as the columns of V (..., n, n).

    Raises:
        TypeError: if `a` is not float32/float64/complex64.
        ValueError: if `a` is not a batch of square matrices or UPLO is not "L"/"U".

    Example:
        >>> import nuvec as mx
        >>> w, V = mx.linalg.eigh(mx.array([[2.0, 0.0], [0.0, 1.0]]))
        >>> w.tolist(), V.shape
        ([1.0, 2.0], (2, 2))
    """
    a = check_matrix("eigh", a, complex_ok=True)
    w, v = record(Eigh(_check_uplo("eigh", UPLO), True), (a,), to_stream(stream))
    return w, v


def eigvalsh(a: Any, UPLO: str = "L", *, stream: Any = None) -> Array:  # noqa: N803
    """Eigenvalues (ascending) of each symmetric (Hermitian) matrix in `a`; see `eigh`.

    Args:
        a: float32, float64 or complex64 array of shape (..., n, n); only the
            `UPLO` triangle is read.
        UPLO: "L" (lower triangle) or "U" (upper triangle).
        stream: the stream (or device) to record on.

    Returns:
        Eigenvalues of shape (..., n), in ascending order.

    Raises:
        TypeError: if `a` is not float32/float64/complex64.
        ValueError: if `a` is not a batch of square matrices or UPLO is not "L"/"U".

    Example:
        >>> import nuvec as mx
        >>> mx.linalg.eigvalsh(mx.array([[2.0, 9.0], [0.0, 1.0]])).tolist()
        [1.0, 2.0]
    """
    a = check_matrix("eigvalsh", a, complex_ok=True)
    return record1(Eigh(_check_uplo("eigvalsh", UPLO), False), (a,), to_stream(stream))


def lu_factor(a: Any, *, stream: Any = None) -> tuple[Array, Array]:
    """The packed LU factorization with partial pivoting of each matrix in `a`.

    Args:
        a: float32 or float64 array of shape (..., m, n).

    Returns:
        (LU, pivots): L (unit diagonal, not stored) and U packed in one (..., m, n) array, and
        LAPACK's 0-based row interchanges (..., min(m, n)) as uint32: row i was swapped with
        row pivots[i], in order.

    Raises:
        TypeError: if `a` is not float32/float64.
        ValueError: if `a` has fewer than 2 dimensions.

    Example:
        >>> import nuvec as mx
        >>> LU, pivots = mx.linalg.lu_factor(mx.array([[0.0, 1.0], [2.0, 0.0]]))
        >>> LU.tolist(), pivots.tolist()
        ([[2.0, 0.0], [0.0, 1.0]], [1, 1])
    """
    a = check_matrix("lu_factor", a, square=False)
    lu_packed, pivots, _ = record(LU_FACTOR, (a,), to_stream(stream))
    return lu_packed, pivots


def solve_batched(op: str, a: Any, b: Any, stream: Any, upper: bool | None = None) -> Array:
    """Checks and solves A X = B with MLX's rules: a 1-D `b` is one vector, else (..., n, r).

    With `upper` set, only that triangle of A is read (a triangular solve).
    """
    a, b = as_array(a, op), as_array(b, op)
    if a.ndim < 2:
        raise ValueError(f"{op}: the first input must have at least 2 dimensions, got shape "
                         f"{a.shape}")
    if b.ndim < 1:
        raise ValueError(f"{op}: the second input must have at least 1 dimension, got shape "
                         f"{b.shape}")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{op}: the first input must be square matrices, got shape {a.shape}")
    row = -2 if b.ndim > 1 else -1
    if a.shape[-1] != b.shape[row]:
        raise ValueError(f"{op}: shapes {a.shape} and {b.shape} do not match (the last axis of "
                         f"the first must equal axis {row} of the second)")
    out = dt.promote_types(a.dtype, b.dtype)
    if out not in (dt.float32, dt.float64):
        raise DtypeError(f"{op}: inputs must promote to float32 or float64, got {a.dtype.name} "
                        f"and {b.dtype.name}")
    s = to_stream(stream)
    a = a if a.dtype is out else astype(a, out, stream=s)
    b = b if b.dtype is out else astype(b, out, stream=s)
    if upper is not None:
        a = triangle(a, upper)
    vector = b.ndim == 1
    if vector:
        b = expand_dims(b, -1)
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2], op=op)
    if a.shape[:-2] != batch:
        a = broadcast_to(a, (*batch, *a.shape[-2:]), stream=s)
    if b.shape[:-2] != batch:
        b = broadcast_to(b, (*batch, *b.shape[-2:]), stream=s)
    x = record1(SOLVE, (a, b), s)
    return squeeze(x, -1) if vector else x


def solve(a: Any, b: Any, *, stream: Any = None) -> Array:
    """Solves A X = B for each square matrix in `a` (batch axes broadcast).

    Args:
        a: array of shape (..., n, n).
        b: a vector (n,) or matrices (..., n, r); the inputs must promote to float32/float64.

    Returns:
        X of shape (..., n) for a vector `b`, else (..., n, r). A singular matrix fails at
        evaluation.

    Raises:
        TypeError: if the inputs do not promote to float32/float64.
        ValueError: if the shapes do not match.

    Example:
        >>> import nuvec as mx
        >>> mx.linalg.solve(mx.array([[2.0, 0.0], [0.0, 4.0]]), mx.array([2.0, 2.0])).tolist()
        [1.0, 0.5]
    """
    return solve_batched("solve", a, b, stream)



def eig(a: Any, *, stream: Any = None) -> tuple[Array, Array]:
    """Eigenvalues and right eigenvectors of each general square matrix in `a`.

    Args:
        a: float32, float64 or complex64 array of shape (..., n, n).

    Returns:
        (w, V) as complex64: eigenvalues (..., n) in LAPACK's order and unit-norm eigenvectors
        as the columns of V (..., n, n). Not differentiable.

    Raises:
        TypeError: if `a` is not float32/float64/complex64.
        ValueError: if `a` is not a batch of square matrices.

    Example:
        >>> import nuvec as mx
        >>> w, V = mx.linalg.eig(mx.array([[2.0, 0.0], [0.0, 3.0]]))
        >>> w.tolist(), V.shape
        ([(2+0j), (3+0j)], (2, 2))
    """
    a = check_matrix("eig", a, complex_ok=True)
    w, v = record(Eig(True), (a,), to_stream(stream))
    return w, v


def eigvals(a: Any, *, stream: Any = None) -> Array:
    """Eigenvalues (complex64, LAPACK's order) of each general square matrix in `a`; see `eig`.

    Args:
        a: float32, float64 or complex64 array of shape (..., n, n).
        stream: the stream (or device) to record on.

    Returns:
        complex64 eigenvalues of shape (..., n).

    Raises:
        TypeError: if `a` is not float32/float64/complex64.
        ValueError: if `a` is not a batch of square matrices.

    Example:
        >>> import nuvec as mx
        >>> mx.linalg.eigvals(mx.array([[2.0, 0.0], [0.0, 3.0]])).tolist()
        [(2+0j), (3+0j)]
    """
    a = check_matrix("eigvals", a, complex_ok=True)
    return record1(Eig(False), (a,), to_stream(stream))


def slogdet(a: Any, *, stream: Any = None) -> tuple[Array, Array]:
    """The sign and the log of the absolute value of the determinant of each square matrix.

    Integer and boolean inputs are promoted to float32 (MLX's rule); float16 and bfloat16
    ones are computed in float32 and give results of their own dtype, as MLX's.

    Args:
        a: array of shape (..., n, n).

    Returns:
        (sign, logabsdet), each of shape (...): sign is -1, 0 or 1 and a singular matrix gives
        (0, -inf). The gradient flows through logabsdet (inv(A)^T).

    Raises:
        TypeError: if `a` is complex.
        ValueError: if `a` is not a batch of square matrices.

    Example:
        >>> import nuvec as mx
        >>> [x.item() for x in mx.linalg.slogdet(mx.array([[-2.0, 0.0], [0.0, 1.0]]))]
        [-1.0, 0.6931471824645996]
    """
    a = as_array(a, "slogdet")
    if a.dtype in HALF_FLOATS:  # computed in float32 and rounded once, in MLX's result dtype
        return tuple(astype(x, a.dtype, stream=stream)  # type: ignore[return-value]
                     for x in slogdet(astype(a, dt.float32, stream=stream), stream=stream))
    sign, logabs = record(SLOGDET, (determinant_input("slogdet", a, stream),), to_stream(stream))
    return sign, logabs


HALF_FLOATS = (dt.float16, dt.bfloat16)  # `det` and `slogdet` compute them in float32


def determinant_input(op: str, a: Any, stream: Any) -> Array:
    """`a` checked for `det`/`slogdet`, integers and booleans promoted to float32."""
    a = as_array(a, op)
    if a.dtype.kind in "biu":
        a = astype(a, dt.float32, stream=stream)
    return check_matrix(op, a)
