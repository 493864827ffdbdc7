"""Convolutions in MLX's channels-last layout: the `Convolution` primitive and `conv*d`.

Input `[N, *spatial, C_in]`, weight `[C_out, *kernel, C_in / groups]`. Every public function
records one `Convolution` primitive (MLX's), whose kernel is im2col over strided views plus a
matmul, in blocks of bounded scratch, or for inputs that are mostly padding or dilation holes
a sum of matmuls over the taps that read real input. Its derivatives are convolutions again:
the input gradient a transposed convolution, the weight gradient a correlation with batch and
channels swapped. The transposed convolutions and `convolve` live in `conv_transpose.py`.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array, record1
from nuvec.graph.device import Stream, to_stream
from nuvec.graph.primitive import Primitive
from nuvec.ops.arguments import as_array, bool_flag, index_int
from nuvec.ops.binary import add
from nuvec.ops.families import apply, batch_size, move_batch_to_front
from nuvec.ops.shape import moveaxis, reshape, transpose
from nuvec.ops.unary import astype

__all__ = ["conv2d", "conv3d", "conv_general"]

Ints = tuple[int, ...]


def dilated_size(n: int, d: int) -> int:
    return (n - 1) * d + 1 if n else 0


class Convolution(Primitive):
    """y[o] = sum_t x~[o*stride + t*kernel_dilation] . w'[t], where x~ is the input dilated by
    `input_dilation` and padded by (`padding_lo`, `padding_hi`) (negative pads crop) and
    w' the weight, spatially flipped when `flip`; channels mix within `groups`."""

    __slots__ = ("stride", "padding_lo", "padding_hi", "kernel_dilation", "input_dilation",
                 "groups", "flip")

    def __init__(self, stride: Ints, padding_lo: Ints, padding_hi: Ints, kernel_dilation: Ints,
                 input_dilation: Ints, groups: int, flip: bool):
        self.stride, self.padding_lo, self.padding_hi = stride, padding_lo, padding_hi
        self.kernel_dilation, self.input_dilation = kernel_dilation, input_dilation
        self.groups, self.flip = groups, flip

    def params(self):
        return (self.stride, self.padding_lo, self.padding_hi, self.kernel_dilation,
                self.input_dilation, self.groups, self.flip)

    def padded_sizes(self, spatial: Sequence[int]) -> list[int]:
        return [dilated_size(n, di) + lo + hi for n, di, lo, hi in
                zip(spatial, self.input_dilation, self.padding_lo, self.padding_hi)]

    def out_sizes(self, spatial: Sequence[int], kernel: Sequence[int]) -> list[int]:
        return [(length - dilated_size(k, kd)) // s + 1 for length, k, kd, s in
                zip(self.padded_sizes(spatial), kernel, self.kernel_dilation, self.stride)]

    def output_specs(self, inputs):
        x, w = inputs
        out = self.out_sizes(x.shape[1:-1], w.shape[1:-1])
        return (((x.shape[0], *out, w.shape[0]), x.dtype),)

    def vjp(self, primals, cotangents, argnums, outputs):
        x, w = primals
        g = cotangents[0]
        return [self._input_grad(x, w, g) if i == 0 else self._weight_grad(x, w, g)
                for i in argnums]

    def jvp(self, primals, tangents, outputs):
        x, w = primals
        tx, tw = tangents
        parts = []
        if tx is not None:
            parts.append(apply(self, tx, w))
        if tw is not None:
            parts.append(apply(self, x, tw))
        return [parts[0] if len(parts) == 1 else add(*parts)]

    def vmap(self, inputs, axes):
        x, w = inputs
        ax, aw = axes
        if aw is None:
            # Fold the batch into N.
            x = move_batch_to_front(x, ax)
            b, n = x.shape[0], x.shape[1]
            y = apply(self, reshape(x, (b * n, *x.shape[2:])), w)
            return [reshape(y, (b, n, *y.shape[1:]))], [0]
        # A batched weight: fold the batch into the groups (channels ordered batch-major).
        size = batch_size(inputs, axes)
        x = move_batch_to_front(x, ax, size)
        w = move_batch_to_front(w, aw)
        spatial = x.shape[2:-1]
        x = reshape(moveaxis(x, 0, -2), (x.shape[1], *spatial, size * x.shape[-1]))
        w = reshape(w, (size * w.shape[1], *w.shape[2:]))
        folded = Convolution(self.stride, self.padding_lo, self.padding_hi,
                             self.kernel_dilation, self.input_dilation, self.groups * size,
                             self.flip)
        y = apply(folded, x, w)
        y = reshape(y, (*y.shape[:-1], size, y.shape[-1] // size))
        return [moveaxis(y, -2, 0)], [0]

    # -- derivative helpers ----------------------------------------------------------------
    def _input_grad(self, x: Array, w: Array, g: Array) -> Array:
        nd = x.ndim - 2
        kernel = w.shape[1:-1]
        groups = self.groups
        # [C_out, K, Cg_in] -> [C_in, K, Cg_out]: each group's channel roles swap.
        w_t = reshape(w, (groups, w.shape[0] // groups, *kernel, w.shape[-1]))
        w_t = transpose(w_t, (0, nd + 2, *range(2, nd + 2), 1))
        w_t = reshape(w_t, (groups * w.shape[-1], *kernel, w.shape[0] // groups))
        padded = self.padded_sizes(x.shape[1:-1])
        out = g.shape[1:-1]
        lo, hi = [], []
        for i in range(nd):
            span = dilated_size(kernel[i], self.kernel_dilation[i]) - 1
            lo.append(span - self.padding_lo[i])
            hi.append(padded[i] - (out[i] - 1) * self.stride[i] - 1 - self.padding_hi[i])
        back = Convolution(self.input_dilation, tuple(lo), tuple(hi), self.kernel_dilation,
                           self.stride, groups, not self.flip)
        return apply(back, g, w_t)

    def _weight_grad(self, x: Array, w: Array, g: Array) -> Array:
        nd = x.ndim - 2
        kernel = w.shape[1:-1]
        groups, n = self.groups, x.shape[0]
        spatial = x.shape[1:-1]
        cg_in = w.shape[-1]
        # Input as [Cg_in, *spatial, G * N] (batch and channels swapped, groups kept).
        xs = reshape(x, (n, *spatial, groups, cg_in))
        xs = transpose(xs, (nd + 2, *range(1, nd + 1), nd + 1, 0))
        xs = reshape(xs, (cg_in, *spatial, groups * n))
        # Cotangent as the kernel: [C_out, *out, N].
        gs = transpose(g, (nd + 1, *range(1, nd + 1), 0))
        padded = self.padded_sizes(spatial)
        hi = []
        for i in range(nd):
            extra = (padded[i] - dilated_size(kernel[i], self.kernel_dilation[i])
                     - (g.shape[1 + i] - 1) * self.stride[i])
            hi.append(self.padding_hi[i] - extra)
        corr = Convolution(self.kernel_dilation, self.padding_lo, tuple(hi), self.stride,
                           self.input_dilation, groups, False)
        gw = apply(corr, xs, gs)  # [Cg_in, *kernel, C_out]
        gw = transpose(gw, (nd + 1, *range(1, nd + 1), 0))
        if self.flip:
            gw = gw[(slice(None), *(slice(None, None, -1),) * nd, slice(None))]
        return gw


# -- argument handling -----------------------------------------------------------------------
def int_params(op: str, name: str, value: Any, nd: int, low: int) -> Ints:
    """`value` (one int or `nd` ints: Python, NumPy or 0-d arrays) as `nd` ints in
    `[low, 2**31 - 1]`."""
    if isinstance(value, (int, np.integer)) or (isinstance(value, Array) and value.ndim == 0):
        value = (value,) * nd
    try:
        values = tuple(value)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an int or {nd} ints, got {value!r}") from None
    if len(values) != nd:
        raise ValueError(f"{op}: {name} must be an int or {nd} ints, got {value!r}")
    return tuple(index_int(v, op, name, low, 2**31 - 1) for v in values)


def _padding(op: str, padding: Any, nd: int) -> tuple[Ints, Ints]:
    """int, list of ints (symmetric), or a pair (lo list, hi list)."""
    if (isinstance(padding, tuple) and len(padding) == 2
            and all(isinstance(p, (list, tuple)) for p in padding)):
        return (int_params(op, "padding", padding[0], nd, -(2**31)),
                int_params(op, "padding", padding[1], nd, -(2**31)))
    both = int_params(op, "padding", padding, nd, -(2**31))
    return both, both


def conv_inputs(op: str, input: Any, weight: Any, nd: int | None, groups: Any, s: Stream):
    x, w = as_array(input, op), as_array(weight, op)
    if nd is None:
        nd = x.ndim - 2
        if not 1 <= nd <= 3:
            raise ValueError(f"{op}: input must have 3 to 5 dimensions [N, ..., C_in], got "
                             f"shape {x.shape}")
    for a, what in ((x, "input"), (w, "weight")):
        if not a.dtype.is_floating:
            raise DtypeError(f"{op}: {what} must be floating point, got {a.dtype.name}")
    if x.ndim != nd + 2:
        raise ValueError(f"{op}: input must have {nd + 2} dimensions [N, ..., C_in], got "
                         f"shape {x.shape}")
    if w.ndim != nd + 2:
        raise ValueError(f"{op}: weight must have {nd + 2} dimensions [C_out, ..., C_in], got "
                         f"shape {w.shape}")
    groups = index_int(groups, op, "groups", 1, 2**31 - 1)
    if x.shape[-1] % groups or w.shape[0] % groups:
        raise ValueError(f"{op}: input channels {x.shape[-1]} and output channels "
                         f"{w.shape[0]} must be divisible by groups={groups}")
    if x.shape[-1] != groups * w.shape[-1]:
        raise ValueError(f"{op}: input shape {x.shape} has {x.shape[-1]} channels, weight "
                         f"shape {w.shape} with groups={groups} expects {groups * w.shape[-1]}")
    common = dt.promote_types(x.dtype, w.dtype)
    return astype(x, common, stream=s), astype(w, common, stream=s), nd


def record_conv(op: str, x: Array, w: Array, prim: Convolution, s: Stream) -> Array:
    out = prim.out_sizes(x.shape[1:-1], w.shape[1:-1])
    if any(o <= 0 for o in out) or any(k == 0 for k in w.shape[1:-1]):
        raise ValueError(f"{op}: the padded input {tuple(prim.padded_sizes(x.shape[1:-1]))} "
                         f"is smaller than the dilated kernel {w.shape[1:-1]}")
    return record1(prim, (x, w), s)


def conv_general(input: Any, weight: Any, /, stride: int | Sequence[int] = 1,
                 padding: Any = 0, kernel_dilation: int | Sequence[int] = 1,
                 input_dilation: int | Sequence[int] = 1, groups: int = 1, flip: bool = False,
                 *, stream: Any = None) -> Array:
    """General N-d convolution (1 to 3 spatial dimensions), channels last.

    Args:
        input: `[N, *spatial, C_in]`, floating point.
        weight: `[C_out, *kernel, C_in / groups]`, floating point.
        stride: the output step per spatial axis (an int applies to all).
        padding: an int, one int per axis (both sides), or a pair `(lo, hi)` of lists; negative
            values crop.
        kernel_dilation: spacing between kernel taps.
        input_dilation: spacing inserted between input elements (transposed convolutions).
        groups: channel groups; `C_in` and `C_out` must be divisible by it.
        flip: flip the kernel spatially (a true convolution rather than a correlation).
        stream: the stream or device to run on.

    Returns:
        `[N, *out, C_out]` in the promoted dtype.

    Raises:
        ValueError: for wrong ranks, channel counts, groups, or parameters, or an input
            smaller than the dilated kernel.
        TypeError: for non-floating inputs.

    Example:
        >>> import nuvec as mx
        >>> mx.conv_general(mx.ones((1, 4, 1)), mx.ones((1, 2, 1))).shape
        (1, 3, 1)
    """
    s = to_stream(stream)
    x, w, nd = conv_inputs("conv_general", input, weight, None, groups, s)
    lo, hi = _padding("conv_general", padding, nd)
    prim = Convolution(int_params("conv_general", "stride", stride, nd, 1), lo, hi,
                       int_params("conv_general", "kernel_dilation", kernel_dilation, nd, 1),
                       int_params("conv_general", "input_dilation", input_dilation, nd, 1),
                       groups, bool_flag(flip, "conv_general", "flip"))
    return record_conv("conv_general", x, w, prim, s)


def conv_nd(op: str, nd: int, input, weight, stride, padding, dilation, groups, stream) -> Array:
    s = to_stream(stream)
    x, w, nd = conv_inputs(op, input, weight, nd, groups, s)
    pad = int_params(op, "padding", padding, nd, -(2**31))  # negative: cropped, as MLX
    prim = Convolution(int_params(op, "stride", stride, nd, 1), pad, pad,
                       int_params(op, "dilation", dilation, nd, 1), (1,) * nd, groups, False)
    return record_conv(op, x, w, prim, s)


def conv2d(input: Any, weight: Any, /, stride: int | tuple[int, int] = 1,
           padding: int | tuple[int, int] = 0, dilation: int | tuple[int, int] = 1,
           groups: int = 1, *, stream: Any = None) -> Array:
    """2-D convolution over `[N, H, W, C_in]` with `[C_out, KH, KW, C_in / groups]` weights;
    returns `[N, H_out, W_out, C_out]`. Each parameter is an int or a pair.

    Args:
        input: `[N, H, W, C_in]` floating-point input.
        weight: `[C_out, KH, KW, C_in / groups]` filters.
        stride, padding, dilation: the output step, the zeros added on each side and
            the tap spacing, each an int or one per spatial axis.
        groups: the number of channel groups.
        stream: the stream (or device) to record on.

    Raises:
        ValueError: for wrong ranks, channels, groups or parameters.
        TypeError: for non-floating inputs.

    Example:
        >>> import nuvec as mx
        >>> mx.conv2d(mx.ones((1, 4, 4, 1)), mx.ones((2, 3, 3, 1)), stride=2, padding=1).shape
        (1, 2, 2, 2)
    """
    return conv_nd("conv2d", 2, input, weight, stride, padding, dilation, groups, stream)


def conv3d(input: Any, weight: Any, /, stride: int | tuple[int, int, int] = 1,
           padding: int | tuple[int, int, int] = 0, dilation: int | tuple[int, int, int] = 1,
           groups: int = 1, *, stream: Any = None) -> Array:
    """3-D convolution over `[N, D, H, W, C_in]` with `[C_out, KD, KH, KW, C_in / groups]`
    weights; returns `[N, D_out, H_out, W_out, C_out]`.

    Args:
        input: `[N, D, H, W, C_in]` floating-point input.
        weight: `[C_out, KD, KH, KW, C_in / groups]` filters.
        stride, padding, dilation: the output step, the zeros added on each side and
            the tap spacing, each an int or one per spatial axis.
        groups: the number of channel groups.
        stream: the stream (or device) to record on.

    Raises:
        ValueError: for wrong ranks, channels, groups or parameters.
        TypeError: for non-floating inputs.

    Example:
        >>> import nuvec as mx
        >>> mx.conv3d(mx.ones((1, 3, 3, 3, 1)), mx.ones((1, 2, 2, 2, 1))).shape
        (1, 2, 2, 2, 1)
    """
    return conv_nd("conv3d", 3, input, weight, stride, padding, dilation, groups, stream)
