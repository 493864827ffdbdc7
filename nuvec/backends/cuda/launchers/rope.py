"""Launchers of `rope.cu` and `norm_rope.cu`: one block per row, a thread per rotated pair
(and per copied feature)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nuvec.backends.cuda.launchers.rows import CTYPES, row_block, variants
from nuvec.backends.cuda.runner import KernelFile, Runner

__all__ = ["NORM_ROPE", "ROPE", "norm_rope", "rope"]

ROPE = KernelFile("rope", variants(["rope"], False))
NORM_ROPE = KernelFile("norm_rope", variants(["norm_rope"], False))


def _frequencies(runner: Runner, p: Any, freqs: tuple) -> tuple[Any, np.float32, np.int32]:
    """(freqs buffer, float32(log(base) / half), has_freqs)."""
    half = p.dims // 2
    if freqs:
        return runner.contiguous(freqs[0]), np.float32(0.0), np.int32(1)
    dummy = runner.empty((1,), "float32")
    return dummy, np.float32(math.log(p.base) / half), np.int32(0)


def rope(runner: Runner, p: Any, x: Any, offset: Any, *freqs: Any) -> Any:
    """`Rope(dims, traditional, base, scale, forward)` of `x [B, ..., T, D]`."""
    x = runner.contiguous(x)
    dtype = runner.dtype_of(x)
    t, d = x.shape[-2], x.shape[-1]
    rows = x.size // d
    offsets = runner.contiguous(offset).reshape(-1)
    f, lbh, has_freqs = _frequencies(runner, p, freqs)
    y = runner.empty(x.shape, dtype)
    work = p.dims // 2 + d - p.dims
    runner.launch(ROPE, f"rope<{CTYPES[dtype]}>", (rows,), (row_block(work, 256),), 0,
                  [x, offsets.view(np.int32) if offsets.dtype != np.int32 else offsets, f, y,
                   np.uint32(t), np.uint32(d), np.uint32(p.dims),
                   np.uint32(rows // x.shape[0]), np.int32(offsets.size),
                   np.int32(runner.dtype_of(offsets) == "uint32"), lbh, np.float32(p.scale),
                   np.int32(p.traditional), np.int32(p.forward), has_freqs])
    return y


def norm_rope(runner: Runner, p: Any, *inputs: Any, out: Any = None) -> Any:
    """`NormRope`: `([cache,] x, w[, freqs])`.

    `out`: a buffer of the output's shape and dtype that the caller gives up (an input nothing
    else sees). The cache itself is written in place (no copy); without a cache, `x`'s buffer
    may be the output (each block reads its row before writing it). Any other `out` is
    ignored.
    """
    at = int(p.cache)
    x, w = runner.contiguous(inputs[at]), runner.contiguous(inputs[at + 1])
    dtype = runner.dtype_of(x)
    b, h, length, d = x.shape
    if p.cache:
        cache = runner.contiguous(inputs[0])
        if out is None or runner.address(out) != runner.address(cache):
            out = runner.xp.array(cache, copy=True)
        s_len, out_offset = out.shape[2], p.offset
    else:
        if out is None or runner.address(out) != runner.address(x):
            out = runner.empty(x.shape, dtype)
        s_len, out_offset = length, 0
    f, lbh, has_freqs = _frequencies(runner, p, inputs[at + 2:])
    work = max(p.dims // 2 + d - p.dims, -(-d // 2))
    runner.launch(NORM_ROPE, f"norm_rope<{CTYPES[dtype]}>", (b * h * length,),
                  (row_block(work, 512),), 0,
                  [x, w, f, out, np.uint32(length), np.uint32(d), np.uint32(p.dims),
                   np.uint32(s_len), np.uint32(out_offset), np.uint32(p.offset),
                   np.float32(p.eps or 0.0), np.int32(p.eps is not None), lbh,
                   np.float32(p.scale), np.int32(p.traditional), has_freqs])
    return out
