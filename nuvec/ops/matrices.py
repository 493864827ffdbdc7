"""Matrix helpers: eye, identity, tri, tril/triu, diag, diagonal and trace.

`Eye` and `Tri` are input-less; `Triangle` (tril/triu), `Diagonal` and its transpose
`DiagonalEmbed` are linear, so their derivatives apply the same or the transposed primitive.
"""

from __future__ import annotations

from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.caller import public_caller
from nuvec.graph.array import Array, record1
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import Primitive
from nuvec.ops.arguments import as_array, index_int, normalize_axis
from nuvec.ops.creation import Source
from nuvec.ops.families import Linear, apply, move_batch_to_front
from nuvec.ops.reduction import sum as reduce_sum
from nuvec.ops.unary import astype

__all__ = ["eye", "identity", "tri", "tril", "triu", "diag", "diagonal", "trace"]


class Eye(Source):
    """An `n x m` matrix with ones on diagonal `k`, zeros elsewhere."""

    __slots__ = ("n", "m", "k", "dtype")

    def __init__(self, n: int, m: int, k: int, dtype: dt.Dtype):
        self.n, self.m, self.k, self.dtype = n, m, k, dtype

    def params(self):
        return (self.n, self.m, self.k, self.dtype)

    def output_specs(self, inputs):
        return (((self.n, self.m), self.dtype),)


class Tri(Eye):
    """An `n x m` matrix with ones at and below diagonal `k`, zeros elsewhere."""

    __slots__ = ()


def eye(
    n: int, m: int | None = None, k: int = 0, dtype: dt.Dtype | None = dt.float32, *,
    stream: Any = None,
) -> Array:  # fmt: skip
    """An `n x m` matrix (`m` defaults to `n`) with ones on diagonal `k` (k > 0: above).

    `dtype=None` means float32, as in MLX.

    Args:
        n: the number of rows.
        m: the number of columns; default `n`.
        k: the diagonal (0: main, > 0: above, < 0: below).
        dtype: the dtype of the result.
        stream: the stream (or device) to record on.

    Returns:
        An `n x m` array.

    Raises:
        ValueError: if `n` or `m` is negative.

    Example:
        >>> import nuvec as mx
        >>> mx.eye(2, dtype=mx.int32).tolist()
        [[1, 0], [0, 1]]
    """
    m = n if m is None else m
    n, m = (index_int(v, "eye", what, high=2**31 - 1) for v, what in ((n, "n"), (m, "m")))
    k = index_int(k, "eye", "k", -(2**31), 2**31 - 1)
    if n < 0 or m < 0:
        raise ValueError(f"{public_caller('eye')}: n and m must be non-negative, got n={n}, "
                         f"m={m}")
    out = dt.float32 if dtype is None else dt.to_dtype(dtype, "eye")
    return record1(Eye(int(n), int(m), int(k), out), (), to_stream(stream))


def identity(n: int, dtype: dt.Dtype | None = dt.float32, *, stream: Any = None) -> Array:
    """The `n x n` identity matrix.

    Args:
        n: the number of rows and columns.
        dtype: the dtype of the result.
        stream: the stream (or device) to record on.

    Returns:
        An `n x n` array.

    Raises:
        ValueError: if `n` is not positive.

    Example:
        >>> import nuvec as mx
        >>> mx.identity(2).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    return eye(n, n, 0, dtype, stream=stream)


def tri(
    n: int, m: int | None = None, k: int = 0, dtype: dt.Dtype | None = dt.float32, *,
    stream: Any = None,
) -> Array:  # fmt: skip
    """An `n x m` matrix with ones at and below diagonal `k`, zeros above (`dtype=None`: float32).

    Args:
        n: the number of rows.
        m: the number of columns; default `n`.
        k: the diagonal (0: main, > 0: above, < 0: below).
        dtype: the dtype of the result.
        stream: the stream (or device) to record on.

    Returns:
        An `n x m` array.

    Raises:
        ValueError: if `n` or `m` is negative.

    Example:
        >>> import nuvec as mx
        >>> mx.tri(2, dtype=mx.int32).tolist()
        [[1, 0], [1, 1]]
    """
    m = n if m is None else m
    n, m = (index_int(v, "tri", what, high=2**31 - 1) for v, what in ((n, "n"), (m, "m")))
    k = index_int(k, "tri", "k", -(2**31), 2**31 - 1)
    if n < 0 or m < 0:
        raise ValueError(f"{public_caller('tri')}: n and m must be non-negative, got n={n}, "
                         f"m={m}")
    out = dt.float32 if dtype is None else dt.to_dtype(dtype, "tri")
    return record1(Tri(int(n), int(m), int(k), out), (), to_stream(stream))


# -- triangles and diagonals ---------------------------------------------------------------


class Triangle(Linear, Primitive):
    """Keeps the lower (`upper=False`: at and below diagonal `k`) or upper triangle of the
    last two axes, zeroing the rest."""

    __slots__ = ("k", "upper")

    def __init__(self, k: int, upper: bool):
        self.k, self.upper = k, upper

    def params(self):
        return (self.k, self.upper)

    def output_specs(self, inputs):
        return ((inputs[0].shape, inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        return [apply(self, cotangents[0])]

    def vmap(self, inputs, axes):
        return [apply(self, move_batch_to_front(inputs[0], axes[0]))], [0]


def _triangle(op: str, x: Any, k: int, upper: bool, stream: Any) -> Array:
    x = as_array(x, op)
    if x.ndim < 2:
        raise ValueError(f"{op}: the array must be at least 2-D, got shape {x.shape}")
    k = index_int(k, op, "k", -(2**31), 2**31 - 1)
    return record1(Triangle(k, upper), (x,), to_stream(stream))


def tril(x: Any, k: int = 0, *, stream: Any = None) -> Array:
    """The lower triangle of the last two axes (at and below diagonal `k`); zeros above.

    Args:
        x: an array of at least 2 dimensions.
        k: the diagonal (0: main, > 0: above, < 0: below).
        stream: the stream (or device) to record on.

    Returns:
        An array of `x`'s shape and dtype.

    Raises:
        ValueError: if `x` has fewer than 2 dimensions.

    Example:
        >>> import nuvec as mx
        >>> mx.tril(mx.ones((2, 2))).tolist()
        [[1.0, 0.0], [1.0, 1.0]]
    """
    return _triangle("tril", x, k, False, stream)


def triu(x: Any, k: int = 0, *, stream: Any = None) -> Array:
    """The upper triangle of the last two axes (at and above diagonal `k`); zeros below.

    Args:
        x: an array of at least 2 dimensions.
        k: the diagonal (0: main, > 0: above, < 0: below).
        stream: the stream (or device) to record on.

    Returns:
        An array of `x`'s shape and dtype.

    Raises:
        ValueError: if `x` has fewer than 2 dimensions.

    Example:
        >>> import nuvec as mx
        >>> mx.triu(mx.ones((2, 2))).tolist()
        [[1.0, 1.0], [0.0, 1.0]]
    """
    return _triangle("triu", x, k, True, stream)


def _diagonal_length(n: int, m: int, offset: int) -> int:
    return max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))


class Diagonal(Linear, Primitive):
    """The diagonal `offset` of axes (`axis1`, `axis2`), which are removed; it becomes the last
    axis (NumPy's `diagonal`)."""

    __slots__ = ("offset", "axis1", "axis2")

    def __init__(self, offset: int, axis1: int, axis2: int):
        self.offset, self.axis1, self.axis2 = offset, axis1, axis2

    def params(self):
        return (self.offset, self.axis1, self.axis2)

    def output_specs(self, inputs):
        x = inputs[0]
        rest = [d for i, d in enumerate(x.shape) if i not in (self.axis1, self.axis2)]
        size = _diagonal_length(x.shape[self.axis1], x.shape[self.axis2], self.offset)
        return (((*rest, size), x.dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        embed = DiagonalEmbed(self.offset, self.axis1, self.axis2, primals[0].shape)
        return [apply(embed, cotangents[0])]

    def vmap(self, inputs, axes):
        x = move_batch_to_front(inputs[0], axes[0])
        return [apply(Diagonal(self.offset, self.axis1 + 1, self.axis2 + 1), x)], [0]


class DiagonalEmbed(Linear, Primitive):
    """The transpose of `Diagonal`: zeros of `shape` with the input's last axis written on the
    diagonal `offset` of axes (`axis1`, `axis2`)."""

    __slots__ = ("offset", "axis1", "axis2", "shape")

    def __init__(self, offset: int, axis1: int, axis2: int, shape: tuple[int, ...]):
        self.offset, self.axis1, self.axis2, self.shape = offset, axis1, axis2, tuple(shape)

    def params(self):
        return (self.offset, self.axis1, self.axis2, self.shape)

    def output_specs(self, inputs):
        return ((self.shape, inputs[0].dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        return [apply(Diagonal(self.offset, self.axis1, self.axis2), cotangents[0])]

    def vmap(self, inputs, axes):
        g = move_batch_to_front(inputs[0], axes[0])
        embed = DiagonalEmbed(
            self.offset, self.axis1 + 1, self.axis2 + 1, (g.shape[0], *self.shape)
        )
        return [apply(embed, g)], [0]


def diagonal(
    a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, *, stream: Any = None
) -> Array:
    """The diagonal `offset` of the 2-D sub-arrays over `axis1` and `axis2`.

    Those axes are removed and the diagonal is appended as the last axis (NumPy's rule).

    Args:
        a: an array of at least 2 dimensions.
        offset: the diagonal (0: main, > 0: above, < 0: below).
        axis1: the row axis of the 2-D sub-arrays.
        axis2: the column axis of the 2-D sub-arrays.
        stream: the stream (or device) to record on.

    Returns:
        The diagonals, of `a`'s dtype.

    Raises:
        ValueError: if `a` has fewer than 2 dimensions, an axis is out of range, or the two
            axes are the same.

    Example:
        >>> import nuvec as mx
        >>> mx.diagonal(mx.array([[1, 2], [3, 4]])).tolist()
        [1, 4]
    """
    a = as_array(a, "diagonal")
    if a.ndim < 2:
        raise ValueError(f"diagonal: the array must be at least 2-D, got shape {a.shape}")
    ax1 = normalize_axis(axis1, a.ndim, "diagonal")
    ax2 = normalize_axis(axis2, a.ndim, "diagonal")
    if ax1 == ax2:
        raise ValueError(f"diagonal: axis1 and axis2 must differ, got {axis1} and {axis2}")
    offset = index_int(offset, "diagonal", "offset", -(2**31), 2**31 - 1)
    return record1(Diagonal(offset, ax1, ax2), (a,), to_stream(stream))


def diag(a: Any, /, k: int = 0, *, stream: Any = None) -> Array:
    """A 2-D array with 1-D `a` on diagonal `k`, or the diagonal `k` of a 2-D `a`.

    Args:
        a: a 1-D or 2-D array.
        k: the diagonal (0: main, > 0: above, < 0: below).
        stream: the stream (or device) to record on.

    Returns:
        A 2-D array for 1-D `a`, a 1-D array for 2-D `a`.

    Raises:
        ValueError: if `a` is neither 1-D nor 2-D.

    Example:
        >>> import nuvec as mx
        >>> mx.diag(mx.array([1, 2])).tolist()
        [[1, 0], [0, 2]]
    """
    a = as_array(a, "diag")
    k = index_int(k, "diag", "k", -(2**31), 2**31 - 1)
    if a.ndim == 2:
        return diagonal(a, k, 0, 1, stream=stream)
    if a.ndim != 1:
        raise ValueError(f"diag: the array must be 1-D or 2-D, got shape {a.shape}")
    n = a.shape[0] + abs(int(k))
    return record1(DiagonalEmbed(int(k), 0, 1, (n, n)), (a,), to_stream(stream))


def trace(
    a: Any, /, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: dt.Dtype | None = None,
    *, stream: Any = None,
) -> Array:  # fmt: skip
    """Sum of the diagonal `offset` over `axis1` and `axis2` (in `dtype` if given).

    The sum follows `sum`'s dtype rules (small integers give int32).

    Args:
        a: an array of at least 2 dimensions.
        offset: the diagonal (0: main, > 0: above, < 0: below).
        axis1: the row axis of the 2-D sub-arrays.
        axis2: the column axis of the 2-D sub-arrays.
        dtype: the dtype of the result; default as `sum`.
        stream: the stream (or device) to record on.

    Returns:
        The sums of the diagonals.

    Raises:
        ValueError: as `diagonal`.

    Example:
        >>> import nuvec as mx
        >>> mx.trace(mx.array([[1.0, 2.0], [3.0, 4.0]])).item()
        5.0
    """
    a = as_array(a, "trace")
    if a.ndim < 2:
        raise ValueError(f"trace: the array must be at least 2-D, got shape {a.shape}")
    d = diagonal(a, offset, axis1, axis2, stream=stream)
    if dtype is not None:
        d = astype(d, dt.to_dtype(dtype, "trace"), stream=stream)
    return reduce_sum(d, -1, stream=stream)
