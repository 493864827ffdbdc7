"""fp8 (e4m3) conversions as MLX's `to_fp8`/`from_fp8`: bytes in uint8 arrays, composed.

e4m3 has a sign bit, 4 exponent bits (bias 7) and 3 mantissa bits; 0x7F/0xFF are NaN and there
is no infinity. `to_fp8` rounds to nearest even and saturates at +-448, as MLX's CUDA
conversion (`__nv_cvt_float_to_fp8` with saturation) does.
"""

from __future__ import annotations

from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.graph.device import stream as stream_scope
from nuvec.graph.device import to_stream
from nuvec.graph.dtypes import DtypeError
from nuvec.ops import binary, comparison, nonfinite, rounding, unary
from nuvec.ops.arguments import as_array

__all__ = ["from_fp8", "to_fp8"]

_MAX = 448.0


def to_fp8(x: Any, *, stream: Any = None) -> Array:
    """`x` rounded to fp8 (e4m3) and returned as its bytes, a uint8 array.

    Args:
        x: a floating-point (or integer) array.
        stream: the stream (or device) to record on.

    Returns:
        A uint8 array of `x`'s shape.

    Raises:
        DtypeError: if `x` is complex or bool.

    Example:
        >>> import nuvec as mx
        >>> mx.to_fp8(mx.array([1.0, -2.0, 448.0, 1000.0])).tolist()
        [56, 192, 126, 126]
    """
    x = as_array(x, "to_fp8")
    if x.dtype is dt.complex64 or x.dtype is dt.bool_:
        raise DtypeError(f"to_fp8: expected a real number array, got {x.dtype.name}")
    with stream_scope(to_stream(stream)):
        v = unary.astype(x, dt.float32)
        mag = binary.minimum(unary.abs(v), _MAX)
        # the exponent of the e4m3 bucket, floored at the subnormal exponent -6
        safe = binary.maximum(mag, 2.0**-10)
        exp = binary.maximum(rounding.floor(unary.log2(safe)), -6.0)
        q = rounding.round(mag / binary.power(2.0, exp - 3.0))  # round half to even: 0..16 units
        code = (exp + 6.0) * 8.0 + q  # q == 16 rolls into the next exponent by itself
        code = comparison.where(mag == 0, 0.0, code)
        negative = (v < 0) | ((v == 0) & (unary.reciprocal(v) < 0))  # -0.0 keeps its sign
        code = comparison.where(negative, code + 128.0, code)
        code = comparison.where(nonfinite.isnan(v), 127.0, code)
        return unary.astype(code, dt.uint8)


def from_fp8(x: Any, dtype: Any = dt.bfloat16, *, stream: Any = None) -> Array:
    """fp8 (e4m3) bytes in a uint8 array as floating-point values of `dtype`.

    Args:
        x: a uint8 array of e4m3 bytes.
        dtype: the floating-point dtype of the result; default bfloat16.
        stream: the stream (or device) to record on.

    Returns:
        An array of `x`'s shape and `dtype`.

    Raises:
        DtypeError: if `x` is not uint8 or `dtype` is not a floating-point dtype.

    Example:
        >>> import nuvec as mx
        >>> mx.from_fp8(mx.array([56, 192, 126], mx.uint8), mx.float32).tolist()
        [1.0, -2.0, 448.0]
    """
    x = as_array(x, "from_fp8")
    out = dt.to_dtype(dtype, "from_fp8")
    if x.dtype is not dt.uint8:
        raise DtypeError(f"from_fp8: expected a uint8 array of fp8 bytes, got {x.dtype.name}")
    if not out.is_floating:
        raise DtypeError(f"from_fp8: dtype must be a floating-point dtype, got {out.name}")
    with stream_scope(to_stream(stream)):
        bits = unary.astype(x, dt.int32)
        sign = comparison.where(bits >= 128, -1.0, 1.0)
        exp = unary.astype((bits // 8) % 16, dt.float32)
        man = unary.astype(bits % 8, dt.float32)
        normal = (1.0 + man / 8.0) * binary.power(2.0, exp - 7.0)
        value = comparison.where(exp == 0, man / 8.0 * 2.0**-6, normal)
        value = comparison.where(bits % 128 == 127, float("nan"), sign * value)
        return unary.astype(value, out)
