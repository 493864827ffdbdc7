"""Launchers of `conv1d.cu` (depthwise convolution) and `paged_write.cu`: one thread per
output element."""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.backends.cuda.launchers.rows import CTYPES, variants
from nuvec.backends.cuda.runner import KernelFile, Runner

__all__ = ["CONV1D", "PAGED_WRITE", "depthwise_conv1d", "paged_write"]

CONV1D = KernelFile("conv1d", variants(["depthwise_conv1d"], False))
PAGED_WRITE = KernelFile("paged_write", variants(["paged_write"], False))
BLOCK = 256


def depthwise_conv1d(runner: Runner, p: Any, x: Any, w: Any) -> Any:
    """`DepthwiseConv1d(stride, padding, dilation)`: `x [N, L, C]`, `w [C, K, 1]`."""
    x, w = runner.contiguous(x), runner.contiguous(w)
    dtype = runner.dtype_of(x)
    n, length, c = x.shape
    taps = w.shape[1]
    out_length = (length + 2 * p.padding - p.dilation * (taps - 1) - 1) // p.stride + 1
    y = runner.empty((n, out_length, c), dtype)
    total = y.size
    runner.launch(CONV1D, f"depthwise_conv1d<{CTYPES[dtype]}>", (-(-total // BLOCK),),
                  (BLOCK,), 0,
                  [x, w, y, np.uint32(total), np.uint32(length), np.uint32(c),
                   np.uint32(taps), np.uint32(out_length), np.int32(p.stride),
                   np.int32(p.padding), np.int32(p.dilation)])
    return y


def paged_write(runner: Runner, p: Any, cache: Any, new: Any, slots: Any, *,
                out: Any = None) -> Any:
    """`PagedWrite`: a copy of `cache` with token `t` of `new` at slot `slots[t]`, or `cache`
    written in place when it is `out` (a buffer the caller gives up)."""
    cache = runner.contiguous(cache)
    if out is None or runner.address(out) != runner.address(cache):
        out = runner.xp.array(cache, copy=True)
    new = runner.contiguous(new)
    dtype = runner.dtype_of(out)
    blocks, heads, block_size, d = out.shape
    total = new.size
    if total:
        runner.launch(PAGED_WRITE, f"paged_write<{CTYPES[dtype]}>", (-(-total // BLOCK),),
                      (BLOCK,), 0,
                      [out, new, runner.contiguous(slots), np.uint32(total), np.uint32(heads),
                       np.uint32(d), np.uint32(block_size), np.uint32(blocks * block_size)])
    return out
