"""Quantization: quantize, dequantize, quantized_matmul (and, re-exported from
`nuvec.ops.gathered`, the masked and segmented products, and from `nuvec.ops.microscaled`,
`qqmm` and `gather_qqmm`; `gather_qmm` is in `nuvec.fast`).

MLX's affine scheme: per group of `group_size` values along the last axis, `w ~ scale * q + bias`
with `q` in `[0, 2**bits - 1]`; codes form a little-endian bit stream per row, stored as uint32
(3-, 5- and 6-bit codes straddle words), so weights load in either library.
"""

from __future__ import annotations

from typing import Any

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array, record, record1
from nuvec.graph.device import stream as stream_scope
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import Primitive
from nuvec.ops.arguments import as_array, bool_flag, broadcast_shapes, index_int
from nuvec.ops.binary import add, multiply
from nuvec.ops.creation import ones_like, zeros_like
from nuvec.ops.families import apply, batch_size, move_batch_to_front
from nuvec.ops.gathered import block_masked_mm, segmented_mm
from nuvec.ops.matmul import matmul
from nuvec.ops.microscaled import (
    FLOAT_MODES,
    dequantize_floats,
    float_mode_params,
    gather_qqmm,
    qqmm,
    quantize_floats,
)
from nuvec.ops.reduction import sum as reduce_sum
from nuvec.ops.shape import broadcast_to, expand_dims, reshape, squeeze, swapaxes
from nuvec.ops.unary import astype

__all__ = [
    "quantize",
    "dequantize",
    "quantized_matmul",
    "qqmm",
    "gather_qqmm",
    "block_masked_mm",
    "segmented_mm",
]

GROUP_SIZES = (32, 64, 128)
BITS = (1, 2, 3, 4, 5, 6, 8)


def check_quantization_params(op: str, group_size: int | None, bits: int | None) -> tuple[int, int]:
    """`(group_size, bits)` with None read as MLX's affine defaults (64, 4); raises TypeError
    for non-integers and ValueError unless they are values MLX's affine mode supports."""
    group_size = 64 if group_size is None else index_int(group_size, op, "group_size")
    bits = 4 if bits is None else index_int(bits, op, "bits")
    if group_size not in GROUP_SIZES:
        raise ValueError(f"{op}: group_size must be 32, 64 or 128, got {group_size}")
    if bits not in BITS:
        raise ValueError(f"{op}: bits must be 1, 2, 3, 4, 5, 6 or 8, got {bits}")
    return group_size, bits


def check_any_mode(op: str, mode: Any) -> None:
    """Raises ValueError unless `mode` is one of MLX's quantization modes."""
    if mode != "affine" and mode not in FLOAT_MODES:
        raise ValueError(f"{op}: mode must be 'affine', 'mxfp4', 'mxfp8' or 'nvfp4', got "
                         f"{mode!r}")


def check_quantization_mode(op: str, mode: str) -> None:
    """Raises ValueError for any mode but MLX's "affine" (the only one nuvec implements)."""
    if mode != "affine":
        raise ValueError(f"{op}: only the 'affine' quantization mode is supported, got {mode!r}")


class _Grouped(Primitive):
    """Parameters shared by the quantization primitives: `group_size` and `bits`."""

    __slots__ = ("group_size", "bits")
    abstract = True

    def __init__(self, group_size: int, bits: int):
        self.group_size, self.bits = group_size, bits

    def params(self):
        return (self.group_size, self.bits)


class Quantize(_Grouped):
    """`w -> (w_q, scales, biases)`; piecewise constant, so it has no derivative rule."""

    __slots__ = ()

    def output_specs(self, inputs):
        w = inputs[0]
        lead, k = w.shape[:-1], w.shape[-1]
        groups = (*lead, k // self.group_size)
        return (((*lead, k * self.bits // 32), dt.uint32), (groups, w.dtype), (groups, w.dtype))

    def vmap(self, inputs, axes):
        outs = record(self, (move_batch_to_front(inputs[0], axes[0]),), to_stream(None))
        return outs, [0, 0, 0]


class Dequantize(_Grouped):
    """`(w_q, scales, biases) -> scales * q + biases`; linear in scales and biases."""

    __slots__ = ()

    def output_specs(self, inputs):
        w, scales = inputs[0], inputs[1]
        return (((*w.shape[:-1], w.shape[-1] * 32 // self.bits), scales.dtype),)

    def _codes(self, primals: Any) -> Array:
        """The integer codes `q` as floats, grouped: `[..., groups, group_size]`."""
        w, scales = primals[0], primals[1]
        q = apply(self, w, ones_like(scales), zeros_like(scales))
        return reshape(q, (*scales.shape, self.group_size))

    def vjp(self, primals, cotangents, argnums, outputs):
        scales = primals[1]
        g = reshape(cotangents[0], (*scales.shape, self.group_size))
        grads: list[Array | None] = []
        for i in argnums:
            if i == 0:
                grads.append(None)
            elif i == 1:
                grads.append(reduce_sum(multiply(g, self._codes(primals)), axis=-1))
            else:
                grads.append(reduce_sum(g, axis=-1))
        return grads

    def jvp(self, primals, tangents, outputs):
        _, ts, tb = tangents
        scales = primals[1]
        grouped = (*scales.shape, self.group_size)
        parts = []
        if ts is not None:
            parts.append(multiply(self._codes(primals), expand_dims(ts, -1)))
        if tb is not None:
            parts.append(broadcast_to(expand_dims(tb, -1), grouped))
        if not parts:
            return [None]
        total = parts[0] if len(parts) == 1 else add(parts[0], parts[1])
        return [reshape(total, outputs[0].shape)]

    def vmap(self, inputs, axes):
        size = batch_size(inputs, axes)
        moved = [move_batch_to_front(x, a, size) for x, a in zip(inputs, axes)]
        return [apply(self, *moved)], [0]


class QuantizedMatmul(Primitive):
    """`x @ W.T` (or `x @ W`) for `W = dequantize(w, scales, biases)`; differentiable in `x`,
    `scales` and `biases` (as MLX), whose rules go through `W`'s (`Dequantize`'s) with
    dW = c^T x (or x^T c) summed over the batch axes `x` has beyond `w`'s.

    Inputs: `x [..., M, K]` (or `[K]`), `w [..., N, K*bits/32]` with scales and biases of the
    same batch shape; when `w` has batch axes, `x` has the same ones (the op broadcasts).
    """

    __slots__ = ("group_size", "bits", "transpose")

    def __init__(self, group_size: int, bits: int, transpose: bool):
        self.group_size, self.bits, self.transpose = group_size, bits, transpose

    def params(self):
        return (self.group_size, self.bits, self.transpose)

    def output_specs(self, inputs):
        x, w = inputs[0], inputs[1]
        n = w.shape[-2] if self.transpose else w.shape[-1] * 32 // self.bits
        return (((*x.shape[:-1], n), x.dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        x, w, scales, biases = primals
        flipped = QuantizedMatmul(self.group_size, self.bits, not self.transpose)
        grads: dict[int, Array | None] = {0: None, 1: None, 2: None, 3: None}
        if 0 in argnums:
            grads[0] = apply(flipped, cotangents[0], w, scales, biases)
        wanted = [i - 1 for i in argnums if i >= 2]
        if wanted:
            weights = self._weight_cotangent(x, cotangents[0], w.ndim)
            dequantized = Dequantize(self.group_size, self.bits)
            found = dequantized.vjp([w, scales, biases], [weights], wanted, None)
            grads.update((i + 1, g) for i, g in zip(wanted, found))
        return [grads[i] for i in argnums]

    def _weight_cotangent(self, x: Array, cotangent: Array, w_ndim: int) -> Array:
        """The cotangent of the dequantized weights: c^T x (transposed) or x^T c."""
        if x.ndim == 1:
            x, cotangent = expand_dims(x, 0), expand_dims(cotangent, 0)
        if self.transpose:
            weights = matmul(swapaxes(cotangent, -1, -2), x)
        else:
            weights = matmul(swapaxes(x, -1, -2), cotangent)
        extra = weights.ndim - w_ndim  # x's batch axes that a 2-D w broadcast over
        return reduce_sum(weights, axis=tuple(range(extra))) if extra else weights

    def jvp(self, primals, tangents, outputs):
        x, w, scales, biases = primals
        parts = []
        if tangents[0] is not None:
            parts.append(apply(self, tangents[0], w, scales, biases))
        if tangents[2] is not None or tangents[3] is not None:
            dequantized = Dequantize(self.group_size, self.bits)
            weights = apply(dequantized, w, scales, biases)  # only its shape is read
            dw = dequantized.jvp([w, scales, biases], [None, *tangents[2:]], [weights])[0]
            parts.append(matmul(x, swapaxes(dw, -1, -2) if self.transpose else dw))
        if not parts:
            return [None]
        return [parts[0] if len(parts) == 1 else add(parts[0], parts[1])]

    def vmap(self, inputs, axes):
        x, w, scales, biases = inputs
        x_axis, weight_axes = axes[0], axes[1:]
        if all(a is None for a in weight_axes):
            x = move_batch_to_front(x, x_axis)
            return [apply(self, x, w, scales, biases)], [0]
        size = batch_size(inputs, axes)
        w, scales, biases = (move_batch_to_front(t, a, size)
                             for t, a in zip((w, scales, biases), weight_axes))
        vector = x.ndim - (x_axis is not None) == 1
        if x_axis is None:
            x = reshape(x, (1, *x.shape))
        else:
            x = move_batch_to_front(x, x_axis)
        if vector:
            x = reshape(x, (x.shape[0], 1, x.shape[-1]))
        # Align the logical batch axes of x and of the weights behind the vmapped axis.
        extra = x.ndim - w.ndim
        if extra > 0:
            w, scales, biases = (reshape(t, (t.shape[0], *([1] * extra), *t.shape[1:]))
                                 for t in (w, scales, biases))
        elif extra < 0:
            x = reshape(x, (x.shape[0], *([1] * -extra), *x.shape[1:]))
        out = quantized_matmul(x, w, scales, biases, self.transpose, self.group_size, self.bits)
        return [squeeze(out, -2) if vector else out], [0]


def quantize(
    w: Any, /, group_size: int | None = None, bits: int | None = None, mode: str = "affine", *,
    global_scale: Any = None, stream: Any = None,
) -> tuple[Array, ...]:
    """Quantizes `w` per group of `group_size` values along the last axis.

    In MLX's "affine" mode each group gets a scale and a bias such that
    `w ~ scale * q + bias`, `q` an integer in `[0, 2**bits - 1]`; MLX chooses them so that the
    group's edge value of largest magnitude is represented exactly (and zero stays zero when
    a group touches it). With `bits=1` the bias is the group's minimum and the scale
    `max(w_max - w_min, 1e-7)`, so each code picks the nearer of the two extremes. The
    floating modes "mxfp4", "mxfp8" and "nvfp4" store small floats and one uint8 scale per
    group (`nuvec.ops.microscaled`), with no biases.

    Args:
        w: a floating array with at least 2 dimensions; its last axis divisible by `group_size`.
        group_size: values per scale (and bias): affine 32, 64 (None: the default) or 128;
            mxfp4 and mxfp8 32, nvfp4 16 (the only values).
        bits: bits per value: affine 1, 2, 3, 4 (None: the default), 5, 6 or 8; 4 for mxfp4
            and nvfp4, 8 for mxfp8.
        mode: "affine", "mxfp4", "mxfp8" or "nvfp4".
        global_scale: nvfp4 only: the tensor's largest magnitude, for the two-level scale.

    Returns:
        affine: `(w_q, scales, biases)`: `w_q` uint32 `[..., K * bits / 32]`, scales and
        biases `[..., K / group_size]` of `w`'s dtype; the floating modes: `(w_q, scales)`,
        scales uint8.

    Raises:
        TypeError: if `w` is not floating.
        ValueError: for an unsupported group size, bit width or mode, `w.ndim < 2`, or a last
            axis not divisible by `group_size`.

    Example:
        >>> import nuvec as mx
        >>> w_q, scales, biases = mx.quantize(mx.ones((4, 64)), group_size=64, bits=4)
        >>> w_q.shape, w_q.dtype == mx.uint32, scales.shape
        ((4, 8), True, (4, 1))
    """
    check_any_mode("quantize", mode)
    if mode in FLOAT_MODES:
        group_size, bits = float_mode_params("quantize", mode, group_size, bits)
    else:
        check_quantization_mode("quantize", mode)
        group_size, bits = check_quantization_params("quantize", group_size, bits)
        if global_scale is not None:
            raise ValueError("quantize: global_scale is only used by nvfp4 quantization")
    w = as_array(w, "quantize")
    if not w.dtype.is_floating:
        raise DtypeError(
            f"quantize: only real floating arrays can be quantized, got {w.dtype.name}"
        )
    if w.ndim < 2:
        raise ValueError(f"quantize: w must have at least 2 dimensions, got shape {w.shape}")
    if w.shape[-1] % group_size:
        raise ValueError(
            f"quantize: the last axis of w must be divisible by group_size {group_size}, "
            f"got shape {w.shape}"
        )
    if mode in FLOAT_MODES:
        with stream_scope(to_stream(stream)):
            return quantize_floats("quantize", w, mode, global_scale)
    outs = record(Quantize(group_size, bits), (w,), to_stream(stream))
    return outs[0], outs[1], outs[2]


def check_packed_weights(op: str, w: Array, scales: Array, biases: Array, group_size: int,
                         bits: int) -> None:
    """MLX's checks of a packed weight against its scales and biases."""
    if w.dtype is not dt.uint32:
        raise DtypeError(f"{op}: the quantized weights must be uint32, got {w.dtype.name}")
    if w.ndim < 2:
        raise ValueError(f"{op}: the quantized weights must have at least 2 dimensions, "
                         f"got shape {w.shape}")
    if scales.shape != biases.shape:
        raise ValueError(f"{op}: scales and biases must have the same shape, got "
                         f"{scales.shape} and {biases.shape}")
    if scales.ndim != w.ndim or scales.shape[:-1] != w.shape[:-1]:
        raise ValueError(f"{op}: scales of shape {scales.shape} do not match weights of "
                         f"shape {w.shape}")
    if w.shape[-1] * 32 != scales.shape[-1] * group_size * bits:
        raise ValueError(
            f"{op}: weights of shape {w.shape} and scales of shape {scales.shape} are "
            f"incompatible with group_size={group_size} and bits={bits}"
        )
    for name, a in (("scales", scales), ("biases", biases)):
        if not a.dtype.is_floating:
            raise DtypeError(f"{op}: {name} must be real floating, got {a.dtype.name}")


def promote_quantized_operands(op: str, x: Array, w: Array, scales: Array, biases: Array,
                               transpose: bool, bits: int, s: Any) -> tuple[Array, Array, Array]:
    """`x`, scales and biases in their promoted floating dtype, after checking that `x`'s last
    axis matches the dequantized weights' columns (rows without `transpose`)."""
    inner = w.shape[-1] * 32 // bits if transpose else w.shape[-2]
    if x.ndim < 1 or x.shape[-1] != inner:
        raise ValueError(
            f"{op}: the last axis of x (shape {x.shape}) must match the {inner} columns of the "
            f"dequantized weights (packed shape {w.shape}, transpose={transpose})"
        )
    out_type = dt.promote_types(x.dtype, dt.promote_types(scales.dtype, biases.dtype))
    if not out_type.is_floating:
        raise DtypeError(f"{op}: x must be real floating, got {x.dtype.name}")
    return tuple(astype(a, out_type, stream=s) for a in (x, scales, biases))


def dequantize(
    w: Any, /, scales: Any, biases: Any = None, group_size: int | None = None,
    bits: int | None = None, mode: str = "affine", global_scale: Any = None, dtype: Any = None,
    *, stream: Any = None,
) -> Array:
    """Restores `scales * q + biases` from quantized weights (the inverse of `quantize`).

    Args:
        w: uint32 `[..., K * bits / 32]`, as `quantize` returns.
        scales: `[..., K / group_size]`, floating (uint8 in the floating modes).
        biases: as `scales`; affine only (required there).
        group_size: as `quantize`'s.
        bits: as `quantize`'s.
        mode: "affine", "mxfp4", "mxfp8" or "nvfp4".
        global_scale: nvfp4 only, as given to `quantize`.
        dtype: the result's dtype; None: the scales' and biases' promoted dtype (bfloat16 in
            the floating modes, as MLX).

    Returns:
        `[..., K]` of `dtype`.

    Raises:
        TypeError: for non-uint32 weights, non-floating scales/biases, a `dtype` that is not
            real floating (also a ValueError, as MLX), or a non-integer group size or bits.
        ValueError: for unsupported parameters or mismatched shapes.

    Example:
        >>> import nuvec as mx
        >>> w = mx.ones((2, 32))
        >>> mx.dequantize(*mx.quantize(w, 32, 8), group_size=32, bits=8).tolist() == w.tolist()
        True
    """
    s = to_stream(stream)
    check_any_mode("dequantize", mode)
    if dtype is not None:
        dtype = dt.to_dtype(dtype, "dequantize")
        if not dtype.is_floating:
            raise DtypeError(f"dequantize: dtype must be a real floating type, got {dtype.name}")
    if mode in FLOAT_MODES:
        float_mode_params("dequantize", mode, group_size, bits)
        if biases is not None:
            raise ValueError(f"dequantize: {mode} quantization has no biases")
        out_type = dt.bfloat16 if dtype is None else dtype
        with stream_scope(s):
            return dequantize_floats("dequantize", as_array(w, "dequantize"),
                                     as_array(scales, "dequantize"), mode, global_scale,
                                     out_type)
    check_quantization_mode("dequantize", mode)
    group_size, bits = check_quantization_params("dequantize", group_size, bits)
    if biases is None:
        raise ValueError("dequantize: biases must be given for affine quantization")
    if global_scale is not None:
        raise ValueError("dequantize: global_scale is only used by nvfp4 quantization")
    w, scales, biases = (as_array(a, "dequantize") for a in (w, scales, biases))
    check_packed_weights("dequantize", w, scales, biases, group_size, bits)
    out_type = dt.promote_types(scales.dtype, biases.dtype)
    scales, biases = astype(scales, out_type, stream=s), astype(biases, out_type, stream=s)
    out = record1(Dequantize(group_size, bits), (w, scales, biases), s)
    return out if dtype is None else astype(out, dtype, stream=s)


def float_mode_operands(op: str, x: Any, w: Any, scales: Any, biases: Any, transpose: bool,
                        group_size: int | None, bits: int | None, mode: str,
                        global_scale: Any) -> tuple[Array, Array]:
    """`x` and the weights of a floating mode dequantized to its dtype (`[..., K, N]`,
    transposed with `transpose`), for a product; on the current stream."""
    float_mode_params(op, mode, group_size, bits)
    if biases is not None:
        raise ValueError(f"{op}: {mode} quantization has no biases")
    x = as_array(x, op)
    if not x.dtype.is_floating:
        raise DtypeError(f"{op}: x must be real floating, got {x.dtype.name}")
    weights = dequantize_floats(op, as_array(w, op), as_array(scales, op), mode, global_scale,
                                x.dtype)
    return x, swapaxes(weights, -1, -2) if transpose else weights


def quantized_matmul(
    x: Any, w: Any, /, scales: Any, biases: Any = None, transpose: bool = True,
    group_size: int | None = None, bits: int | None = None, mode: str = "affine", *,
    stream: Any = None,
) -> Array:
    """`x @ dequantize(w).T` (`transpose=True`) or `x @ dequantize(w)`, without forming `w`.

    Args:
        x: floating `[..., K]`.
        w: packed uint32 weights `[..., N, K*bits/32]` (`transpose`) or `[..., K, N*bits/32]`.
        scales: `[..., rows, columns / group_size]` of the packed matrix; biases alike
            (affine only).
        transpose: multiply by the transposed weights (the layout of linear layers).
        group_size: as `quantize`'s.
        bits: as `quantize`'s.
        mode: "affine", or a floating mode ("mxfp4", "mxfp8", "nvfp4": the weights are
            dequantized to `x`'s dtype, then multiplied).

    Returns:
        `[..., N]` of the promoted dtype of `x`, scales and biases. Batch axes of `x` and `w`
        (beyond the last two) broadcast.

    Raises:
        TypeError: for non-floating inputs or non-uint32 weights.
        ValueError: for unsupported parameters, mismatched shapes or a 1-D `x` with batched
            weights.

    Example:
        >>> import nuvec as mx
        >>> w_q, s, b = mx.quantize(mx.ones((3, 64)))
        >>> mx.quantized_matmul(mx.ones((2, 64)), w_q, s, b).tolist()
        [[64.0, 64.0, 64.0], [64.0, 64.0, 64.0]]
    """
    op = "quantized_matmul"
    transpose = bool_flag(transpose, op, "transpose")
    s = to_stream(stream)
    check_any_mode(op, mode)
    if mode in FLOAT_MODES:
        with stream_scope(s):
            return matmul(*float_mode_operands(op, x, w, scales, biases, transpose, group_size,
                                               bits, mode, None))
    check_quantization_mode(op, mode)
    group_size, bits = check_quantization_params(op, group_size, bits)
    if biases is None:
        raise ValueError(f"{op}: biases must be given for affine quantization")
    x, w, scales, biases = (as_array(a, op) for a in (x, w, scales, biases))
    check_packed_weights(op, w, scales, biases, group_size, bits)
    x, scales, biases = promote_quantized_operands(op, x, w, scales, biases, transpose, bits, s)
    if w.ndim > 2:
        if x.ndim < 2:
            raise ValueError(f"{op}: x must have at least 2 dimensions with batched weights, "
                             f"got shapes {x.shape} and {w.shape}")
        batch = broadcast_shapes(x.shape[:-2], w.shape[:-2], op=op)
        if x.shape[:-2] != batch:
            x = broadcast_to(x, (*batch, *x.shape[-2:]), stream=s)
        if w.shape[:-2] != batch:
            w, scales, biases = (broadcast_to(a, (*batch, *a.shape[-2:]), stream=s)
                                 for a in (w, scales, biases))
    return record1(QuantizedMatmul(group_size, bits, transpose), (x, w, scales, biases), s)
