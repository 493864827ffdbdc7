"""The namespace's `softmax` and `logsumexp`, over any axes (and the `Array.logsumexp` method).

Both record the fused last-axis nodes of `nuvec.fast.softmax` (no primitive of their own),
moving the reduced axes to the end and merging them into one (`reduction.to_rows`).
"""

from __future__ import annotations

from typing import Any

from nuvec import ops
from nuvec.fast.base import one
from nuvec.fast.softmax import LOGSUMEXP, SOFTMAX
from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.graph.device import Stream, to_stream
from nuvec.ops.arguments import as_array, bool_flag, fresh, normalize_axes
from nuvec.ops.families import kept_shape, squeezed_shape
from nuvec.ops.methods import reduction_method
from nuvec.ops.reduction import Axis, at_least_float, check_nonempty, from_rows, to_rows
from nuvec.ops.shape import reshape
from nuvec.ops.unary import astype

__all__ = ["logsumexp", "softmax"]


def _float_input(op: str, a: Any, s: Stream) -> Array:
    """`a` in an inexact dtype (float32 for integers and bools)."""
    a = as_array(a, op)
    return a if a.dtype is dt.complex64 else astype(a, at_least_float(a.dtype), stream=s)


def _shifted_exp(a: Array, axes: tuple[int, ...], s: Stream) -> tuple[Array, Array]:
    """`exp(a - m)` and `m`, the largest real part over `axes` (kept): the complex path, in
    ordinary ops (a real shift leaves the imaginary parts, so no branch of the log moves)."""
    shift = ops.stop_gradient(ops.max(ops.real(a, stream=s), axis=axes, keepdims=True,
                                      stream=s), stream=s)
    return ops.exp(ops.subtract(a, shift, stream=s), stream=s), shift


def logsumexp(
    a: Any, /, axis: Axis = None, keepdims: bool = False, *, stream: Any = None
) -> Array:
    """log(sum(exp(a))) over `axis`, computed stably (the max is subtracted first).

    Integers compute in float32; float16/bfloat16 accumulate in float32. If the maximum is
    ±inf the result is that maximum. Records `nuvec.fast`'s fused last-axis node; a complex
    input (as MLX) is shifted by its largest real part and composed of ordinary ops.

    Args:
        a: the input.
        axis: an axis, a sequence of axes, or None for all.
        keepdims: keep the reduced axes as size-1 dimensions.

    Returns:
        The log-sum-exps, in `a`'s dtype (float32 for integer input).

    Raises:
        ValueError: if a reduced axis is empty, or an axis is out of range or repeated.

    Example:
        >>> import nuvec as mx
        >>> round(mx.logsumexp(mx.array([0.0, 0.0])).item(), 4)
        0.6931
    """
    s = to_stream(stream)
    a, keepdims = _float_input("logsumexp", a, s), bool_flag(keepdims, "logsumexp", "keepdims")
    axes = normalize_axes(axis, a.ndim, "logsumexp")
    if not axes:
        return fresh(a)
    check_nonempty("logsumexp", a, axes)
    if a.dtype is dt.complex64:
        exps, shift = _shifted_exp(a, axes, s)
        total = ops.sum(exps, axis=axes, keepdims=True, stream=s)
        out = ops.add(ops.log(total, stream=s), shift, stream=s)
        return out if keepdims else ops.squeeze(out, axes, stream=s)
    rows, _ = to_rows(a, axes, s)
    out = one(LOGSUMEXP, [rows], s)
    shape = kept_shape(a.shape, axes) if keepdims else squeezed_shape(a.shape, axes)
    return reshape(out, shape, stream=s)


def softmax(
    a: Any, /, axis: Axis = None, *, precise: bool = False, stream: Any = None
) -> Array:
    """exp(a) / sum(exp(a)) over `axis` (all axes when None), computed stably.

    Integers compute in float32. Records `nuvec.fast`'s fused last-axis node, which always
    accumulates float16/bfloat16 in float32, so `precise=True` (MLX: accumulate half types in
    float32) changes nothing. A complex input (as MLX) is shifted by its largest real part and
    composed of ordinary ops.

    Args:
        a: the input.
        axis: an axis, a sequence of axes, or None for all.
        precise: accepted for MLX compatibility (half types are always accumulated in float32).

    Returns:
        An array of `a`'s shape and dtype (float32 for integer input).

    Raises:
        ValueError: if an axis is out of range or repeated.

    Example:
        >>> import nuvec as mx
        >>> mx.softmax(mx.array([0.0, 0.0])).tolist()
        [0.5, 0.5]
    """
    s = to_stream(stream)
    a = _float_input("softmax", a, s)
    bool_flag(precise, "softmax", "precise")  # half types always accumulate in float32
    axes = normalize_axes(axis, a.ndim, "softmax")
    if a.size == 0:  # no groups to normalize
        return fresh(a)
    if a.dtype is dt.complex64:
        exps, _ = _shifted_exp(a, axes, s)
        return ops.divide(exps, ops.sum(exps, axis=axes, keepdims=True, stream=s), stream=s)
    rows, perm = to_rows(a, axes, s)
    out = one(SOFTMAX, [rows], s)
    return from_rows(out, a, perm, s)


reduction_method(logsumexp)  # `a.logsumexp(axis, keepdims)`, as the other reductions' methods
