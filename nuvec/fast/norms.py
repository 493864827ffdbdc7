"""Fused normalisations over the last axis: RMS norm, layer norm, residual add + RMS norm.

Their derivatives are dedicated ops (`RmsNormVjp`, `LayerNormVjp`), themselves differentiated
through their fallback graphs (grad of grad).
"""

from __future__ import annotations

from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.graph.caller import public_caller
from nuvec.graph.device import stream as stream_context, to_stream
from nuvec.fast.base import (
    FastOp,
    as_f32_bits,
    check_param,
    floating,
    mx,
    one,
    record_or_fallback,
    wide,
)
from nuvec.ops.arguments import as_array, real_number, scalar_array

__all__ = ["rms_norm", "layer_norm", "add_rms_norm"]


def _param(p: Array, x: Array) -> bool:
    """A scalar or a 1-D parameter of the last axis's size, in `x`'s dtype."""
    return p.dtype is x.dtype and (p.ndim == 0 or (p.ndim == 1 and p.size == x.shape[-1]))


def _like(a: Array, x: Array) -> bool:
    return a.dtype is x.dtype and a.shape == x.shape


def _rsqrt(x: Array) -> Array:
    return mx().divide(1.0, mx().sqrt(x))


def _mean_last(x: Array) -> Array:
    return mx().mean(x, axis=-1, keepdims=True)


def sum_rows(g: Array) -> Array:
    """`g` summed over every axis but the last."""
    if g.ndim <= 1:
        return g
    return mx().sum(g, axis=tuple(range(g.ndim - 1)))


class _Eps(FastOp):
    __slots__ = ("eps",)
    abstract = True

    def __init__(self, eps: float):
        self.eps = as_f32_bits(eps)

    def params(self):
        return (self.eps,)


class RmsNorm(_Eps):
    """`(x, w)`: `x / sqrt(mean(x^2) + eps) * w` over the last axis; `w` 1-D or a scalar 1."""

    __slots__ = ()
    op = "rms_norm"
    cpu_fused = True
    row_wise = True

    def arity(self, inputs):
        return 2

    def valid(self, inputs):
        return all(_param(p, inputs[0]) for p in inputs[1:])

    def fallback(self, inputs):
        ops = mx()
        x, w = inputs
        xf = wide(x)
        n = _rsqrt(ops.add(_mean_last(ops.multiply(xf, xf)), self.eps))
        y = ops.astype(ops.multiply(xf, n), x.dtype)
        return [y if w.ndim == 0 else ops.multiply(y, w)]

    def vjp(self, primals, cotangents, argnums, outputs):
        grads = record_or_fallback(RmsNormVjp(self.eps), [*primals, cotangents[0]])
        return [grads[i] for i in argnums]


class RmsNormVjp(_Eps):
    """`(x, w, g)`: the gradients of `RmsNorm` for `x` and `w`."""

    __slots__ = ()
    op = "rms_norm_vjp"
    cpu_fused = True

    def arity(self, inputs):
        return 3

    def valid(self, inputs):
        x, w, g = inputs
        return _param(w, x) and _like(g, x)

    def specs(self, inputs):
        x, w = inputs[0], inputs[1]
        return [(x.shape, x.dtype), (w.shape, w.dtype)]

    def fallback(self, inputs):
        ops = mx()
        x, w, g = inputs
        n = _rsqrt(ops.add(_mean_last(ops.multiply(x, x)), self.eps))
        n3 = ops.multiply(ops.multiply(n, n), n)
        gw = ops.multiply(g, w)
        t = _mean_last(ops.multiply(gw, x))
        dx = ops.subtract(ops.multiply(gw, n), ops.multiply(ops.multiply(x, t), n3))
        if w.ndim == 0:
            dw = scalar_array(0.0, w.dtype)
        else:
            dw = sum_rows(ops.multiply(g, ops.multiply(x, n)))
        return [dx, dw]


class AddRmsNorm(_Eps):
    """`(x, r, w)`: `h = x + r` and the `RmsNorm` of `h`."""

    __slots__ = ()
    op = "add_rms_norm"
    cpu_fused = True

    def arity(self, inputs):
        return 3

    def valid(self, inputs):
        x, r, w = inputs
        return _like(r, x) and _param(w, x)

    def specs(self, inputs):
        x = inputs[0]
        return [(x.shape, x.dtype), (x.shape, x.dtype)]

    def fallback(self, inputs):
        x, r, w = inputs
        h = mx().add(x, r)
        return [h, one(RmsNorm(self.eps), [h, w])]


class LayerNorm(_Eps):
    """`(x, w, b)`: `(x - mean) / sqrt(var + eps) * w + b` over the last axis."""

    __slots__ = ()
    op = "layer_norm"
    cpu_fused = True
    row_wise = True

    def arity(self, inputs):
        return 3

    def valid(self, inputs):
        return all(_param(p, inputs[0]) for p in inputs[1:])

    def fallback(self, inputs):
        ops = mx()
        x, w, b = inputs
        xf = wide(x)
        xc = ops.subtract(xf, _mean_last(xf))
        v = _mean_last(ops.multiply(xc, xc))
        y = ops.astype(ops.multiply(xc, _rsqrt(ops.add(v, self.eps))), x.dtype)
        if w.ndim != 0:
            y = ops.multiply(y, w)
        if b.ndim != 0:
            y = ops.add(y, b)
        return [y]

    def vjp(self, primals, cotangents, argnums, outputs):
        grads = record_or_fallback(LayerNormVjp(self.eps), [*primals, cotangents[0]])
        return [grads[i] for i in argnums]


class LayerNormVjp(_Eps):
    """`(x, w, b, g)`: the gradients of `LayerNorm` for `x`, `w` and `b`."""

    __slots__ = ()
    op = "layer_norm_vjp"
    cpu_fused = True

    def arity(self, inputs):
        return 4

    def valid(self, inputs):
        x, w, b, g = inputs
        return _param(w, x) and _param(b, x) and _like(g, x)

    def specs(self, inputs):
        return [(a.shape, a.dtype) for a in inputs[:3]]

    def fallback(self, inputs):
        ops = mx()
        x, w, b, g = inputs
        xc = ops.subtract(x, _mean_last(x))
        n = _rsqrt(ops.add(_mean_last(ops.multiply(xc, xc)), self.eps))
        n3 = ops.multiply(ops.multiply(n, n), n)
        wg = ops.multiply(w, g)
        mwg = _mean_last(wg)
        mwgxc = _mean_last(ops.multiply(wg, xc))
        dx = ops.subtract(
            ops.multiply(ops.subtract(wg, mwg), n), ops.multiply(ops.multiply(xc, mwgxc), n3)
        )
        dw = scalar_array(0.0, w.dtype) if w.ndim == 0 else sum_rows(
            ops.multiply(g, ops.multiply(xc, n)))
        db = scalar_array(0.0, b.dtype) if b.ndim == 0 else sum_rows(g)
        return [dx, dw, db]


def _input(x: Any, op: str) -> Array:
    x = as_array(x, op)
    if x.ndim == 0:
        raise ValueError(f"{public_caller(op)}: the input needs at least one dimension, got "
                         f"shape {x.shape}")
    return x


def rms_norm(x: Any, weight: Any, eps: float, *, stream: Any = None) -> Array:
    """Root-mean-square normalisation over the last axis.

    Computes `x / sqrt(mean(x**2, -1) + eps) * weight` in float32 at least.

    Args:
        x: input of at least one dimension.
        weight: 1-D scale of the last axis's size, or `None` (no scale).
        eps: added to the mean square.
        stream: stream or device.

    Returns:
        An array of `x`'s shape in the promoted dtype of `x` and `weight`.

    Raises:
        ValueError: if `x` is 0-d, `weight` has the wrong shape or `eps` is not finite.
        TypeError: if the dtype is not floating-point or `eps` not a real number.

    Example:
        >>> import nuvec as mx
        >>> mx.fast.rms_norm(mx.array([[3.0, 4.0]]), None, 0.0).tolist()  # doctest: +SKIP
        [[0.8485..., 1.1313...]]
    """
    with stream_context(to_stream(stream)):
        x = _input(x, "rms_norm")
        eps = real_number(eps, "rms_norm", "eps")
        dtype = x.dtype
        if weight is not None:
            weight = as_array(weight, "rms_norm")
            check_param("rms_norm", "weight", weight, x)
            dtype = dt.promote_types(x.dtype, weight.dtype)
        floating("rms_norm", dtype)
        w = scalar_array(1.0, dtype) if weight is None else mx().astype(weight, dtype)
        return one(RmsNorm(eps), [mx().astype(x, dtype), w])


def layer_norm(x: Any, weight: Any, bias: Any, eps: float, *, stream: Any = None) -> Array:
    """Layer normalisation over the last axis: `(x - mean) / sqrt(var + eps) * weight + bias`.

    Args:
        x: input of at least one dimension.
        weight: 1-D scale of the last axis's size, or `None`.
        bias: 1-D offset of the last axis's size, or `None`.
        eps: added to the variance.
        stream: stream or device.

    Returns:
        An array of `x`'s shape in the promoted dtype of the inputs.

    Raises:
        ValueError: if `x` is 0-d, a parameter has the wrong shape or `eps` is not finite.
        TypeError: if the dtype is not floating-point or `eps` not a real number.

    Example:
        >>> import nuvec as mx
        >>> mx.fast.layer_norm(mx.array([[1.0, 3.0]]), None, None, 0.0).tolist()
        [[-1.0, 1.0]]
    """
    with stream_context(to_stream(stream)):
        x = _input(x, "layer_norm")
        eps = real_number(eps, "layer_norm", "eps")
        dtype = x.dtype
        params = []
        for p, what in ((weight, "weight"), (bias, "bias")):
            if p is not None:
                p = as_array(p, "layer_norm")
                check_param("layer_norm", what, p, x)
                dtype = dt.promote_types(dtype, p.dtype)
            params.append(p)
        floating("layer_norm", dtype)
        w, b = (
            scalar_array(fill, dtype) if p is None else mx().astype(p, dtype)
            for p, fill in zip(params, (1.0, 0.0))
        )
        return one(LayerNorm(eps), [mx().astype(x, dtype), w, b])


def add_rms_norm(
    x: Any, residual: Any, weight: Any, eps: float, *, stream: Any = None
) -> tuple[Array, Array]:
    """The residual sum `h = x + residual` and its RMS normalisation, in one pass.

    Args:
        x: input.
        residual: added to `x` (broadcast when the shapes differ; then not fused).
        weight: 1-D scale of the last axis's size, or `None`.
        eps: added to the mean square.
        stream: stream or device.

    Returns:
        `(h, y)`: the sum and `rms_norm(h, weight, eps)`.

    Raises:
        ValueError, TypeError: as `add` and `rms_norm`.

    Example:
        >>> import nuvec as mx
        >>> h, y = mx.fast.add_rms_norm(mx.ones((1, 4)), mx.ones((1, 4)), None, 0.0)
        >>> h.tolist(), y.tolist()
        ([[2.0, 2.0, 2.0, 2.0]], [[1.0, 1.0, 1.0, 1.0]])
    """
    with stream_context(to_stream(stream)):
        x, residual = as_array(x, "add_rms_norm"), as_array(residual, "add_rms_norm")
        eps = real_number(eps, "add_rms_norm", "eps")
        if weight is not None:
            weight = as_array(weight, "add_rms_norm")
        dtype = dt.promote_types(x.dtype, residual.dtype)
        fused = (
            x.shape == residual.shape
            and x.ndim > 0
            and dtype.is_floating
            and (
                weight is None
                or (
                    weight.ndim == 1
                    and weight.size == x.shape[-1]
                    and dt.promote_types(dtype, weight.dtype) is dtype
                )
            )
        )
        if not fused:  # (`rms_norm` checks h and weight, its messages naming add_rms_norm)
            h = mx().add(x, residual)
            return h, rms_norm(h, weight, eps)
        w = scalar_array(1.0, dtype) if weight is None else mx().astype(weight, dtype)
        h, y = record_or_fallback(
            AddRmsNorm(eps), [mx().astype(x, dtype), mx().astype(residual, dtype), w]
        )
        return h, y
