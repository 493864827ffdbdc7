"""Shared body of `nuvec.ops.conv`: im2col over strided window views, then one matmul."""

from __future__ import annotations

import math

import numpy as np

from nuvec.backends.common.registry import body
from nuvec.ops import conv as cv


def _prepare_input(xp, p, x):
    """The input dilated by `input_dilation`, padded (negative pads crop)."""
    nd = x.ndim - 2
    if any(d > 1 for d in p.input_dilation):
        shape = [x.shape[0], *(cv.dilated_size(n, d) for n, d in
                               zip(x.shape[1:-1], p.input_dilation)), x.shape[-1]]
        spread = xp.zeros(shape, x.dtype)
        spread[(slice(None), *(slice(None, None, d) for d in p.input_dilation))] = x
        x = spread
    crop = [slice(None)] * x.ndim
    pads = [(0, 0)] * x.ndim
    for i in range(nd):
        lo, hi = p.padding_lo[i], p.padding_hi[i]
        crop[1 + i] = slice(max(-lo, 0), x.shape[1 + i] - max(-hi, 0))
        pads[1 + i] = (max(lo, 0), max(hi, 0))
    x = x[tuple(crop)]
    if any(lo or hi for lo, hi in pads):
        x = xp.pad(x, pads)
    return x


@body(cv.Convolution)
def convolution(xp, p, x, w):
    if x.dtype.itemsize == 2:  # half types compute in float32; the evaluator casts back
        x, w = x.astype(np.float32), w.astype(np.float32)
    nd = x.ndim - 2
    kernel_shape = w.shape[1:-1]
    x = _prepare_input(xp, p, x)
    spans = [cv.dilated_size(k, d) for k, d in zip(kernel_shape, p.kernel_dilation)]
    axes = tuple(range(1, nd + 1))
    windows = xp.lib.stride_tricks.sliding_window_view(x, spans, axis=axes)  # [N, *pos, C, *span]
    windows = windows[(slice(None), *(slice(None, None, s) for s in p.stride), slice(None),
                       *(slice(None, None, d) for d in p.kernel_dilation))]
    if p.flip:
        w = w[(slice(None), *(slice(None, None, -1),) * nd, slice(None))]
    n, out = windows.shape[0], windows.shape[1: nd + 1]
    groups, c_out = p.groups, w.shape[0]
    cg_in = w.shape[-1]
    m = n * math.prod(out)
    k = math.prod(kernel_shape) * cg_in
    # Columns as [M, G, *kernel, Cg_in] so that the channel runs stay contiguous in the copy.
    cols = windows.reshape(n, *out, groups, cg_in, *kernel_shape)
    cols = cols.transpose(*range(nd + 1), nd + 1, *range(nd + 3, 2 * nd + 3), nd + 2)
    cols = cols.reshape(m, groups, k)
    weights = w.reshape(groups, c_out // groups, *kernel_shape, cg_in).reshape(groups,
                                                                               c_out // groups, k)
    if groups == 1:
        result = cols[:, 0, :] @ weights[0].T
    else:
        result = xp.matmul(cols.transpose(1, 0, 2), weights.transpose(0, 2, 1))
        result = result.transpose(1, 0, 2).reshape(m, c_out)
    return result.reshape(n, *out, c_out)
