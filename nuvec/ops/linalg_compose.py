"""Linear algebra built from other operations: norms, pinv, triangular solves and inverses,
`cholesky_inv`, `lu` and `cross` (MLX's compositions). Their derivatives and batching come
from the operations they use. Nothing here is exported at the top level.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, record, record1
from nuvec.graph.caller import public_caller
from nuvec.graph.device import stream as stream_context
from nuvec.graph.device import to_stream
from nuvec.ops.arguments import (as_array, bool_flag, broadcast_shapes, index_int, int_tuple,
                                 normalize_axis)
from nuvec.ops.binary import add, multiply, power, subtract
from nuvec.ops.comparison import greater, not_equal, where
from nuvec.ops.creation import ones, zeros, zeros_like
from nuvec.ops.families import squeezed_shape
from nuvec.ops.join import concatenate, split
from nuvec.ops.linalg import INVERSE, LU_FACTOR, SLOGDET, SVD, mm, mT, triangle
from nuvec.ops.linalg_functions import (HALF_FLOATS, check_matrix, determinant_input,
                                         solve_batched)
from nuvec.ops.matrices import eye
from nuvec.ops.reduction import max as reduce_max, min as reduce_min, sum as reduce_sum
from nuvec.ops.shape import broadcast_to, expand_dims, moveaxis, reshape
from nuvec.ops.unary import abs as absolute, astype, exp, negative, reciprocal, sqrt, square

__all__: list[str] = []


def _at_least_float(a: Array) -> Array:
    return a if a.dtype.is_inexact else astype(a, dt.promote_types(a.dtype, dt.float32))


def _norm_axes(a: Array, axis: Any) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(a.ndim))
    axes = int_tuple(axis, "norm", "axis")
    out = tuple(normalize_axis(x, a.ndim, "norm") for x in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"{public_caller('norm')}: repeated axis in {axes}")
    return out


def _l2(a: Array, axes: tuple[int, ...], keepdims: bool) -> Array:
    sq = multiply(absolute(a), absolute(a)) if a.dtype.kind == "c" else square(a)
    return sqrt(reduce_sum(sq, axis=axes, keepdims=keepdims))


def _vector_norm(a: Array, ord: float, axes: tuple[int, ...], keepdims: bool) -> Array:
    dtype = _at_least_float(a).dtype if a.dtype.kind != "c" else dt.float32
    if ord == 2:
        return _l2(a, axes, keepdims)
    if ord == 0:
        return astype(reduce_sum(not_equal(a, 0), axis=axes, keepdims=keepdims), dtype)
    if ord == 1:
        return astype(reduce_sum(absolute(a), axis=axes, keepdims=keepdims), dtype)
    if ord == math.inf:
        return astype(reduce_max(absolute(a), axis=axes, keepdims=keepdims), dtype)
    if ord == -math.inf:
        return astype(reduce_min(absolute(a), axis=axes, keepdims=keepdims), dtype)
    magnitude = astype(absolute(a), dtype)
    total = reduce_sum(power(magnitude, ord), axis=axes, keepdims=keepdims)
    return power(total, 1.0 / ord)


def _singular_values(a: Array, axes: tuple[int, ...]) -> Array:
    """Singular values of the matrices spanned by `axes` (row axis, column axis)."""
    row, col = axes
    x = moveaxis(moveaxis(a, row, -1), col if col < row else col - 1, -1)
    if x.dtype not in (dt.float32, dt.float64, dt.complex64):  # SVD's dtypes
        x = astype(_at_least_float(x), dt.float32)
    return record1(SVD(False), (x,), to_stream(None))


def _matrix_norm(a: Array, ord: Any, axes: tuple[int, ...], keepdims: bool) -> Array:
    row, col = axes
    if ord in ("fro", "f") or ord is None:
        return _l2(a, axes, keepdims)
    dtype = _at_least_float(a).dtype if a.dtype.kind != "c" else dt.float32
    if ord in (2, -2) and not a.shape[row] * a.shape[col]:
        raise ValueError(f"{public_caller('norm')}: an empty matrix has no largest or "
                         f"smallest singular value (ord={ord}), got shape {a.shape}")
    if ord in ("nuc", 2, -2):
        s = _singular_values(a, axes)
        reduce = reduce_sum if ord == "nuc" else reduce_max if ord == 2 else reduce_min
        out = reduce(s, axis=-1)
        out = astype(out, dtype)  # float16/bfloat16 inputs went through a float32 SVD
        return expand_dims(out, sorted(axes)) if keepdims else out
    if isinstance(ord, str):
        raise ValueError(f"{public_caller('norm')}: invalid ord {ord!r} for a matrix norm")
    if ord in (1, -1):
        inner, outer = row, col
    elif ord in (math.inf, -math.inf):
        inner, outer = col, row
    else:
        raise ValueError(f"{public_caller('norm')}: invalid ord {ord} for a matrix norm")
    if not a.shape[outer]:
        raise ValueError(f"{public_caller('norm')}: ord={ord} takes an extremum over axis "
                         f"{outer}, which is empty, got shape {a.shape}")
    pick = reduce_max if ord > 0 else reduce_min
    out = pick(reduce_sum(absolute(a), axis=inner, keepdims=True), axis=outer, keepdims=True)
    if not keepdims:
        out = reshape(out, squeezed_shape(out.shape, axes))
    return astype(out, dtype)


def norm(
    a: Any, /, ord: int | float | str | None = None, axis: int | Sequence[int] | None = None,
    keepdims: bool = False, *, stream: Any = None,
) -> Array:
    """Matrix or vector norm (MLX's `linalg.norm`).

    | ord   | matrices (2 axes)             | vectors (1 axis)             |
    |-------|-------------------------------|------------------------------|
    | None  | Frobenius                     | 2-norm                       |
    | 'fro' | Frobenius                     | --                           |
    | 'nuc' | sum of singular values        | --                           |
    | inf   | max(sum(abs(x), axis=col))    | max(abs(x))                  |
    | -inf  | min(sum(abs(x), axis=col))    | min(abs(x))                  |
    | 0     | --                            | number of nonzeros           |
    | 1, -1 | max/min(sum(abs(x), axis=row))| sum(abs(x)**ord)**(1/ord)    |
    | 2, -2 | largest/smallest singular val.| as above                     |
    | other | --                            | sum(abs(x)**ord)**(1/ord)    |

    With `ord=None` and `axis=None` the 2-norm of all elements is returned, whatever the
    number of dimensions; with `ord` given and `axis=None`, `a` must be 1-D or 2-D.

    Args:
        a: the input; integer inputs give float32 results.
        ord: the order, see the table.
        axis: one axis (vector norm) or two axes (matrix norm); default all axes.
        keepdims: keep the reduced axes as size-1 dimensions.

    Raises:
        ValueError: for more than two axes, an out-of-range or repeated axis, or an order
            that does not apply to the number of axes.

    Example:
        >>> import nuvec as mx
        >>> mx.linalg.norm(mx.array([3.0, 4.0])).item()
        5.0
    """
    a, keepdims = as_array(a, "norm"), bool_flag(keepdims, "norm", "keepdims")
    with stream_context(to_stream(stream)):
        return _norm(a, ord, axis, keepdims)


def _norm(a: Array, ord: Any, axis: Any, keepdims: bool) -> Array:
    axes = _norm_axes(a, axis)
    if ord is None and axis is None:
        out = _l2(reshape(a, (a.size,)), (0,), False)
        return reshape(out, (1,) * a.ndim) if keepdims else out
    if len(axes) > 2 or not axes:
        raise ValueError(f"{public_caller('norm')}: expected 1 or 2 axes, got {len(axes)} for "
                         f"shape {a.shape}")
    if isinstance(ord, str) and len(axes) != 2:
        raise ValueError(f"{public_caller('norm')}: ord {ord!r} is only supported for "
                         f"matrices, got {len(axes)} axis")
    if ord is not None and not isinstance(ord, (str, int, float)):
        raise TypeError(f"{public_caller('norm')}: ord must be a number, a string or None, "
                        f"got {type(ord).__name__}")
    if len(axes) == 1:
        return _vector_norm(a, 2 if ord is None else ord, axes, keepdims)
    return _matrix_norm(a, ord, axes, keepdims)


def solve_triangular(a: Any, b: Any, *, upper: bool = False, stream: Any = None) -> Array:
    """Solves A X = B for triangular A, reading only the `upper` (or lower) triangle of `a`.

    Args:
        a: array of shape (..., n, n).
        b: a vector (n,) or matrices (..., n, r); the inputs must promote to float32/float64.
        upper: use the upper triangle of `a` (default the lower one).

    Returns:
        X of shape (..., n) for a vector `b`, else (..., n, r).

    Raises:
        TypeError: if the inputs do not promote to float32/float64.
        ValueError: if the shapes do not match.

    Example:
        >>> import nuvec as mx
        >>> a = mx.array([[2.0, 0.0], [1.0, 1.0]])
        >>> mx.linalg.solve_triangular(a, mx.array([2.0, 3.0])).tolist()
        [1.0, 2.0]
    """
    return solve_batched("solve_triangular", a, b, stream,
                         upper=bool_flag(upper, "solve_triangular", "upper"))


def tri_inv(a: Any, upper: bool = False, *, stream: Any = None) -> Array:
    """The inverse of each triangular matrix in `a`, reading only the `upper` (or lower)
    triangle.

    Args:
        a: float32 or float64 array of shape (..., n, n).
        upper: read the upper triangle instead of the lower one.
        stream: the stream (or device) to record on.

    Returns:
        The inverses, of `a`'s shape and dtype.

    Raises:
        TypeError: if `a` is not float32/float64.
        ValueError: if `a` has fewer than 2 dimensions or is not square.

    Example:
        >>> import nuvec as mx
        >>> mx.linalg.tri_inv(mx.array([[2.0, 0.0], [1.0, 1.0]])).tolist()
        [[0.5, 0.0], [-0.5, 1.0]]
    """
    a = check_matrix("tri_inv", a)
    s = to_stream(stream)
    upper = bool_flag(upper, "tri_inv", "upper")
    # the LU inverse pivots rows of a lower triangle, leaving rounding noise above it: the
    # other triangle is zeroed again, exact as MLX's
    return triangle(record1(INVERSE, (triangle(a, upper),), s), upper)


def cholesky_inv(a: Any, upper: bool = False, *, stream: Any = None) -> Array:
    """The inverse of A from its Cholesky factor `a`: (L L^T)^{-1}, or (U^T U)^{-1} if
    `upper`.

    Args:
        a: float32/float64 triangular factors (..., n, n); only that triangle is read.
        upper: `a` holds upper factors.

    Raises:
        TypeError: if `a` is not float32/float64.
        ValueError: if `a` has fewer than 2 dimensions or is not square.

    Example:
        >>> import nuvec as mx
        >>> mx.linalg.cholesky_inv(mx.array([[2.0, 0.0], [0.0, 1.0]])).tolist()
        [[0.25, 0.0], [0.0, 1.0]]
    """
    factor = check_matrix("cholesky_inv", a)
    upper = bool_flag(upper, "cholesky_inv", "upper")
    inv_factor = record1(INVERSE, (triangle(factor, upper),), to_stream(stream))
    if upper:
        return mm(inv_factor, mT(inv_factor))
    return mm(mT(inv_factor), inv_factor)


def lu(a: Any, *, stream: Any = None) -> tuple[Array, Array, Array]:
    """The LU factorization with partial pivoting of each matrix in `a`.

    Args:
        a: float32 or float64 array of shape (..., m, n).

    Returns:
        (p, L, U): row indices p (..., m) as uint32, unit lower-triangular L (..., m, k) and
        upper-triangular U (..., k, n), k = min(m, n), such that A = L[p, :] @ U
        (`take_along_axis(L, p[..., None], axis=-2) @ U` for batches).

    Raises:
        TypeError: if `a` is not float32/float64.
        ValueError: if `a` has fewer than 2 dimensions.

    Example:
        >>> import nuvec as mx
        >>> p, L, U = mx.linalg.lu(mx.array([[0.0, 1.0], [2.0, 0.0]]))
        >>> p.tolist(), U.tolist()
        ([1, 0], [[2.0, 0.0], [0.0, 1.0]])
    """
    a = check_matrix("lu", a, square=False)
    packed, _, rows = record(LU_FACTOR, (a,), to_stream(stream))
    m, n = a.shape[-2:]
    k = min(m, n)
    lower, upper = triangle(packed, False, 1), triangle(packed, True)
    if n > k:
        lower = lower[..., :, :k]
    if m > k:
        upper = upper[..., :k, :]
    lower = add(lower, eye(m, k, dtype=a.dtype))
    return rows, lower, upper


def pinv(a: Any, *, stream: Any = None) -> Array:
    """The Moore-Penrose pseudo-inverse of each matrix in `a`, through the SVD.

    Singular values below `10 * max(m, n) * eps * max(S)` are treated as zero (MLX's cutoff).

    Args:
        a: float32 or float64 array of shape (..., m, n).

    Returns:
        The pseudo-inverses, of shape (..., n, m).

    Raises:
        TypeError: if `a` is not float32/float64.
        ValueError: if `a` has fewer than 2 dimensions.

    Example:
        >>> import nuvec as mx
        >>> mx.linalg.pinv(mx.array([[2.0, 0.0], [0.0, 4.0]])).tolist()
        [[0.5, 0.0], [0.0, 0.25]]
    """
    a = check_matrix("pinv", a, square=False)
    m, n = a.shape[-2:]
    k = min(m, n)
    if k == 0:  # no singular values: the pseudo-inverse of an empty matrix is all zeros (MLX)
        return zeros((*a.shape[:-2], n, m), a.dtype, stream=stream)
    u, s, vt = record(SVD(True), (a,), to_stream(stream))
    u_k = u[..., :, :k] if m > k else u
    vt_k = vt[..., :k, :] if n > k else vt
    rcond = 10.0 * max(m, n) * dt.finfo(a.dtype).eps
    cutoff = multiply(rcond, reduce_max(s, axis=-1, keepdims=True))
    keep = greater(s, cutoff)
    safe = where(keep, s, 1.0)
    inverse = where(keep, reciprocal(safe), 0.0)
    return mm(multiply(mT(vt_k), expand_dims(inverse, -2)), mT(u_k))


def cross(a: Any, b: Any, axis: int = -1, *, stream: Any = None) -> Array:
    """The cross product of 3-vectors (2-vectors are extended with a zero z) along `axis`.

    Args:
        a, b: arrays whose `axis` has size 2 or 3; other axes broadcast.
        axis: the axis holding the vectors.

    Returns:
        The cross products, with size 3 along `axis`, in the promoted dtype.

    Raises:
        ValueError: if `axis` is out of range or does not have size 2 or 3.

    Example:
        >>> import nuvec as mx
        >>> mx.linalg.cross(mx.array([1.0, 0.0, 0.0]), mx.array([0.0, 1.0, 0.0])).tolist()
        [0.0, 0.0, 1.0]
    """
    a, b = as_array(a, "cross"), as_array(b, "cross")
    axis = index_int(axis, "cross", "axis")
    for x in (a, b):
        if not -x.ndim <= axis < x.ndim:
            raise ValueError(f"cross: axis {axis} is out of bounds for an array with {x.ndim} "
                             "dimensions")
        if x.shape[axis] not in (2, 3):
            raise ValueError(f"cross: axis {axis} must have size 2 or 3, got shape {x.shape}")
    with stream_context(to_stream(stream)):
        return _cross(a, b, axis)


def _cross(a: Array, b: Array, axis: int) -> Array:
    out_type = dt.promote_types(a.dtype, b.dtype)
    a3 = list(a.shape)
    a3[axis] = 3
    b3 = list(b.shape)
    b3[axis] = 3
    shape = list(broadcast_shapes(a3, b3, op="cross"))
    ax = axis % len(shape)
    parts = []
    for x in (a, b):
        size = x.shape[axis]
        shape[ax] = size
        x = broadcast_to(astype(x, out_type), tuple(shape))
        pieces = split(x, size, axis=ax)
        if size == 2:
            pieces.append(None)
        parts.append(pieces)
    (a0, a1, a2), (b0, b1, b2) = parts

    def term(x: Array | None, y: Array | None, u: Array | None, v: Array | None) -> Array:
        """x*y - u*v with missing (zero) z components dropped."""
        left = multiply(x, y) if x is not None and y is not None else None
        right = multiply(u, v) if u is not None and v is not None else None
        if left is None and right is None:
            return zeros_like(a0)
        if right is None:
            return left
        return negative(right) if left is None else subtract(left, right)

    out = [term(a1, b2, a2, b1), term(a2, b0, a0, b2), term(a0, b1, a1, b0)]
    return concatenate(out, axis=ax)


def det(a: Any, *, stream: Any = None) -> Array:
    """The determinant of each square matrix in `a`.

    Matrices up to 3x3 use the cofactor formula (exact, and smooth through singular
    matrices); larger ones sign * exp(logabsdet) from `slogdet` (MLX's split).

    Args:
        a: array of shape (..., n, n); integers, booleans and half floats compute in float32
            (half floats give results of their own dtype, as MLX's).

    Returns:
        The determinants, of shape (...). Singular matrices larger than 3x3 give 0 with a NaN
        gradient.

    Raises:
        TypeError: if `a` is complex.
        ValueError: if `a` is not a batch of square matrices.

    Example:
        >>> import nuvec as mx
        >>> mx.linalg.det(mx.array([[2.0, 1.0], [1.0, 3.0]])).item()
        5.0
    """
    a = as_array(a, "det")
    if a.dtype in HALF_FLOATS:  # computed in float32 and rounded once, in MLX's result dtype
        return astype(det(astype(a, dt.float32, stream=stream), stream=stream), a.dtype,
                      stream=stream)
    a = determinant_input("det", a, stream)
    n = a.shape[-1]
    s = to_stream(stream)
    with stream_context(s):
        if n > 3:
            sign, logabs = record(SLOGDET, (a,), s)
            return multiply(sign, exp(logabs))
        if n == 0:
            return ones(a.shape[:-2], a.dtype)

        def e(i: int, j: int) -> Array:
            return a[..., i, j]

        if n == 1:
            return e(0, 0)
        if n == 2:
            return subtract(multiply(e(0, 0), e(1, 1)), multiply(e(0, 1), e(1, 0)))

        def minor(i: int, j: int, k: int, m: int) -> Array:
            return subtract(multiply(e(1, i), e(2, j)), multiply(e(1, k), e(2, m)))

        first = multiply(e(0, 0), minor(1, 2, 2, 1))
        second = multiply(e(0, 1), minor(0, 2, 2, 0))
        third = multiply(e(0, 2), minor(0, 1, 1, 0))
        return add(subtract(first, second), third)
