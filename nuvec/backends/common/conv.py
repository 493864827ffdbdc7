"""Shared body of `nuvec.ops.conv`, in one of two formulations chosen by cost.

- Dense: im2col over strided window views of the dilated, padded input, then a matmul, in
  blocks of output positions whose columns stay under `SCRATCH_BYTES`.
- Sparse, for inputs that are mostly padding or dilation holes (large paddings, transposed
  convolutions with large kernels or strides): per axis, a loop over kernel taps or input
  positions (the fewer), each step one matmul added into the outputs that read real input.
  Its scratch is bounded by the sizes of the weight and the output.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from nuvec.backends.common.registry import body
from nuvec.ops import conv as cv

SCRATCH_BYTES = 1 << 27  # im2col columns per block
STEP_COST = 1 << 15  # a sparse step's fixed cost, in elements moved
PADDED_RATIO = 16  # im2col's padded input at most this many times the input and output


def _prepare_input(xp, p, x):
    """The input dilated by `input_dilation`, padded, then cropped by the negative pads."""
    nd = x.ndim - 2
    if any(d > 1 for d in p.input_dilation):
        shape = [x.shape[0], *(cv.dilated_size(n, d) for n, d in
                               zip(x.shape[1:-1], p.input_dilation)), x.shape[-1]]
        spread = xp.zeros(shape, x.dtype)
        spread[(slice(None), *(slice(None, None, d) for d in p.input_dilation))] = x
        x = spread
    pads = [(0, 0)] * x.ndim
    for i in range(nd):
        pads[1 + i] = (max(p.padding_lo[i], 0), max(p.padding_hi[i], 0))
    if any(lo or hi for lo, hi in pads):
        x = xp.pad(x, pads)
    # then crop: a crop past the input removes zeros of the other side's padding
    crop = [slice(None)] * x.ndim
    for i in range(nd):
        lo, hi = p.padding_lo[i], p.padding_hi[i]
        crop[1 + i] = slice(max(-lo, 0), x.shape[1 + i] - max(-hi, 0))
    return x[tuple(crop)]


def _progression(start: int, count: int, step: int) -> slice:
    """The slice of `count` indices from `start` by `step`."""
    return slice(start, start + (count - 1) * step + 1, step)


def _axis_steps(n: int, k: int, out: int, stride: int, kd: int, idil: int, lo: int):
    """One axis's sparse steps. Output `o` reads input `j` through tap `t` where
    `o*stride + t*kd == lo + j*idil`. Loops over taps when `k <= n`, else over inputs.

    Returns:
        `(by_tap, steps)`: `steps` lists `(output slice, input slice or index, tap index or
        slice)` for every loop value that reaches an output; looping over inputs, the
        tap slice indexes the kernel reversed (its outputs run up as its taps run down).
    """
    by_tap = k <= n
    # Fixing the loop value leaves a*v == c (mod stride) for the other variable v.
    a, loop_range = (idil, k) if by_tap else (kd, n)
    g = math.gcd(stride, a)
    period, o_step = stride // g, a // g
    inverse = pow(a // g, -1, period)
    steps = []
    for fixed in range(loop_range):
        if by_tap:  # o*stride == c + j*idil
            c = lo - fixed * kd
            if c % g:
                continue
            first = (-c // g) * inverse % period
            low = max(0, -(c // idil))  # o >= 0
            high = min(n - 1, (out * stride - c - 1) // idil)  # o < out
        else:  # o*stride == c - t*kd; t runs down so that o runs up
            c = lo + fixed * idil
            if c % g:
                continue
            first = (c // g) * inverse % period
            low = max(0, (c - out * stride) // kd + 1)
            high = min(k - 1, c // kd)
        if high < low:
            continue
        start = low + (first - low) % period
        if start > high:
            continue
        count = (high - start) // period + 1
        if by_tap:
            o_first = (c + start * idil) // stride
            steps.append((_progression(o_first, count, o_step),
                          _progression(start, count, period), fixed))
        else:
            last = start + (count - 1) * period
            o_first = (c - last * kd) // stride
            steps.append((_progression(o_first, count, o_step), fixed,
                          _progression(k - 1 - last, count, period)))
    return by_tap, steps


def _sparse(xp, p, x, w, out):
    """The sparse formulation; `w` already flipped if `p.flip`."""
    nd, n, groups = x.ndim - 2, x.shape[0], p.groups
    c_out, cg_in = w.shape[0], w.shape[-1]
    cg_out = c_out // groups
    plans = [_axis_steps(x.shape[1 + i], w.shape[1 + i], out[i], p.stride[i],
                         p.kernel_dilation[i], p.input_dilation[i], p.padding_lo[i])
             for i in range(nd)]
    taps = [i for i in range(nd) if plans[i][0]]
    inputs = [i for i in range(nd) if not plans[i][0]]
    # block axes: G, N, tap axes (input slices), input axes (tap slices), Cg_out
    order = [2 + (taps.index(i) if i in taps else len(taps) + inputs.index(i))
             for i in range(nd)]
    xg = x.reshape(n, *x.shape[1:-1], groups, cg_in)
    wg = w[(slice(None), *(slice(None, None, -1) if i in inputs else slice(None)
                           for i in range(nd)))]
    wg = wg.reshape(groups, cg_out, *w.shape[1:-1], cg_in)  # then [G, Cg_in, *K, Cg_out]:
    wg = xp.ascontiguousarray(wg.transpose(0, nd + 2, *range(2, nd + 2), 1))
    y = xp.zeros((n, *out, groups, cg_out), x.dtype)
    for step in itertools.product(*(steps for _, steps in plans)):
        xs = xg[(slice(None), *(s[1] for s in step))]  # [N, *A, G, Cg_in]
        ws = wg[(slice(None), slice(None), *(s[2] for s in step))]  # [G, Cg_in, *B, Cg_out]
        a_shape, b_shape = xs.shape[1:-2], ws.shape[2:-1]
        rows = xs.reshape(n * math.prod(a_shape), groups, cg_in).transpose(1, 0, 2)
        block = xp.matmul(rows, ws.reshape(groups, cg_in, math.prod(b_shape) * cg_out))
        block = block.reshape(groups, n, *a_shape, *b_shape, cg_out)
        y[(slice(None), *(s[0] for s in step))] += block.transpose(1, *order, 0, nd + 2)
    return y.reshape(n, *out, c_out)


def _prefers_sparse(p, x, w, out) -> bool:
    """Whether to skip im2col: when its padded input would outgrow `PADDED_RATIO` times the
    input and output together, or when the sparse form moves fewer elements (per input
    channel: the (output, tap) pairs it visits, against im2col's columns and padded input; a
    fixed cost per step)."""
    n, c = x.shape[0], x.shape[-1]
    kernel, spatial = w.shape[1:-1], x.shape[1:-1]
    padded = n * c * math.prod(p.padded_sizes(spatial))
    if padded > PADDED_RATIO * (x.size + n * math.prod(out) * w.shape[0]):
        return True
    pairs = steps = 1
    for i in range(x.ndim - 2):
        span, stride = cv.dilated_size(kernel[i], p.kernel_dilation[i]), p.stride[i]
        # at most: each input meets ceil(span / stride) outputs, each output `kernel` taps
        pairs *= min(spatial[i] * min(out[i], -(-span // stride)), out[i] * kernel[i])
        steps *= min(spatial[i], kernel[i])
    dense = n * c * math.prod(out) * math.prod(kernel) + padded
    return 2 * n * c * pairs + steps * STEP_COST < dense


@body(cv.Convolution)
def convolution(xp, p, x, w):
    if x.dtype.itemsize == 2:  # half types compute in float32; the evaluator casts back
        x, w = x.astype(np.float32), w.astype(np.float32)
    nd = x.ndim - 2
    kernel_shape = w.shape[1:-1]
    out = p.out_sizes(x.shape[1:-1], kernel_shape)
    if p.flip:
        w = w[(slice(None), *(slice(None, None, -1),) * nd, slice(None))]
    if _prefers_sparse(p, x, w, out):
        return _sparse(xp, p, x, w, out)
    x = _prepare_input(xp, p, x)
    spans = [cv.dilated_size(k, d) for k, d in zip(kernel_shape, p.kernel_dilation)]
    axes = tuple(range(1, nd + 1))
    windows = xp.lib.stride_tricks.sliding_window_view(x, spans, axis=axes)  # [N, *pos, C, *span]
    windows = windows[(slice(None), *(slice(None, None, s) for s in p.stride), slice(None),
                       *(slice(None, None, d) for d in p.kernel_dilation))]
    groups, c_out = p.groups, w.shape[0]
    cg_in = w.shape[-1]
    k = math.prod(kernel_shape) * cg_in
    weights = w.reshape(groups, c_out // groups, k)
    result = xp.empty((x.shape[0], *out, c_out), x.dtype)
    for index in _blocks(result.shape[:-1], groups * k * x.dtype.itemsize):
        block = windows[index]  # [*lead, C, *kernel]
        lead = block.shape[: block.ndim - nd - 1]
        rows, nl = math.prod(lead), len(lead)
        # Columns as [rows, G, *kernel, Cg_in] so that the channel runs stay contiguous.
        cols = block.reshape(*lead, groups, cg_in, *kernel_shape)
        cols = cols.transpose(*range(nl + 1), *range(nl + 2, nl + nd + 2), nl + 1)
        cols = cols.reshape(rows, groups, k)
        target = result[index].reshape(rows, groups, c_out // groups)
        if groups == 1:
            xp.matmul(cols[:, 0, :], weights[0].T, out=target[:, 0, :])
        else:
            target[...] = xp.matmul(cols.transpose(1, 0, 2),
                                    weights.transpose(0, 2, 1)).transpose(1, 0, 2)
    return result


def _blocks(lead, row_bytes: int):
    """Indices splitting the leading axes `lead` ([N, *out]) into blocks of at most
    `SCRATCH_BYTES` of columns (`row_bytes` each), a single position at the least."""
    axis = 0
    while axis < len(lead) - 1 and math.prod(lead[axis + 1:]) * row_bytes > SCRATCH_BYTES:
        axis += 1
    size = max(1, SCRATCH_BYTES // max(1, math.prod(lead[axis + 1:]) * row_bytes))
    for outer in itertools.product(*map(range, lead[:axis])):
        for start in range(0, lead[axis], size):
            yield (*outer, slice(start, start + size))
