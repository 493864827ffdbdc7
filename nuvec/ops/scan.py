"""Scans along an axis: cumsum, cumprod, cummax, cummin, logcumsumexp.

One `Scan` primitive (MLX's) covers all five; its rules are written with nuvec operations.
The product and extremum rules solve first-order linear recurrences along the axis by
doubling (O(n log n), no division by the input, so zeros are exact).
"""

from __future__ import annotations

from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array, record1
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import Primitive
from nuvec.ops import (binary, comparison, complex_parts, creation, join, nonfinite, reduction,
                       slicing, unary)
from nuvec.ops import shape as shape_ops
from nuvec.ops.arguments import as_array, bool_flag, index_int, normalize_axis
from nuvec.ops.families import apply, move_batch_to_front

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "diff"]

class Scan(Primitive):
    """Inclusive or exclusive running `kind` ("sum", "prod", "max", "min", "logaddexp") along
    `axis`, forward or reversed (MLX's Scan)."""

    __slots__ = ("kind", "axis", "reverse", "inclusive")

    def __init__(self, kind: str, axis: int, reverse: bool, inclusive: bool):
        self.kind, self.axis, self.reverse, self.inclusive = kind, axis, reverse, inclusive

    def params(self):
        return (self.kind, self.axis, self.reverse, self.inclusive)

    def output_specs(self, inputs):
        x = inputs[0]
        out = dt.int32 if self.kind == "sum" and x.dtype is dt.bool_ else x.dtype
        return ((x.shape, out),)

    def vjp(self, primals, cotangents, argnums, outputs):
        x, g = primals[0], cotangents[0]
        if not x.dtype.is_inexact:
            return [None]
        if self.kind == "sum":
            return [apply(Scan("sum", self.axis, not self.reverse, self.inclusive), g)]
        if self.kind == "logaddexp":
            return [self._logaddexp_vjp(x, g, outputs[0])]
        if self.kind == "prod":
            return [self._prod_vjp(x, g)]
        return [self._extremum_vjp(x, g, outputs[0])]

    def jvp(self, primals, tangents, outputs):
        x, t = primals[0], tangents[0]
        if not x.dtype.is_inexact:
            return [None]
        if self.kind == "sum":
            return [apply(self, t)]
        if self.kind == "logaddexp":
            return [self._logaddexp_jvp(x, t, outputs[0])]
        if self.kind == "prod":
            return [self._prod_jvp(x, t)]
        return [self._extremum_jvp(x, t, outputs[0])]

    def vmap(self, inputs, axes):
        x = move_batch_to_front(inputs[0], axes[0])
        return [apply(Scan(self.kind, self.axis + 1, self.reverse, self.inclusive), x)], [0]

    # -- rule helpers ----------------------------------------------------------------------
    # Extremum rules. The cotangent of each output goes to the inputs of its window equal to
    # it, split equally among ties (as MLX's max/min reductions do). For an inclusive running
    # extremum Y those inputs are the "hits" (x_k == Y_k) of the plateau of equal Y values
    # that ends at the output, so counts and sums are recurrences along plateaus. An exclusive
    # scan is the inclusive one shifted by one position.
    def _plateaus(self, x: Array, y: Array) -> tuple[Array, Array, Array]:
        """(inclusive Y, hit mask, same-as-previous mask) as x's dtype."""
        if not self.inclusive:
            y = apply(Scan(self.kind, self.axis, self.reverse, True), x)
        d = self._direction()
        hits = unary.astype(comparison.equal(x, y), x.dtype)
        same = unary.astype(comparison.equal(y, _shift(y, self.axis, -d)), x.dtype)
        return y, hits, same

    def _tie_counts(self, hits: Array, same: Array) -> Array:
        counts = _recurrence(same, hits, self.axis, -self._direction())
        return binary.maximum(counts, 1)

    def _extremum_vjp(self, x: Array, g: Array, y: Array) -> Array:
        d = self._direction()
        _, hits, same = self._plateaus(x, y)
        if not self.inclusive:
            g = _shift(g, self.axis, d)
        share = binary.divide(g, self._tie_counts(hits, same))
        return binary.multiply(hits, _recurrence(_shift(same, self.axis, d), share, self.axis, d))

    def _extremum_jvp(self, x: Array, t: Array, y: Array) -> Array:
        d = self._direction()
        _, hits, same = self._plateaus(x, y)
        total = _recurrence(same, binary.multiply(hits, t), self.axis, -d)
        out = binary.divide(total, self._tie_counts(hits, same))
        return out if self.inclusive else _shift(out, self.axis, -d)

    # Product rules. With d = +1 (forward) or -1 (reverse) and E the exclusive running product,
    # d y_i / d x_k = E_k * prod(x strictly between k and i, plus x_i when inclusive); the
    # sums over i (vjp) or k (jvp) are first-order linear recurrences, solved by doubling in
    # O(n log n) without dividing by x, so zeros are exact.
    def _direction(self) -> int:
        return -1 if self.reverse else 1

    def _prod_vjp(self, x: Array, g: Array) -> Array:
        d = self._direction()
        before = apply(Scan("prod", self.axis, self.reverse, False), x)
        start = g if self.inclusive else _shift(g, self.axis, d)
        later = _recurrence(_shift(x, self.axis, d), start, self.axis, d)
        return binary.multiply(before, later)

    def _prod_jvp(self, x: Array, t: Array) -> Array:
        d = self._direction()
        before = apply(Scan("prod", self.axis, self.reverse, False), x)
        total = _recurrence(x, binary.multiply(t, before), self.axis, -d)
        return total if self.inclusive else _shift(total, self.axis, -d)

    def _split_log(self, v: Array) -> tuple[Array, Array]:
        """log(max(v, 0)) and log(max(-v, 0)): a signed value in log space, two parts."""
        return unary.log(binary.maximum(v, 0)), unary.log(binary.maximum(unary.negative(v), 0))

    def _logaddexp_vjp(self, x: Array, g: Array, y: Array) -> Array:
        # d y_i / d x_k = exp(x_k - y_i): grad_k = sum_i g_i exp(x_k - y_i), accumulated in
        # log space (opposite direction) so that no exp overflows.

        back = Scan("logaddexp", self.axis, not self.reverse, self.inclusive)
        pos, neg = self._split_log(g)
        pos_sum = apply(back, binary.subtract(pos, y))
        neg_sum = apply(back, binary.subtract(neg, y))
        return binary.subtract(unary.exp(binary.add(x, pos_sum)), unary.exp(binary.add(x, neg_sum)))

    def _logaddexp_jvp(self, x: Array, t: Array, y: Array) -> Array:
        pos, neg = self._split_log(t)
        pos_sum, neg_sum = apply(self, binary.add(x, pos)), apply(self, binary.add(x, neg))
        return binary.subtract(unary.exp(binary.subtract(pos_sum, y)),
                               unary.exp(binary.subtract(neg_sum, y)))


def _shift(v: Array, axis: int, by: int) -> Array:
    """out[k] = v[k + by] along `axis`, zero where k + by is outside the axis."""
    n = v.shape[axis]
    if abs(by) >= n:
        return creation.zeros_like(v)
    index = [slice(None)] * v.ndim
    index[axis] = slice(by, None) if by > 0 else slice(0, n + by)
    widths = [(0, 0)] * v.ndim
    widths[axis] = (0, by) if by > 0 else (-by, 0)
    return join.pad(v[tuple(index)], widths)


def _recurrence(a: Array, b: Array, axis: int, step: int) -> Array:
    """The solution s of s[k] = b[k] + a[k] * s[k + step] along `axis` (s is 0 outside), by
    recursive doubling: ceil(log2 n) rounds of shifted products."""
    reach = 1
    while reach < a.shape[axis]:
        b = binary.add(b, binary.multiply(a, _shift(b, axis, reach * step)))
        a = binary.multiply(a, _shift(a, axis, reach * step))
        reach *= 2
    return b


def _scan(op: str, kind: str, a: Any, axis: int | None, reverse: bool, inclusive: bool,
          stream: Any, dtype: Any = None) -> Array:
    reverse, inclusive = bool_flag(reverse, op, "reverse"), bool_flag(inclusive, op, "inclusive")
    s = to_stream(stream)
    a = as_array(a, op)
    if dtype is not None:
        a = unary.astype(a, dt.to_dtype(dtype, op), stream=s)
    if kind == "logaddexp" and a.dtype is dt.complex64:
        return _complex_logcumsumexp(a, axis, reverse, inclusive, s)
    if kind == "logaddexp" and not a.dtype.is_floating:
        a = unary.astype(a, dt.float32, stream=s)
    if kind in ("max", "min") and a.dtype is dt.complex64:
        raise DtypeError(f"{op}: complex64 has no ordering")
    if axis is None:
        a, ax = shape_ops.reshape(a, (a.size,), stream=s), 0
    else:
        if a.ndim == 0:
            raise ValueError(f"{op}: axis {axis} is out of bounds for an array with 0 dimensions")
        ax = normalize_axis(axis, a.ndim, op)
    return record1(Scan(kind, ax, reverse, inclusive), (a,), s)




def _complex_logcumsumexp(a: Array, axis: int | None, reverse: bool, inclusive: bool,
                          s: Any) -> Array:
    """log(cumsum(exp(a))) of complex `a` (MLX takes complex here), shifted by the largest
    real part for range; the imaginary part is the principal branch of the log."""
    if axis is None:
        a, axis = shape_ops.reshape(a, (a.size,), stream=s), 0
    real = complex_parts.real(a, stream=s)
    shift = unary.stop_gradient(reduction.max(real, axis, True, stream=s))
    shift = comparison.where(nonfinite.isfinite(shift), shift, 0.0, stream=s)
    summed = cumsum(unary.exp(binary.subtract(a, shift, stream=s), stream=s), axis,
                    reverse=reverse, inclusive=inclusive, stream=s)
    return binary.add(unary.log(summed, stream=s), shift, stream=s)


def cumsum(a: Any, /, axis: int | None = None, *, reverse: bool = False,
           inclusive: bool = True, dtype: Any = None, stream: Any = None) -> Array:
    """Cumulative sum along `axis` (bool sums in int32).

    Args:
        a: the input array.
        axis: the axis to scan; None scans the flattened array.
        reverse: scan from the end of the axis towards its start.
        inclusive: output i includes input i; otherwise the scan starts from 0.
        dtype: if given, `a` is cast to it before the scan.
        stream: the stream or device to run on.

    Returns:
        An array of the scanned shape.

    Raises:
        ValueError: if `axis` is out of range.
        TypeError: if `reverse` or `inclusive` is not a bool.

    Example:
        >>> import nuvec as mx
        >>> mx.cumsum(mx.array([1, 2, 3])).tolist()
        [1, 3, 6]
    """
    return _scan("cumsum", "sum", a, axis, reverse, inclusive, stream, dtype)


def cumprod(a: Any, /, axis: int | None = None, *, reverse: bool = False,
            inclusive: bool = True, dtype: Any = None, stream: Any = None) -> Array:
    """Cumulative product along `axis` (see `cumsum` for the arguments).

    The derivative is exact at zeros (no division by `a`).

    Args:
        a, axis, reverse, inclusive, dtype, stream: as `cumsum`.

    Returns:
        An array of the scanned shape.

    Raises:
        ValueError: if `axis` is out of range.

    Example:
        >>> import nuvec as mx
        >>> mx.cumprod(mx.array([1, 2, 3])).tolist()
        [1, 2, 6]
    """
    return _scan("cumprod", "prod", a, axis, reverse, inclusive, stream, dtype)


def cummax(a: Any, /, axis: int | None = None, *, reverse: bool = False,
           inclusive: bool = True, stream: Any = None) -> Array:
    """Running maximum along `axis` (see `cumsum`); an exclusive scan starts from the
    dtype's lowest value. The cotangent of each output goes to the inputs equal to it within its
    window, split equally among ties.

    Args:
        a, axis, reverse, inclusive, stream: as `cumsum`.

    Returns:
        An array of the scanned shape.

    Raises:
        ValueError: if `axis` is out of range.
        TypeError: for complex input.

    Example:
        >>> import nuvec as mx
        >>> mx.cummax(mx.array([1, 3, 2])).tolist()
        [1, 3, 3]
    """
    return _scan("cummax", "max", a, axis, reverse, inclusive, stream)


def cummin(a: Any, /, axis: int | None = None, *, reverse: bool = False,
           inclusive: bool = True, stream: Any = None) -> Array:
    """Running minimum along `axis` (see `cumsum`); an exclusive scan starts from the
    dtype's highest value. The cotangent of each output goes to the inputs equal to it within its
    window, split equally among ties.

    Args:
        a, axis, reverse, inclusive, stream: as `cumsum`.

    Returns:
        An array of the scanned shape.

    Raises:
        ValueError: if `axis` is out of range.
        TypeError: for complex input.

    Example:
        >>> import nuvec as mx
        >>> mx.cummin(mx.array([3, 1, 2])).tolist()
        [3, 1, 1]
    """
    return _scan("cummin", "min", a, axis, reverse, inclusive, stream)


def logcumsumexp(a: Any, /, axis: int | None = None, *, reverse: bool = False,
                 inclusive: bool = True, stream: Any = None) -> Array:
    """Running `log(sum(exp(a)))` along `axis`, computed stably (see `cumsum`); integer
    inputs compute in float32 and an exclusive scan starts from -inf.

    Args:
        a, axis, reverse, inclusive, stream: as `cumsum`.

    Returns:
        An array of the scanned shape.

    Raises:
        ValueError: if `axis` is out of range.
        TypeError: for complex input.

    Example:
        >>> import nuvec as mx
        >>> mx.logcumsumexp(mx.array([0.0, 0.0])).tolist()
        [0.0, 0.6931471824645996]
    """
    return _scan("logcumsumexp", "logaddexp", a, axis, reverse, inclusive, stream)


def diff(a: Any, /, n: int = 1, axis: int = -1, *, stream: Any = None) -> Array:
    """The `n`-th discrete difference along `axis`: `a[1:] - a[:-1]`, `n` times (for bools
    `a[1:] != a[:-1]`, as in NumPy and MLX).

    Args:
        a: the input array, of at least one dimension.
        n: how many times to difference (0 gives `a`; from the axis's length on, the axis is
            empty).
        axis: the axis to difference along.
        stream: the stream or device to run on.

    Returns:
        An array whose `axis` is `n` shorter (at least 0).

    Raises:
        ValueError: if `n` is negative or `axis` is out of range.

    Example:
        >>> import nuvec as mx
        >>> mx.diff(mx.array([1, 4, 9, 16])).tolist()
        [3, 5, 7]
    """
    a = as_array(a, "diff")
    count = index_int(n, "diff", "n", low=0)
    if a.ndim == 0:
        raise ValueError("diff: expected an array of at least 1 dimension, got shape ()")
    ax = normalize_axis(axis, a.ndim, "diff")
    s = to_stream(stream)
    ones = (1,) * a.ndim
    for _ in range(min(count, a.shape[ax])):
        start, stop = [0] * a.ndim, list(a.shape)
        start[ax], stop[ax] = 1, a.shape[ax] - 1
        later = slicing.static_slice(a, tuple(start), a.shape, ones, s)
        earlier = slicing.static_slice(a, (0,) * a.ndim, tuple(stop), ones, s)
        a = (comparison.not_equal(later, earlier, stream=s) if a.dtype is dt.bool_
             else binary.subtract(later, earlier, stream=s))
    return a
