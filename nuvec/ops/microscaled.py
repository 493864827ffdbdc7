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

`qqmm` and `gather_qqmm` (exported through `nuvec.ops.quantized`) quantize their input too:
their product is composed of these ops, and a `QQMatmul` node passing it through carries MLX's
derivative rules, which quantize the cotangent in turn.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, record1
from nuvec.graph.device import stream as stream_scope
from nuvec.graph.device import to_stream
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.primitive import Primitive
from nuvec.ops import binary, comparison, creation, reduction, rounding, shape, unary
from nuvec.ops.arguments import as_array, bool_flag, broadcast_shapes, index_int
from nuvec.ops.families import batch_size, move_batch_to_front
from nuvec.ops.fp8 import from_fp8, to_fp8
from nuvec.ops.indexing import take
from nuvec.ops.join import stack
from nuvec.ops.linalg import pad_last
from nuvec.ops.matmul import matmul

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
    if group_size is not None and index_int(group_size, op, "group_size") != size:
        raise ValueError(f"{op}: {mode} quantization requires group size {size}, got "
                         f"{group_size}")
    if bits is not None and index_int(bits, op, "bits") != width:
        raise ValueError(f"{op}: {mode} quantization requires bits {width}, got {bits}")
    return size, width


def checked_global(op: str, mode: str, global_scale: Any,
                   name: str = "global_scale") -> Array | None:
    """`global_scale` as a float32 scalar (None stays None), checked as MLX does: nvfp4 only,
    float32, one value."""
    if global_scale is None:
        return None
    if mode != "nvfp4":
        raise ValueError(f"{op}: {name} is only used by nvfp4 quantization, not {mode}")
    scale = as_array(global_scale, op)
    if scale.dtype is not dt.float32:
        raise DtypeError(f"{op}: {name} must be float32, got {scale.dtype.name}")
    if scale.size != 1:
        raise ValueError(f"{op}: {name} must hold one value, got shape {scale.shape}")
    return shape.reshape(scale, ())


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
    tensor = checked_global(op, mode, global_scale)
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


def check_packed_floats(op: str, w: Array, scales: Array, mode: str) -> None:
    """Raises unless `w` (uint32, at least 2-D) and `scales` (uint8) are packed as `mode`'s."""
    group_size, bits, _ = FLOAT_MODES[mode]
    if w.dtype is not dt.uint32 or scales.dtype is not dt.uint8:
        raise DtypeError(f"{op}: {mode} weights must be uint32 and scales uint8, got "
                         f"{w.dtype.name} and {scales.dtype.name}")
    columns = w.shape[-1] * 32 // bits if w.ndim else 0
    if w.ndim < 2 or scales.shape != (*w.shape[:-1], columns // group_size):
        raise ValueError(f"{op}: {mode} scales must be [..., {columns // group_size}] "
                         f"for weights of shape {w.shape}, got {scales.shape}")


def dequantize_floats(op: str, w: Array, scales: Array, mode: str, global_scale: Any,
                      dtype: dt.Dtype) -> Array:
    """The values `quantize_floats` encoded, in `dtype`."""
    group_size, bits, _ = FLOAT_MODES[mode]
    check_packed_floats(op, w, scales, mode)
    tensor = checked_global(op, mode, global_scale)
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


# -- products quantizing both operands: qqmm, gather_qqmm ---------------------------------------

PRODUCT_MODES = ("nvfp4", "mxfp8", "mxfp4")
_PRODUCT_FLOATS = (dt.float32, dt.float16, dt.bfloat16)


def _rounded(v: Array, mode: str, global_scale: Array | None) -> Array:
    """`v` quantized along its last axis and dequantized, in float32. A last axis that is not a
    whole number of groups is zero-padded for the quantization (zeros change no scale)."""
    group_size = FLOAT_MODES[mode][0]
    size = v.shape[-1]
    rows = shape.reshape(v, (int(np.prod(v.shape[:-1])), size))
    extra = -size % group_size
    if extra:
        rows = pad_last(rows, extra)
    codes, scales = quantize_floats("qqmm", rows, mode, global_scale)
    values = dequantize_floats("qqmm", codes, scales, mode, global_scale, dt.float32)
    return shape.reshape(values[:, :size] if extra else values, v.shape)


def _product(a: Array, b: Array, mode: str, global_a: Array | None,
             global_b: Array | None) -> Array:
    """`a @ b.T` in float32, both quantized along the axis they share."""
    return matmul(_rounded(a, mode, global_a),
                  shape.swapaxes(_rounded(b, mode, global_b), -1, -2))


def _amax(v: Array) -> Array:
    """The global scale of `v`: its largest magnitude as float32 (1 if all are zero)."""
    if v.size == 0:
        return creation.array(1.0, dt.float32)
    amax = reduction.max(unary.abs(unary.astype(v, dt.float32)))
    return comparison.where(comparison.greater(amax, 0.0), amax, 1.0)


def _dequantized(w: Array, scales: Array, mode: str, global_w: Array | None) -> Array:
    """Packed weights' values in float32."""
    return dequantize_floats("qqmm", w, scales, mode, global_w, dt.float32)


class QQMatmul(Primitive):
    """`(x, w[, scales][, global_x, global_w], product) -> product`: `qqmm`'s node.

    `product` is `x @ w.T` with `x` (and an unquantized `w`) quantized along their last axis,
    composed of ordinary ops; the node passes it through and holds MLX's rules, which quantize
    the cotangent `c` along its last axis too (its global scale `max|c|` with nvfp4 global
    scales): `dx = c @ w` with `w` quantized along N, `dw = c^T @ x` with `x` quantized along
    M (rows of all batches; a 2-D `w` sums over them). `w`, when batched, has `x`'s batch axes.
    """

    __slots__ = ("mode", "packed", "scaled")
    allocates = False  # the output is the product input itself

    def __init__(self, mode: str, packed: bool, scaled: bool):
        self.mode, self.packed, self.scaled = mode, packed, scaled

    def params(self):
        return (self.mode, self.packed, self.scaled)

    def output_specs(self, inputs):
        return ((inputs[-1].shape, inputs[-1].dtype),)

    def operands(self, inputs: Any) -> tuple[Any, Any, Any, Any, Any]:
        """`(x, w, scales, global_x, global_w)` of `inputs` (or of their batch axes), None
        where absent."""
        scales = inputs[2] if self.packed else None
        first = 3 if self.packed else 2
        globals_ = inputs[first:first + 2] if self.scaled else (None, None)
        return inputs[0], inputs[1], scales, globals_[0], globals_[1]

    def vjp(self, primals, cotangents, argnums, outputs):
        x, w, scales, global_x, global_w = self.operands(primals)
        c = cotangents[0]
        global_c = _amax(c) if self.scaled else None
        grads: dict[int, Array] = {}
        if 0 in argnums:
            weights = w if scales is None else _dequantized(w, scales, self.mode, global_w)
            dx = _product(c, shape.swapaxes(weights, -1, -2), self.mode, global_c, global_w)
            grads[0] = unary.astype(dx, x.dtype)
        if 1 in argnums and not self.packed:
            if w.ndim == 2:  # rows of every batch (and a 1-D x's one row)
                x = shape.reshape(x, (-1, x.shape[-1]))
                c = shape.reshape(c, (-1, c.shape[-1]))
            dw = _product(shape.swapaxes(c, -1, -2), shape.swapaxes(x, -1, -2), self.mode,
                          global_c, global_x)
            grads[1] = unary.astype(dw, w.dtype)
        return [grads.get(i) for i in argnums]

    def jvp(self, primals, tangents, outputs):
        x, w, scales, global_x, global_w = self.operands(primals)
        parts = []
        if tangents[0] is not None:
            t = tangents[0]
            parts.append(qqmm_node(t, w, scales, _amax(t) if self.scaled else None, global_w,
                                   self.mode))
        if tangents[1] is not None and not self.packed:
            t = tangents[1]
            parts.append(qqmm_node(x, t, None, global_x, _amax(t) if self.scaled else None,
                                   self.mode))
        if not parts:
            return [None]
        return [parts[0] if len(parts) == 1 else binary.add(parts[0], parts[1])]

    def vmap(self, inputs, axes):
        operands, operand_axes = self.operands(inputs), self.operands(axes)
        size = batch_size(inputs, axes)
        if operand_axes[3] is not None or operand_axes[4] is not None:
            # a global scale per entry: one product per entry
            entries = [qqmm_node(*(a if i is None else take(a, k, axis=i)
                                   for a, i in zip(operands, operand_axes)), self.mode)
                       for k in range(size)]
            return [stack(entries)], [0]
        x, w, scales, global_x, global_w = operands
        x_axis, w_axis, scales_axis = operand_axes[:3]
        if w_axis is None and scales_axis is None and w.ndim == 2:
            x = move_batch_to_front(x, x_axis, size)
            return [qqmm_node(x, w, scales, global_x, global_w, self.mode)], [0]
        # batched weights: give x the batch axis, then x and w the same batch axes
        vector = x.ndim - (x_axis is not None) == 1
        x = move_batch_to_front(x, x_axis, size)
        x = shape.expand_dims(x, -2) if vector else x
        weights = [move_batch_to_front(t, a, size) for t, a in ((w, w_axis), (scales, scales_axis))
                   if t is not None]
        weights = [shape.reshape(t, (size, *[1] * (x.ndim - t.ndim), *t.shape[1:]))
                   for t in weights]
        batch = broadcast_shapes(x.shape[:-2], *(t.shape[:-2] for t in weights), op="qqmm")
        x, *weights = (shape.broadcast_to(t, (*batch, *t.shape[-2:])) for t in (x, *weights))
        out = qqmm_node(x, weights[0], weights[1] if self.packed else None, global_x, global_w,
                        self.mode)
        return [shape.squeeze(out, -2) if vector else out], [0]


def qqmm_node(x: Array, w: Array, scales: Array | None, global_x: Array | None,
              global_w: Array | None, mode: str) -> Array:
    """Records the product of checked operands on the current stream: `x [..., K]` with `w`
    `[N, K]` (packed with `scales` or not), or `x [..., M, K]` with `w [..., N, K]` of the
    same batch axes. Returns `x`'s dtype."""
    if scales is None:
        product = _product(x, w, mode, global_x, global_w)
    else:
        weights = _dequantized(w, scales, mode, global_w)
        product = matmul(_rounded(x, mode, global_x), shape.swapaxes(weights, -1, -2))
    inputs = [x, w, *([] if scales is None else [scales]),
              *([] if global_x is None else [global_x, global_w]),
              unary.astype(product, x.dtype)]
    node = QQMatmul(mode, scales is not None, global_x is not None)
    return record1(node, inputs, to_stream(None))


def _product_float(op: str, name: str, a: Array) -> None:
    if a.dtype not in _PRODUCT_FLOATS:
        raise DtypeError(f"{op}: {name} must be float32, float16 or bfloat16"
                         f"{' (or uint32 when quantized)' if name == 'w' else ''}, got "
                         f"{a.dtype.name}")


def _product_operands(op: str, x: Any, w: Any, scales: Any, group_size: int | None,
                      bits: int | None, mode: str, global_x: Any, global_w: Any
                      ) -> tuple[Array, Array, Array | None, Array | None, Array | None]:
    """`(x, w, scales, global_x, global_w)` after MLX's checks of `qqmm`'s arguments (scales
    None unless `w` is packed)."""
    if mode not in PRODUCT_MODES:
        raise ValueError(f"{op}: mode must be 'nvfp4', 'mxfp8' or 'mxfp4' (the input is "
                         f"quantized too), got {mode!r}")
    group_size, bits = float_mode_params(op, mode, group_size, bits)
    x, w = as_array(x, op), as_array(w, op)
    _product_float(op, "x", x)
    packed = w.dtype is dt.uint32
    if packed:
        if scales is None:
            raise ValueError(f"{op}: scales must be given with quantized (uint32) weights")
        scales = as_array(scales, op)
        check_packed_floats(op, w, scales, mode)
    else:
        _product_float(op, "w", w)
        scales = None  # (MLX ignores them for unquantized weights)
        if w.ndim < 2:
            raise ValueError(f"{op}: w must have at least 2 dimensions, got shape {w.shape}")
    inner = w.shape[-1] * 32 // bits if packed else w.shape[-1]
    if x.ndim == 0 or x.shape[-1] != inner:
        raise ValueError(f"{op}: the last axis of x (shape {x.shape}) must match the {inner} "
                         f"columns of w (shape {w.shape}{', packed' if packed else ''})")
    if inner % group_size:
        raise ValueError(f"{op}: the {inner} columns of x and w must be a multiple of the "
                         f"{mode} group size {group_size}")
    if (global_x is None) != (global_w is None) and mode == "nvfp4":
        raise ValueError(f"{op}: nvfp4 takes both global_scale_x and global_scale_w, or "
                         "neither")
    return (x, w, scales, checked_global(op, mode, global_x, "global_scale_x"),
            checked_global(op, mode, global_w, "global_scale_w"))


def qqmm(
    x: Any, w: Any, scales: Any = None, group_size: int | None = None, bits: int | None = None,
    mode: str = "nvfp4", global_scale_x: Any = None, global_scale_w: Any = None, *,
    stream: Any = None,
) -> Array:
    """`x @ w.T` with `x` quantized on the fly, and `w` too unless it already is (MLX's `qqmm`).

    Both operands go through `quantize` and `dequantize` along their last axis (`K`); the
    product of those values is taken in float32 and returned in `x`'s dtype. Gradients (for
    `x` and an unquantized `w`) follow MLX: the cotangent is quantized in turn, along the
    axis each product contracts, and so are `w` (along N) and `x` (along the rows, zero-padded
    to whole groups); a quantized `w` gets none.

    Args:
        x: float32, float16 or bfloat16 `[..., K]`.
        w: `[N, K]` of those dtypes, or quantized: uint32 `[N, K * bits / 32]` from `quantize`.
        scales: the uint8 scales of a quantized `w` (ignored for an unquantized one, as MLX).
        group_size: the mode's group size (16 for nvfp4, 32 for mxfp8 and mxfp4) or None.
        bits: the mode's bits (4 for nvfp4 and mxfp4, 8 for mxfp8) or None.
        mode: "nvfp4" (MLX's default), "mxfp8" or "mxfp4".
        global_scale_x: nvfp4 only, with `global_scale_w`: float32 scalars, the tensors'
            largest magnitudes (as `quantize`'s `global_scale`).
        global_scale_w: see `global_scale_x`; a quantized `w` must have been quantized with it.
        stream: the stream (or device) to record on.

    Returns:
        `[..., N]` in `x`'s dtype.

    Raises:
        TypeError: for other dtypes of `x` and `w`, scales that are not uint8 or global
            scales that are not float32.
        ValueError: for another mode, group size or bits, a `w` that is not 2-D, mismatched
            shapes, `K` not a multiple of the group size, a quantized `w` without scales, or
            one global scale without the other.

    Example:
        >>> import nuvec as mx
        >>> mx.qqmm(mx.full((1, 32), 1.5), mx.full((2, 32), 3.0)).tolist()
        [[144.0, 144.0]]
    """
    op = "qqmm"
    operands = _product_operands(op, x, w, scales, group_size, bits, mode, global_scale_x,
                                 global_scale_w)
    if operands[1].ndim != 2:
        raise ValueError(f"{op}: w must be 2-D, got shape {operands[1].shape}")
    with stream_scope(to_stream(stream)):
        return qqmm_node(*operands, mode)


def _picked(op: str, a: Array, indices: Any) -> Array:
    """The `[M, N]` matrices of `a` at `indices` into its flattened batch (all when None)."""
    count = int(np.prod(a.shape[:-2]))
    if indices is None:
        indices = shape.reshape(creation.arange(count, dtype=dt.uint32), a.shape[:-2])
    indices = as_array(indices, op)
    if not indices.dtype.is_integer:
        raise DtypeError(f"{op}: indices must be integers, got {indices.dtype.name}")
    return take(shape.reshape(a, (count, *a.shape[-2:])), indices, axis=0)


def gather_qqmm(
    x: Any, w: Any, /, scales: Any = None, lhs_indices: Any = None, rhs_indices: Any = None,
    group_size: int | None = None, bits: int | None = None, mode: str = "nvfp4",
    global_scale_x: Any = None, global_scale_w: Any = None, *, sorted_indices: bool = False,
    stream: Any = None,
) -> Array:
    """`qqmm` of gathered batches: `qqmm(x[lhs_indices], w[rhs_indices])` per index pair.

    As in `gather_mm`, the indices are flat indices into the batch axes (all but the last two)
    of `x` and `w`; missing ones mean every batch entry; they broadcast together and give
    the output's batch shape. Negative indices count from the end; an out-of-range one makes
    the evaluation fail. `sorted_indices` is a hint only.

    Args:
        x: float32, float16 or bfloat16 `[..., M, K]`.
        w: `[..., N, K]` of those dtypes, or quantized (uint32, with `scales`).
        scales: the uint8 scales of a quantized `w` (ignored for an unquantized one).
        lhs_indices: integer indices into `x`'s flattened batch; all when None.
        rhs_indices: integer indices into `w`'s flattened batch; all when None.
        group_size: as `qqmm`'s.
        bits: as `qqmm`'s.
        mode: as `qqmm`'s.
        global_scale_x: as `qqmm`'s.
        global_scale_w: as `qqmm`'s.
        sorted_indices: a hint that the indices are sorted.
        stream: the stream (or device) to record on.

    Returns:
        `[*broadcast(lhs_indices, rhs_indices).shape, M, N]` in `x`'s dtype.

    Raises:
        TypeError: for the dtypes `qqmm` refuses, or non-integer indices.
        ValueError: for what `qqmm` refuses (but batched `w`), a 1-D `x` or `w`, or indices
            that do not broadcast.

    Example:
        >>> import nuvec as mx
        >>> w = mx.stack([mx.full((2, 32), 3.0), mx.full((2, 32), 6.0)])
        >>> mx.gather_qqmm(mx.full((1, 32), 1.5), w, rhs_indices=mx.array([1, 0])).tolist()
        [[[288.0, 288.0]], [[144.0, 144.0]]]
    """
    op = "gather_qqmm"
    bool_flag(sorted_indices, op, "sorted_indices")  # a hint this implementation leaves unused
    x, w, scales, global_x, global_w = _product_operands(
        op, x, w, scales, group_size, bits, mode, global_scale_x, global_scale_w)
    if x.ndim < 2:
        raise ValueError(f"{op}: x must have at least 2 dimensions, got shape {x.shape}")
    with stream_scope(to_stream(stream)):
        x = _picked(op, x, lhs_indices)
        w_rows = _picked(op, w, rhs_indices)
        batch = broadcast_shapes(x.shape[:-2], w_rows.shape[:-2], op=op)
        picked = [w_rows] if scales is None else [w_rows, _picked(op, scales, rhs_indices)]
        x, *picked = (shape.broadcast_to(t, (*batch, *t.shape[-2:])) for t in (x, *picked))
        return qqmm_node(x, picked[0], picked[1] if scales is not None else None, global_x,
                         global_w, mode)
