"""Rotary position embeddings (`rope`) and the fused RMS norm + RoPE + cache write (`norm_rope`).

RoPE's gradient is the inverse rotation (the same op with `forward=False`); the offset and the
frequencies have no gradient.
"""

from __future__ import annotations

import math
from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array
from nuvec.graph.device import stream as stream_context, to_stream
from nuvec.fast.base import FastOp, as_f32_bits, floating, mx, one, record_or_fallback
from nuvec.fast.norms import RmsNorm, rms_norm
from nuvec.ops.arguments import as_array, bool_flag, index_int, real_number, scalar_array

__all__ = ["rope", "norm_rope"]

NORM_ROPE_MAX = 1024
_I32_MAX = 2**31 - 1
_USIZE_MAX = 2**64 - 1


def _rotation_ok(dims: int, x: Array, freqs: Array | None) -> bool:
    d = x.shape[-1] if x.ndim else 0
    return (
        0 < dims <= d
        and dims % 2 == 0
        and (freqs is None or (freqs.dtype is dt.float32 and freqs.ndim == 1
                               and freqs.size == dims // 2))
    )


def rotate_pair(x1: Array, x2: Array, c: Array, s: Array, forward: bool = True):
    """`(x1 c − x2 s, x1 s + x2 c)`, or the inverse rotation `(x1 c + x2 s, x2 c − x1 s)`."""
    ops = mx()
    if forward:
        r1 = ops.subtract(ops.multiply(x1, c), ops.multiply(x2, s))
        r2 = ops.add(ops.multiply(x1, s), ops.multiply(x2, c))
    else:
        r1 = ops.add(ops.multiply(x2, s), ops.multiply(x1, c))
        r2 = ops.subtract(ops.multiply(x2, c), ops.multiply(x1, s))
    return r1, r2


def rope_graph(inputs, dims, traditional, base, scale, forward) -> Array:
    """RoPE from ordinary operations: the rotated features replace the input's first `dims`."""
    ops = mx()
    x, offset = inputs[0], inputs[1]
    shape, dtype = x.shape, x.dtype
    t, d = shape[-2], shape[-1]
    x4 = ops.reshape(x, (shape[0], math.prod(shape[1:-2]), t, d))  # (-1 is ambiguous at t = 0)
    half = dims // 2
    angle_dtype = dt.float64 if dtype is dt.float64 else dt.float32
    offset = ops.reshape(offset, (-1, 1, 1) if offset.size > 1 else ())
    positions = ops.multiply(
        ops.add(ops.arange(0, t, 1, dtype=angle_dtype), ops.astype(offset, angle_dtype)), scale
    )
    if len(inputs) > 2:
        inv_freqs = ops.divide(1.0, ops.astype(inputs[2], angle_dtype))
    else:
        steps = ops.arange(0, -half, -1, dtype=angle_dtype)
        inv_freqs = ops.exp(ops.multiply(steps, math.log(base) / half))
    theta = ops.multiply(ops.expand_dims(positions, -1), inv_freqs)
    c, s = ops.astype(ops.cos(theta), dtype), ops.astype(ops.sin(theta), dtype)
    rotated, rest = (ops.split(x4, [dims], axis=-1) if dims < d else (x4, None))
    if traditional:
        pairs = ops.reshape(rotated, (*rotated.shape[:-1], half, 2))
        x1, x2 = (ops.squeeze(p, -1) for p in ops.split(pairs, 2, axis=-1))
    else:
        x1, x2 = ops.split(rotated, 2, axis=-1)
    r1, r2 = rotate_pair(x1, x2, c, s, forward)
    if traditional:
        out = ops.reshape(ops.stack([r1, r2], axis=-1), rotated.shape)
    else:
        out = ops.concatenate([r1, r2], axis=-1)
    if rest is not None:
        out = ops.concatenate([out, rest], axis=-1)
    return ops.reshape(out, shape)


class Rope(FastOp):
    """`(x, offset[, freqs])`: rotary position embeddings of the first `dims` features."""

    __slots__ = ("dims", "traditional", "base", "scale", "forward")
    op = "rope"
    cpu_fused = True

    def __init__(self, dims: int, traditional: bool, base: float, scale: float,
                 forward: bool = True):
        self.dims, self.traditional, self.forward = int(dims), bool(traditional), bool(forward)
        self.base, self.scale = as_f32_bits(base), as_f32_bits(scale)

    def params(self):
        return (self.dims, self.traditional, self.base, self.scale, self.forward)

    def arity(self, inputs):
        return min(max(len(inputs), 2), 3)

    def valid(self, inputs):
        x, offset = inputs[0], inputs[1]
        return (
            x.ndim >= 3
            and offset.dtype in (dt.int32, dt.uint32)
            and offset.ndim <= 1
            and offset.size in (1, x.shape[0])
            and _rotation_ok(self.dims, x, inputs[2] if len(inputs) > 2 else None)
        )

    def fallback(self, inputs):
        return [rope_graph(inputs, self.dims, self.traditional, self.base, self.scale,
                           self.forward)]

    def inverse(self) -> Rope:
        return Rope(self.dims, self.traditional, self.base, self.scale, not self.forward)

    def vjp(self, primals, cotangents, argnums, outputs):
        if any(i > 0 for i in argnums):
            raise ValueError("rope: no gradient with respect to the offset or frequencies")
        return [one(self.inverse(), [cotangents[0], *primals[1:]])]

    def jvp(self, primals, tangents, outputs):
        if len(tangents) > 2 and tangents[2] is not None:
            # A tangent of the frequencies: the seed's rule, through the fallback graph.
            return super().jvp(primals, tangents, outputs)
        # Linear in x (the integer offset has no tangent).
        return [one(self, [tangents[0], *primals[1:]])] if tangents[0] is not None else [None]

    def batch_first(self, inputs, axes):
        if all(a is None for a in axes[1:]) and inputs[1].size == 1:
            return [0]
        return []


class NormRope(FastOp):
    """`([cache,] x, w[, freqs])`: rows RMS-normalised (with `eps`), rotated at `offset + l`,
    and written into `cache` at those positions (or returned as a new `[B, H, L, D]` array)."""

    __slots__ = ("eps", "dims", "traditional", "base", "scale", "offset", "cache")
    op = "norm_rope"

    def __init__(self, eps: float | None, dims: int, traditional: bool, base: float,
                 scale: float, offset: int, cache: bool):
        self.eps = None if eps is None else as_f32_bits(eps)
        self.dims, self.traditional = int(dims), bool(traditional)
        self.base, self.scale = as_f32_bits(base), as_f32_bits(scale)
        self.offset, self.cache = int(offset), bool(cache)

    def params(self):
        return (self.eps, self.dims, self.traditional, self.base, self.scale, self.offset,
                self.cache)

    def arity(self, inputs):
        at = int(self.cache)
        return min(max(len(inputs), 2 + at), 3 + at)

    def valid(self, inputs):
        at = int(self.cache)
        x = inputs[0]
        y, w = inputs[at], inputs[at + 1]
        s = y.shape
        end = self.offset + (s[2] if y.ndim > 2 else 0)
        if end > _USIZE_MAX:
            # The seed's positions are `usize`: `offset + L` past its range overflows.
            raise ValueError(f"norm_rope: position {self.offset} overflows")
        fits = (y.ndim == 4 and y.dtype is x.dtype and s[3] <= NORM_ROPE_MAX
                and 0 <= self.offset and end <= _I32_MAX)
        cache_fits = not self.cache or (
            fits and x.ndim == 4 and x.shape[:2] == s[:2] and x.shape[3] == s[3]
            and x.shape[2] >= end
        )
        if self.eps is not None:
            weight = w.dtype is x.dtype and w.ndim == 1 and fits and w.size == s[3]
        else:
            weight = w.dtype is x.dtype and w.ndim == 0
        freqs = inputs[at + 2] if len(inputs) > at + 2 else None
        return fits and cache_fits and weight and _rotation_ok(self.dims, y, freqs)

    def fallback(self, inputs):
        at = int(self.cache)
        h, w = inputs[at], inputs[at + 1]
        if self.eps is not None:
            h = one(RmsNorm(self.eps), [h, w])
        rope_inputs = [h, scalar_array(self.offset, dt.int32), *inputs[at + 2:]]
        r = one(Rope(self.dims, self.traditional, self.base, self.scale), rope_inputs)
        if not self.cache:
            return [r]
        return [_write(inputs[0], r, self.offset)]


def _write(cache: Array, r: Array, offset: int) -> Array:
    """`cache` with `r` written at rows `offset : offset + L` of axis 2."""
    ops = mx()
    return ops.slice_update(cache, r, ops.array([0, 0, offset, 0], dt.int32), (0, 1, 2, 3))


def _offset_array(offset: Any) -> Array:
    if isinstance(offset, Array):
        return offset
    if isinstance(offset, int) and not isinstance(offset, bool):
        return scalar_array(offset, dt.int32)
    return as_array(offset, "rope")


def rope(
    a: Any, dims: int, *, traditional: bool, base: float | None, scale: float,
    offset: Any, freqs: Any = None, stream: Any = None,
) -> Array:
    """Rotary position embeddings of the first `dims` features of each row.

    Position `p` of row `l` is `(offset + l) * scale`; pair `i` rotates by `p / base**(2i/dims)`
    (or `p / freqs[i]`). `traditional` rotates interleaved pairs, otherwise the two halves.

    Args:
        a: floating `[B, ..., L, D]` of at least 3 dimensions.
        dims: rotated features (even, at most `D`).
        traditional: rotate `(x[2i], x[2i+1])` instead of `(x[i], x[i + dims/2])`.
        base: frequency base, or `None` when `freqs` is given.
        scale: position scale.
        offset: the first row's position: an int, or an integer array (scalar or one per `B`).
        freqs: per-pair frequencies `[dims / 2]` (exactly one of `base` and `freqs`).
        stream: stream or device.

    Returns:
        An array of `a`'s shape and dtype.

    Raises:
        ValueError: for bad shapes, `dims`, offset shape, both/neither of base and freqs, a
            `base` that is not positive and finite or a `scale` that is not finite.
        TypeError: for a non-floating input or a non-integer offset.

    Example:
        >>> import nuvec as mx
        >>> x = mx.ones((1, 2, 4))
        >>> y = mx.fast.rope(x, 4, traditional=False, base=10000.0, scale=1.0, offset=0)
        >>> y.shape, y[0, 0].tolist()  # row 0 is at position 0: unrotated
        ((1, 2, 4), [1.0, 1.0, 1.0, 1.0])
    """
    with stream_context(to_stream(stream)):
        x = as_array(a, "rope")
        dims = index_int(dims, "rope", "dims")
        traditional = bool_flag(traditional, "rope", "traditional")
        scale = real_number(scale, "rope", "scale")
        if base is not None:  # the frequencies are base ** (-2i / dims)
            base = real_number(base, "rope", "base", positive=True)
        if x.ndim < 3:
            raise ValueError(f"rope: the input needs at least 3 dimensions, got {x.shape}")
        floating("rope", x.dtype)
        off = _offset_array(offset)
        if off.ndim > 1 or (off.size != 1 and off.size != x.shape[0]):
            raise ValueError(f"rope: offset must be a scalar or have {x.shape[0]} elements, "
                             f"got shape {off.shape}")
        if not off.dtype.is_integer:
            raise DtypeError(f"rope: offset must be an integer, got {off.dtype.name}")
        if dims <= 0 or dims % 2 or dims > x.shape[-1]:
            raise ValueError(f"rope: dims must be even, positive and at most {x.shape[-1]}, "
                             f"got {dims}")
        if off.dtype.size != 4:
            off = mx().astype(off, dt.int32)
        inputs = [x, off]
        if (base is None) == (freqs is None):
            raise ValueError("rope: exactly one of base and freqs must be given")
        if freqs is not None:
            f = as_array(freqs, "rope")
            if f.ndim != 1 or f.size != dims // 2:
                raise ValueError(f"rope: freqs must be 1-D with {dims // 2} elements, got "
                                 f"shape {f.shape}")
            inputs.append(mx().astype(f, dt.float32))
            base = 1.0
        return one(Rope(dims, traditional, base, scale), inputs)


def norm_rope(
    x: Any, weight: Any = None, eps: float | None = None, *, dims: int,
    traditional: bool = False, base: float | None = None, scale: float = 1.0, offset: int = 0,
    freqs: Any = None, cache: Any = None, stream: Any = None,
) -> Array:
    """RMS norm (when `eps` is given), RoPE at position `offset + l`, and a cache write.

    Args:
        x: `[B, H, L, D]` rows.
        weight: 1-D RMS-norm weight of `D` elements, or `None`.
        eps: RMS-norm epsilon; `None` skips the normalisation.
        dims, traditional, base, scale, freqs: RoPE's parameters (see `rope`).
        offset: the position of the first row (non-negative int).
        cache: `[B, H, S, D]` written at rows `offset : offset + L` (`S >= offset + L`), or
            `None` to return the rotated rows.
        stream: stream or device.

    Returns:
        The updated cache, or the rotated `[B, H, L, D]` rows.

    Raises:
        ValueError: if the cache cannot take the rows, `dims` is negative, or as `rms_norm`
            and `rope`.
        TypeError: as `rms_norm` and `rope`.

    Example:
        >>> import nuvec as mx
        >>> x, cache = mx.ones((1, 2, 3, 8)), mx.zeros((1, 2, 8, 8))
        >>> mx.fast.norm_rope(x, mx.ones((8,)), 1e-5, dims=8, base=1e4, offset=2, cache=cache).shape
        (1, 2, 8, 8)
    """
    with stream_context(to_stream(stream)):
        x = as_array(x, "norm_rope")
        dims, scale = index_int(dims, "norm_rope", "dims"), real_number(scale, "norm_rope", "scale")
        traditional = bool_flag(traditional, "norm_rope", "traditional")
        if base is not None:
            base = real_number(base, "norm_rope", "base", positive=True)
        if eps is not None:
            eps = real_number(eps, "norm_rope", "eps")
        if dims < 0:
            raise ValueError(f"norm_rope: dims must not be negative, got {dims}")
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(f"norm_rope: offset must be a non-negative int, got {offset!r}")
        if weight is not None and eps is None:
            raise ValueError("norm_rope: a weight needs eps (the RMS norm's epsilon)")
        w = None if weight is None else as_array(weight, "norm_rope")
        f = None if freqs is None else as_array(freqs, "norm_rope")
        c = None if cache is None else as_array(cache, "norm_rope")
        fused = (
            x.ndim == 4 and x.dtype.is_floating and x.shape[3] <= NORM_ROPE_MAX
            and offset + x.shape[2] <= _I32_MAX
        )
        inputs = []
        if c is not None:
            s = x.shape
            fits = (c.ndim == 4 and x.ndim == 4 and c.shape[:2] == s[:2] and c.shape[3] == s[3]
                    and c.shape[2] >= offset + s[2])
            if not fits:
                raise ValueError(f"norm_rope: a cache of shape {c.shape} cannot take {s} at "
                                 f"position {offset}")
            fused = fused and c.dtype is x.dtype
            inputs.append(c)
        if eps is not None:
            fused = fused and w is not None and w.dtype is x.dtype and w.ndim == 1 \
                and w.size == x.shape[-1]
        freqs_ok = f is None or (f.ndim == 1 and f.size == dims // 2)
        dims_ok = x.ndim > 0 and 0 < dims <= x.shape[-1] and dims % 2 == 0
        if not (fused and freqs_ok and dims_ok and (base is None) != (f is None)):
            h = x if eps is None else rms_norm(x, w, eps)
            r = rope(h, dims, traditional=traditional, base=base, scale=scale,
                     offset=offset, freqs=f)
            return r if c is None else _write(c, r, offset)
        inputs.append(x)
        inputs.append(w if eps is not None else scalar_array(1.0, x.dtype))
        if f is not None:
            inputs.append(mx().astype(f, dt.float32))
        op = NormRope(eps, dims, traditional, 1.0 if base is None else base, scale, offset,
                      c is not None)
        return record_or_fallback(op, inputs)[0]
