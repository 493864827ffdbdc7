"""MLX 0.32's floating-point quantization modes, composed of ordinary ops.

- "mxfp4" and "mxfp8" (OCP microscaling): E2M1 (4-bit) or E4M3 (8-bit) values sharing one
  power-of-two scale per 32, stored as an E8M0 byte: `2**ceil(log2(amax / emax))`, `emax`
  the element format's largest value (6 or 448), the exponent clamped to [-127, 127].
- "nvfp4": E2M1 values with an E4M3 scale per 16, `amax / 6` rounded to E4M3; with a
  `global_scale` (the tensor's amax, as MLX takes it) the stored scale is
  `amax / 6 * 2688 / global_scale` and the values are multiplied back by
  `global_scale / 2688` (2688 = 448 * 6).

E2M1 holds 0, 0.5, 1, 1.5, 2, 3, 4, 6 and a sign; a value is rounded to the nearest, ties
toward zero (as MLX's kernels), and a zero never carries the sign bit. E4M3 rounds to nearest
even and saturates (`to_fp8`). Codes are packed first-lowest: eight 4-bit codes or four bytes
per uint32 word.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.graph.dtypes import DtypeError
from nuvec.ops import binary, comparison, creation, reduction, rounding, shape, unary
from nuvec.ops.arguments import as_array
from nuvec.ops.fp8 import from_fp8, to_fp8
from nuvec.ops.indexing import take

__all__: list[str] = []

# mode -> (group size, bits, largest element value)
FLOAT_MODES = {"mxfp4": (32, 4, 6.0), "mxfp8": (32, 8, 448.0), "nvfp4": (16, 4, 6.0)}
_FP4_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], np.float32)
_FP4_MIDPOINTS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)
_NV_RANGE = 448.0 * 6.0


def float_mode_params(op: str, mode: str, group_size: int | None,
                      bits: int | None) -> tuple[int, int]:
    """The mode's fixed `(group_size, bits)`; None reads as them, anything else is refused."""
    size, width, _ = FLOAT_MODES[mode]
    if group_size is not None and group_size != size:
        raise ValueError(f"{op}: {mode} quantization requires group size {size}, got "
                         f"{group_size}")
    if bits is not None and bits != width:
        raise ValueError(f"{op}: {mode} quantization requires bits {width}, got {bits}")
    return size, width


def _global(op: str, mode: str, global_scale: Any) -> Array | None:
    if global_scale is None:
        return None
    if mode != "nvfp4":
        raise ValueError(f"{op}: global_scale is only used by nvfp4 quantization, not {mode}")
    scale = as_array(global_scale, op)
    if scale.size != 1:
        raise ValueError(f"{op}: global_scale must hold one value, got shape {scale.shape}")
    return unary.astype(shape.reshape(scale, ()), dt.float32)


def _grouped(x: Array, group_size: int) -> Array:
    return shape.reshape(x, (*x.shape[:-1], x.shape[-1] // group_size, group_size))


def _pack(codes: Array, bits: int) -> Array:
    """uint32 words of `codes` (`[..., K]`, values below `2**bits`), first code lowest."""
    per = 32 // bits
    words = shape.reshape(unary.astype(codes, dt.uint32),
                          (*codes.shape[:-1], codes.shape[-1] // per, per))
    shifts = creation.array(np.arange(per, dtype=np.uint32) * bits, dt.uint32)
    return unary.astype(reduction.sum(comparison.left_shift(words, shifts), axis=-1),
                        dt.uint32)


def _unpack(w: Array, bits: int) -> Array:
    per = 32 // bits
    shifts = creation.array(np.arange(per, dtype=np.uint32) * bits, dt.uint32)
    codes = comparison.bitwise_and(comparison.right_shift(shape.expand_dims(w, -1), shifts),
                                   (1 << bits) - 1)
    return shape.reshape(codes, (*w.shape[:-1], w.shape[-1] * per))


def _fp4_codes(values: Array) -> Array:
    """E2M1 codes of `values` (already scaled): nearest, ties toward zero; no signed zero."""
    magnitude = unary.abs(values)
    code = None
    for midpoint in _FP4_MIDPOINTS:
        above = unary.astype(comparison.greater(magnitude, midpoint), dt.uint32)
        code = above if code is None else binary.add(code, above)
    negative = comparison.logical_and(comparison.less(values, 0.0),
                                      comparison.greater(code, 0))
    return binary.add(code, binary.multiply(unary.astype(negative, dt.uint32), 8))


def _fp4_values(codes: Array) -> Array:
    magnitude = take(creation.array(_FP4_VALUES, dt.float32),
                     unary.astype(comparison.bitwise_and(codes, 7), dt.int32))
    return comparison.where(comparison.greater_equal(codes, 8), unary.negative(magnitude),
                            magnitude)


def quantize_floats(op: str, w: Array, mode: str, global_scale: Any) -> tuple[Array, Array]:
    """`(w_q, scales)` of `w` (`[..., K]`, floating) in a floating mode: uint32 words and
    uint8 scales `[..., K / group_size]`."""
    group_size, bits, largest = FLOAT_MODES[mode]
    if not w.dtype.is_floating:
        raise DtypeError(f"{op}: only real floating arrays can be quantized, got "
                         f"{w.dtype.name}")
    tensor = _global(op, mode, global_scale)
    groups = _grouped(unary.astype(w, dt.float32), group_size)
    amax = reduction.max(unary.abs(groups), axis=-1, keepdims=True)
    if mode == "nvfp4":
        wanted = binary.divide(amax, largest)
        if tensor is not None:
            wanted = binary.multiply(wanted, binary.divide(_NV_RANGE, tensor))
        scale_bytes = to_fp8(wanted)
        scale = from_fp8(scale_bytes, dt.float32)
        if tensor is not None:
            scale = binary.multiply(scale, binary.divide(tensor, _NV_RANGE))
    else:
        exponent = rounding.ceil(unary.log2(binary.divide(amax, largest)))
        exponent = comparison.where(comparison.greater(amax, 0.0), exponent, 0.0)
        exponent = binary.minimum(binary.maximum(exponent, -127.0), 127.0)
        scale_bytes = unary.astype(binary.add(exponent, 127.0), dt.uint8)
        scale = binary.power(2.0, exponent)
    safe = comparison.where(comparison.greater(scale, 0.0), scale, 1.0)
    values = comparison.where(comparison.greater(scale, 0.0), binary.divide(groups, safe), 0.0)
    values = shape.reshape(values, w.shape)
    codes = _fp4_codes(values) if bits == 4 else to_fp8(values)
    return _pack(codes, bits), shape.reshape(scale_bytes, scale_bytes.shape[:-1])


def dequantize_floats(op: str, w: Array, scales: Array, mode: str, global_scale: Any,
                      dtype: dt.Dtype) -> Array:
    """The values `quantize_floats` encoded, in `dtype`."""
    group_size, bits, _ = FLOAT_MODES[mode]
    if w.dtype is not dt.uint32 or scales.dtype is not dt.uint8:
        raise DtypeError(f"{op}: {mode} weights must be uint32 and scales uint8, got "
                         f"{w.dtype.name} and {scales.dtype.name}")
    columns = w.shape[-1] * 32 // bits if w.ndim else 0
    if w.ndim < 2 or scales.shape != (*w.shape[:-1], columns // group_size):
        raise ValueError(f"{op}: {mode} scales must be [..., {columns // max(group_size, 1)}] "
                         f"for weights of shape {w.shape}, got {scales.shape}")
    tensor = _global(op, mode, global_scale)
    codes = _unpack(w, bits)
    values = _fp4_values(codes) if bits == 4 else from_fp8(unary.astype(codes, dt.uint8),
                                                             dt.float32)
    if mode == "nvfp4":
        scale = from_fp8(scales, dt.float32)
        if tensor is not None:
            scale = binary.multiply(scale, binary.divide(tensor, _NV_RANGE))
    else:
        scale = binary.power(2.0, binary.subtract(unary.astype(scales, dt.float32), 127.0))
    out = binary.multiply(_grouped(values, group_size), shape.expand_dims(scale, -1))
    return unary.astype(shape.reshape(out, values.shape), dtype)
