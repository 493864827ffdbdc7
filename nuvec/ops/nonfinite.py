"""Non-finite values: the tests `isnan`, `isinf`, `isposinf`, `isneginf`, `isfinite` and the
replacement `nan_to_num`, composed from comparisons and `where` (no primitives of their own).
"""

from __future__ import annotations

import math
from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array
from nuvec.graph.device import to_stream
from nuvec.ops import binary, comparison, complex_parts, unary
from nuvec.ops.arguments import StreamLike, as_array, fresh, real_number

__all__ = ["isnan", "isinf", "isposinf", "isneginf", "isfinite", "nan_to_num"]


def isnan(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Elementwise test for NaN (always False for integers and bools).

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        A bool array.

    Example:
        >>> import nuvec as mx
        >>> mx.isnan(mx.array([1.0, mx.nan])).tolist()
        [False, True]
    """
    a = as_array(a, "isnan")
    return comparison.not_equal(a, a, stream=stream)


def isinf(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Elementwise test for positive or negative infinity (complex: either part).

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        A bool array.

    Example:
        >>> import nuvec as mx
        >>> mx.isinf(mx.array([1.0, float('inf'), -float('inf')])).tolist()
        [False, True, True]
    """
    a = as_array(a, "isinf")
    if not a.dtype.is_inexact:
        return comparison.not_equal(a, a, stream=stream)
    return comparison.equal(unary.abs(a, stream=stream), math.inf, stream=stream)


def isposinf(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Elementwise test for positive infinity.

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        A bool array.

    Raises:
        TypeError: for complex input.

    Example:
        >>> import nuvec as mx
        >>> mx.isposinf(mx.array([1.0, float('inf'), -float('inf')])).tolist()
        [False, True, False]
    """
    return _signed_inf("isposinf", a, math.inf, stream)


def isneginf(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Elementwise test for negative infinity.

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        A bool array.

    Raises:
        TypeError: for complex input.

    Example:
        >>> import nuvec as mx
        >>> mx.isneginf(mx.array([1.0, float('inf'), -float('inf')])).tolist()
        [False, False, True]
    """
    return _signed_inf("isneginf", a, -math.inf, stream)


def _signed_inf(name: str, a: Any, value: float, stream: StreamLike) -> Array:
    a = as_array(a, name)
    if a.dtype is dt.complex64:
        raise DtypeError(f"{name}: not supported for complex64 arrays")
    if not a.dtype.is_floating:
        return comparison.not_equal(a, a, stream=stream)
    return comparison.equal(a, value, stream=stream)


def isfinite(a: Any, /, *, stream: StreamLike = None) -> Array:
    """Elementwise test for finite values (neither infinite nor NaN; always True for integers).

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        A bool array.

    Example:
        >>> import nuvec as mx
        >>> mx.isfinite(mx.array([1.0, float('inf'), float('nan')])).tolist()
        [True, False, False]
    """
    a = as_array(a, "isfinite")
    if not a.dtype.is_inexact:
        return comparison.equal(a, a, stream=stream)
    # |a| < inf is False for inf and NaN alike (complex: either part)
    return comparison.less(unary.abs(a, stream=stream), math.inf, stream=stream)


def nan_to_num(
    a: Any, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None,
    *, stream: StreamLike = None,
) -> Array:
    """Replaces NaN with `nan` and infinities with `posinf`/`neginf`.

    Args:
        a: input array; integer and boolean arrays are returned unchanged.
        nan: the value for NaN.
        posinf: the value for +inf; default the largest finite value of the dtype.
        neginf: the value for -inf; default the lowest finite value of the dtype.
        stream: the stream (or device) to record on.

    Returns:
        An array of `a`'s dtype without NaN or infinities.

    Raises:
        TypeError: if a replacement value is not a real number.

    Example:
        >>> import nuvec as mx
        >>> mx.nan_to_num(mx.array([mx.nan, 1.0])).tolist()
        [0.0, 1.0]
    """
    stream = to_stream(stream)  # checked even when nothing is recorded
    nan = real_number(nan, "nan_to_num", "nan", finite=False)
    if posinf is not None:
        posinf = real_number(posinf, "nan_to_num", "posinf", finite=False)
    if neginf is not None:
        neginf = real_number(neginf, "nan_to_num", "neginf", finite=False)
    a = as_array(a, "nan_to_num")
    if not a.dtype.is_inexact:
        return fresh(a)
    s = to_stream(stream)
    if a.dtype is dt.complex64:
        parts = [nan_to_num(f(a, stream=s), nan, posinf, neginf, stream=s)
                 for f in (complex_parts.real, complex_parts.imag)]
        real, imag = (unary.astype(p, dt.complex64, stream=s) for p in parts)
        return binary.add(real, binary.multiply(imag, 1j, stream=s), stream=s)
    info = dt.finfo(a.dtype)
    out = comparison.where(isnan(a, stream=s), float(nan), a, stream=s)
    out = comparison.where(comparison.equal(a, math.inf, stream=s),
                           float(info.max if posinf is None else posinf), out, stream=s)
    return comparison.where(comparison.equal(a, -math.inf, stream=s),
                            float(info.min if neginf is None else neginf), out, stream=s)
