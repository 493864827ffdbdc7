"""Statistics composed from reductions: mean, var, std, median and count_nonzero.

No primitives of their own: their derivatives and batching come from the reductions, casts and
elementwise operations they are built from (median sorts, as MLX does).
"""

from __future__ import annotations

from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.ops.arguments import as_array, bool_flag, index_int
from nuvec.ops.arguments import normalize_axes
from nuvec.ops.binary import add, multiply, subtract
from nuvec.ops.comparison import where
from nuvec.ops.complex_parts import conj, real
from nuvec.ops.indexing import take
from nuvec.ops.nonfinite import isnan
from nuvec.ops.reduction import Axis, at_least_float, reduced_size
from nuvec.ops.reduction import sum as reduce_sum
from nuvec.ops.shape import expand_dims, reshape, transpose
from nuvec.ops.sorting import sort
from nuvec.ops.unary import astype, sqrt

__all__ = ["mean", "var", "std", "median", "count_nonzero"]


def mean(a: Any, /, axis: Axis = None, keepdims: bool = False, *, stream: Any = None) -> Array:
    """Arithmetic mean over `axis`: `sum / n` (integers give float32; NaN for an empty axis).

    Args:
        a, axis, keepdims: as `sum`.
        stream: the stream (or device) to record on.

    Returns:
        The means (float32 for integer and bool input); float16 and bfloat16 input
        accumulates in float32 and returns its own dtype.

    Raises:
        ValueError: if an axis is out of range or repeated.

    Example:
        >>> import nuvec as mx
        >>> mx.mean(mx.array([1, 2, 3, 4])).item()
        2.5
    """
    a = as_array(a, "mean")
    axes = normalize_axes(axis, a.ndim, "mean")
    x = _widened(a, stream)
    n = reduced_size(x, axes)
    total = reduce_sum(x, axes, keepdims, stream=stream)
    out = at_least_float(x.dtype)
    if total.dtype is not out:
        total = astype(total, out, stream=stream)
    return _narrowed(multiply(total, 1.0 / n if n else float("inf"), stream=stream), a, stream)


_HALF = (dt.float16, dt.bfloat16)


def _widened(a: Array, stream: Any) -> Array:
    """float16/bfloat16 input as float32: the statistics accumulate in float32 (as NumPy and
    PyTorch; MLX accumulates in the input dtype and overflows where the result fits)."""
    return astype(a, dt.float32, stream=stream) if a.dtype in _HALF else a


def _narrowed(result: Array, a: Array, stream: Any) -> Array:
    """`result` back in `a`'s dtype when `_widened` changed it."""
    return astype(result, a.dtype, stream=stream) if a.dtype in _HALF else result


def _check_ddof(ddof: Any, op: str) -> int:
    return index_int(ddof, op, "ddof", -(2**31), 2**31 - 1)  # MLX's ddof is an int32


def var(
    a: Any, /, axis: Axis = None, keepdims: bool = False, ddof: int = 0, *, stream: Any = None
) -> Array:
    """Variance over `axis`: `sum((a - mean)**2) / (n - ddof)` (inf/NaN when n <= ddof).

    Args:
        a, axis, keepdims: as `sum`.
        ddof: the delta degrees of freedom subtracted from the count.
        stream: the stream (or device) to record on.

    Returns:
        The variances (float32 for integer and bool input); float16 and bfloat16 input
        accumulates in float32 and returns its own dtype.

    Raises:
        ValueError: if an axis is out of range or repeated.

    Example:
        >>> import nuvec as mx
        >>> round(mx.var(mx.array([1.0, 2.0, 3.0, 4.0]), ddof=1).item(), 4)
        1.6667
    """
    a = as_array(a, "var")
    axes = normalize_axes(axis, a.ndim, "var")
    ddof = _check_ddof(ddof, "var")
    return _narrowed(_variance(_widened(a, stream), axes, keepdims, ddof, stream), a, stream)


def _variance(a: Array, axes: tuple[int, ...], keepdims: bool, ddof: int, stream: Any) -> Array:
    centred = subtract(a, mean(a, axes, True, stream=stream), stream=stream)
    if centred.dtype is dt.complex64:  # |x - mean|^2: the variance of complex data is real
        squares = real(multiply(centred, conj(centred, stream=stream), stream=stream),
                       stream=stream)
    else:
        squares = multiply(centred, centred, stream=stream)
    total = reduce_sum(squares, axes, keepdims, stream=stream)
    denominator = max(reduced_size(a, axes) - int(ddof), 0)
    return multiply(total, 1.0 / denominator if denominator else float("inf"), stream=stream)


def std(
    a: Any, /, axis: Axis = None, keepdims: bool = False, ddof: int = 0, *, stream: Any = None
) -> Array:
    """Standard deviation over `axis`: `sqrt(var(a, axis, keepdims, ddof))`.

    Args:
        a, axis, keepdims: as `sum`.
        ddof: the delta degrees of freedom subtracted from the count.
        stream: the stream (or device) to record on.

    Returns:
        The standard deviations (float32 for integer and bool input); float16 and bfloat16 input
        accumulates in float32 and returns its own dtype.

    Raises:
        ValueError: if an axis is out of range or repeated.

    Example:
        >>> import nuvec as mx
        >>> mx.std(mx.array([1.0, 3.0])).item()
        1.0
    """
    a = as_array(a, "std")
    axes = normalize_axes(axis, a.ndim, "std")
    ddof = _check_ddof(ddof, "std")
    variance = _variance(_widened(a, stream), axes, keepdims, ddof, stream)
    return _narrowed(sqrt(variance, stream=stream), a, stream)


def count_nonzero(
    a: Any, /, axis: Axis = None, keepdims: bool = False, *, stream: Any = None
) -> Array:
    """Number of nonzero (NaN counts as nonzero) elements over `axis`, as int32.

    Args:
        a, axis, keepdims: as `sum`.
        stream: the stream (or device) to record on.

    Returns:
        The int32 counts.

    Raises:
        ValueError: if an axis is out of range or repeated.

    Example:
        >>> import nuvec as mx
        >>> mx.count_nonzero(mx.array([0, 3, 0, 1])).item()
        2
    """
    a = as_array(a, "count_nonzero")
    normalize_axes(axis, a.ndim, "count_nonzero")
    return reduce_sum(astype(a, dt.bool_, stream=stream), axis, keepdims, stream=stream)


def median(a: Any, /, axis: Axis = None, keepdims: bool = False, *, stream: Any = None) -> Array:
    """Median over `axis` (mean of the two middle values for an even count; float result).

    A NaN in a reduced slice makes its median NaN, as in NumPy.

    Args:
        a, axis, keepdims: as `sum`.
        stream: the stream (or device) to record on.

    Returns:
        The medians (float32 for integer and bool input).

    Raises:
        ValueError: if an axis is out of range or repeated, or the reduced size is 0.

    Example:
        >>> import nuvec as mx
        >>> mx.median(mx.array([3.0, 1.0, 4.0, 2.0])).item()
        2.5
    """
    a, keepdims = as_array(a, "median"), bool_flag(keepdims, "median", "keepdims")
    axes = normalize_axes(axis, a.ndim, "median")
    n = reduced_size(a, axes)
    if n == 0:
        raise ValueError(f"median: cannot take the median of an empty axis, got shape {a.shape}")
    keep = [i for i in range(a.ndim) if i not in axes]
    moved = transpose(a, keep + list(axes), stream=stream)
    flat = reshape(moved, (*moved.shape[: len(keep)], n), stream=stream)
    ordered = sort(flat, axis=-1, stream=stream)
    out_dtype = at_least_float(a.dtype)
    middle = astype(take(ordered, n // 2, axis=-1, stream=stream), out_dtype, stream=stream)
    if n % 2 == 0:
        lower = astype(take(ordered, n // 2 - 1, axis=-1, stream=stream), out_dtype, stream=stream)
        middle = multiply(add(middle, lower, stream=stream), 0.5, stream=stream)
    if a.dtype.is_floating:  # NaNs sort last: one anywhere makes the median NaN (NumPy)

        last = take(ordered, n - 1, axis=-1, stream=stream)
        middle = where(isnan(last, stream=stream), last, middle, stream=stream)
    return expand_dims(middle, list(axes), stream=stream) if keepdims and axes else middle
