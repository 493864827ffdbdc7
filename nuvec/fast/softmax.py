"""Fused softmax and log-sum-exp over the last axis, with closed-form derivatives.

`nuvec.ops.reduction`'s `softmax`/`logsumexp` record these for a reduction over the last axis;
`softmax_graph`/`logsumexp_graph` are the compositions other fallbacks reuse.
"""

from __future__ import annotations

from typing import Any

from nuvec.graph.array import Array
from nuvec.graph.device import stream as stream_context, to_stream
from nuvec.fast.base import FastOp, floating, mx, one, wide
from nuvec.ops.arguments import as_array, fresh

__all__ = ["softmax", "logsumexp"]


def softmax_graph(x: Array) -> Array:
    """Softmax over the last axis from ordinary operations, in float32 at least."""
    ops = mx()
    xf = wide(x)
    m = ops.stop_gradient(ops.max(xf, axis=-1, keepdims=True))
    e = ops.exp(ops.subtract(xf, m))
    return ops.astype(ops.divide(e, ops.sum(e, axis=-1, keepdims=True)), x.dtype)


def logsumexp_graph(x: Array) -> Array:
    """`log(sum(exp(x)))` over the last axis (kept as size 1) from ordinary operations."""
    ops = mx()
    m = ops.stop_gradient(ops.max(x, axis=-1, keepdims=True))
    out = ops.add(ops.log(ops.sum(ops.exp(ops.subtract(x, m)), axis=-1, keepdims=True)), m)
    return ops.where(ops.equal(ops.abs(m), float("inf")), m, out)


class Softmax(FastOp):
    """`(x)`: softmax over the last axis, accumulated in float32."""

    __slots__ = ()
    op = "softmax"
    cpu_fused = True
    row_wise = True

    def arity(self, inputs):
        return 1

    def fallback(self, inputs):
        return [softmax_graph(inputs[0])]

    def vjp(self, primals, cotangents, argnums, outputs):
        return [_jacobian_product(outputs[0], cotangents[0])]

    def jvp(self, primals, tangents, outputs):
        return [_jacobian_product(outputs[0], tangents[0])]


def _jacobian_product(s: Array, g: Array) -> Array:
    """`J g` for softmax output `s`: J = diag(s) - s s^T is symmetric, so this is also `J^T g`."""
    ops = mx()
    sg = ops.multiply(s, g)
    return ops.subtract(sg, ops.multiply(s, ops.sum(sg, axis=-1, keepdims=True)))


class LogSumExp(FastOp):
    """`(x)`: `log(sum(exp(x)))` over the last axis, which becomes size 1."""

    __slots__ = ()
    op = "logsumexp"
    cpu_fused = True
    row_wise = True

    def arity(self, inputs):
        return 1

    def specs(self, inputs):
        x = inputs[0]
        return [((*x.shape[:-1], 1), x.dtype)]

    def fallback(self, inputs):
        return [logsumexp_graph(inputs[0])]

    def vjp(self, primals, cotangents, argnums, outputs):
        return [mx().multiply(cotangents[0], one(Softmax(), [primals[0]]))]

    def jvp(self, primals, tangents, outputs):
        ops = mx()
        s = one(Softmax(), [primals[0]])
        return [ops.sum(ops.multiply(s, tangents[0]), axis=-1, keepdims=True)]


SOFTMAX, LOGSUMEXP = Softmax(), LogSumExp()


def _input(x: Any, op: str) -> Array:
    x = as_array(x, op)
    if x.ndim == 0:
        raise ValueError(f"{op}: the input needs at least one dimension")
    floating(op, x.dtype)
    return x


def softmax(x: Any, *, stream: Any = None) -> Array:
    """Softmax over the last axis, accumulated in float32 for half types.

    Args:
        x: floating-point input of at least one dimension.
        stream: stream or device.

    Returns:
        An array of `x`'s shape and dtype whose rows sum to 1.

    Raises:
        ValueError: if `x` is 0-d.
        TypeError: if `x` is not floating-point.

    Example:
        >>> import nuvec as mx
        >>> mx.fast.softmax(mx.array([[0.0, 0.0], [1.0, 1.0]])).tolist()
        [[0.5, 0.5], [0.5, 0.5]]
    """
    with stream_context(to_stream(stream)):
        x = _input(x, "softmax")
        if x.size == 0:  # no rows to normalize (the graph's maximum has none to reduce)
            return fresh(x)
        return one(SOFTMAX, [x])


def logsumexp(x: Any, *, stream: Any = None) -> Array:
    """`log(sum(exp(x)))` over the last axis, kept as a size-1 axis.

    Args:
        x: floating-point input of at least one dimension.
        stream: stream or device.

    Returns:
        An array of `x`'s shape with the last axis of size 1, in `x`'s dtype.

    Raises:
        ValueError: if `x` is 0-d or its last axis is empty.
        TypeError: if `x` is not floating-point.

    Example:
        >>> import nuvec as mx
        >>> out = mx.fast.logsumexp(mx.zeros((3, 2)))
        >>> out.shape, round(out[0, 0].item(), 4)
        ((3, 1), 0.6931)
    """
    with stream_context(to_stream(stream)):
        x = _input(x, "logsumexp")
        if x.shape[-1] == 0:
            raise ValueError(f"logsumexp: cannot reduce over an empty last axis, got shape "
                             f"{x.shape}")
        return one(LOGSUMEXP, [x])
