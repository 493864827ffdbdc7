"""Elementwise rounding: `floor`, `ceil`, `trunc` and `round` (with `decimals`).

The primitives are piecewise constant (`Flat`: no gradient); integer and boolean inputs are
returned unchanged; `round` rounds a complex value's parts, the others reject complex input.
"""

from __future__ import annotations

import math
from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.caller import name_function
from nuvec.graph.array import Array, record1
from nuvec.graph.device import to_stream
from nuvec.ops import binary, unary
from nuvec.ops.arguments import StreamLike, as_array, fresh, index_int
from nuvec.ops.families import Unary, flat_primitive

__all__ = ["floor", "ceil", "round", "trunc"]

Floor = flat_primitive("Floor", "Largest integer <= x.", __name__)
Ceil = flat_primitive("Ceil", "Smallest integer >= x.", __name__)
Round = flat_primitive("Round", "Nearest integer, halves to even.", __name__)
Trunc = flat_primitive("Trunc", "Integer part (rounds toward zero).", __name__)

FLOOR, CEIL, ROUND, TRUNC = Floor(), Ceil(), Round(), Trunc()


def _rounding(name: str, primitive: Unary, a: Any, stream: StreamLike) -> Array:
    stream = to_stream(stream)  # checked even when nothing is recorded
    a = as_array(a, name)
    if a.dtype is dt.complex64 and primitive is not ROUND:  # round takes the parts (MLX's)
        raise DtypeError(f"{name}: not supported for complex64 arrays")
    if not a.dtype.is_inexact:
        return fresh(a)
    return record1(primitive, (a,), to_stream(stream))


def _rounding_function(name: str, primitive: Unary, summary: str, example: list[float]):
    """The public rounding op `name(a, /, *, stream=None)` recording `primitive`."""

    def op(a: Any, /, *, stream: StreamLike = None) -> Array:
        return _rounding(name, primitive, a, stream)

    name_function(op, name)
    op.__doc__ = f"""{summary}; integer and boolean arrays are returned unchanged.

    Args:
        a: input array or scalar.
        stream: the stream (or device) to record on.

    Returns:
        The rounded values, of `a`'s dtype.

    Raises:
        TypeError: for complex input.

    Example:
        >>> import nuvec as mx
        >>> mx.{name}(mx.array([-1.5, 1.5])).tolist()
        {example}
    """
    return op


floor = _rounding_function("floor", FLOOR, "Elementwise floor (toward -inf)", [-2.0, 1.0])
ceil = _rounding_function("ceil", CEIL, "Elementwise ceiling (toward +inf)", [-1.0, 2.0])
trunc = _rounding_function("trunc", TRUNC, "Elementwise rounding toward zero", [-1.0, 1.0])


def round(a: Any, /, decimals: int = 0, *, stream: StreamLike = None) -> Array:
    """Rounds to `decimals` decimal places, halves to even (as NumPy and MLX).

    With `decimals != 0` the value is scaled by 10**decimals, rounded and scaled back (integer
    inputs compute in float32 and are cast back, so `round(1234, -2)` is 1200). A complex
    value has its real and imaginary parts rounded.

    Args:
        a: input array.
        decimals: number of decimal places (negative: to tens, hundreds, ...).
        stream: the stream (or device) to record on.

    Returns:
        The rounded values, of `a`'s dtype.

    Raises:
        TypeError: for a non-integer `decimals`.

    Example:
        >>> import nuvec as mx
        >>> mx.round(mx.array([1.25, 2.5]), 1).tolist()
        [1.2000000476837158, 2.5]
    """
    decimals = index_int(decimals, "round", "decimals", -(2**31), 2**31 - 1)
    a = as_array(a, "round")
    if decimals == 0:
        return _rounding("round", ROUND, a, stream)
    s = to_stream(stream)
    x = a if a.dtype is dt.complex64 else unary.float_input(a, "round", s)
    # past float64's range the scale is inf or 0 and the result NaN, as in MLX and NumPy
    scale = 10.0**decimals if decimals <= 308 else math.inf
    inverse = 1.0 / scale if scale else math.inf
    out = binary.multiply(_rounding("round", ROUND, binary.multiply(x, scale, stream=s), s),
                        inverse, stream=s)
    return unary.astype(out, a.dtype, stream=s)
