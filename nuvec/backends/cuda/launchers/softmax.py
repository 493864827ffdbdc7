"""Launchers of `softmax.cu` and `cross_entropy.cu`. A row of at most `LONG_ROW` elements is
one block; a longer one is split in chunks of `LONG_ROW` reduced by separate blocks, then
merged by a second launch (so long rows keep the whole device busy)."""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.backends.cuda.launchers.rows import CTYPES, row_block, variants, vec_width
from nuvec.backends.cuda.runner import KernelFile, Runner

__all__ = ["CROSS_ENTROPY", "SOFTMAX", "cross_entropy", "cross_entropy_vjp", "logsumexp",
           "softmax"]

SOFTMAX = KernelFile(
    "softmax", variants(["softmax", "logsumexp", "row_stats", "softmax_finish"])
    + variants(["logsumexp_finish"], False))
CROSS_ENTROPY = KernelFile("cross_entropy", variants(["cross_entropy", "cross_entropy_vjp"]))
# The longest row one block reduces (elements; a multiple of every vector width).
LONG_ROW = 32768


def _rows(runner: Runner, x: Any):
    x = runner.contiguous(x)
    d = x.shape[-1]
    dtype = runner.dtype_of(x)
    return x, x.size // d, d, dtype, vec_width(runner, dtype, d, [x])


def _chunked(runner: Runner, x, rows, d, dtype, vec):
    """The partial (max, sum) pairs of `LONG_ROW`-element chunks: (part, chunks, block)."""
    chunks = -(-d // LONG_ROW)
    part = runner.empty((rows, chunks, 2), "float32")
    block = row_block(LONG_ROW // vec)
    runner.launch(SOFTMAX, f"row_stats<{CTYPES[dtype]}, {vec}>", (chunks, rows), (block,), 0,
                  [x, part, np.uint32(d), np.uint32(LONG_ROW)])
    return part, chunks, block


def _reduce(runner: Runner, kernel: str, x: Any, shape: tuple) -> tuple[Any, Any]:
    """Runs `kernel` (one block per row) when rows are short enough and returns
    `(out, None)`; else returns `(out, (part, chunks, block, vec))` for the finishing launch."""
    x, rows, d, dtype, vec = _rows(runner, x)
    out = runner.empty(shape, dtype)
    if d <= LONG_ROW:
        runner.launch(SOFTMAX, f"{kernel}<{CTYPES[dtype]}, {vec}>", (rows,),
                      (row_block(d // vec),), 0, [x, out, np.uint32(d)])
        return out, None
    return out, (*_chunked(runner, x, rows, d, dtype, vec), vec)


def softmax(runner: Runner, p: Any, x: Any) -> Any:
    """`Softmax` over the last axis."""
    y, long_rows = _reduce(runner, "softmax", x, x.shape)
    if long_rows:
        part, chunks, block, vec = long_rows
        x = runner.contiguous(x)
        runner.launch(SOFTMAX, f"softmax_finish<{CTYPES[runner.dtype_of(x)]}, {vec}>",
                      (chunks, x.size // x.shape[-1]), (block,), 0,
                      [x, part, y, np.uint32(x.shape[-1]), np.uint32(LONG_ROW)])
    return y


def logsumexp(runner: Runner, p: Any, x: Any) -> Any:
    """`LogSumExp` over the last axis (kept as size 1)."""
    out, long_rows = _reduce(runner, "logsumexp", x, (*x.shape[:-1], 1))
    if long_rows:
        part, chunks, _, _ = long_rows
        runner.launch(SOFTMAX, f"logsumexp_finish<{CTYPES[runner.dtype_of(x)]}>",
                      (x.size // x.shape[-1],), (row_block(chunks),), 0,
                      [part, out, np.uint32(chunks)])
    return out


def cross_entropy(runner: Runner, p: Any, x: Any, targets: Any) -> Any:
    """`CrossEntropy`: float32 loss per row (one block per row)."""
    x, rows, d, dtype, vec = _rows(runner, x)
    loss = runner.empty(x.shape[:-1], "float32")
    runner.launch(CROSS_ENTROPY, f"cross_entropy<{CTYPES[dtype]}, {vec}>", (rows,),
                  (row_block(d // vec),), 0,
                  [x, runner.contiguous(targets), loss, np.uint32(d)])
    return loss


def cross_entropy_vjp(runner: Runner, p: Any, x: Any, targets: Any, loss: Any, g: Any) -> Any:
    """`CrossEntropyVjp`: the logits' gradient, elementwise over (chunk, row) blocks."""
    x, rows, d, dtype, vec = _rows(runner, x)
    dx = runner.empty(x.shape, dtype)
    block = row_block(d // vec, 256)
    runner.launch(CROSS_ENTROPY, f"cross_entropy_vjp<{CTYPES[dtype]}, {vec}>",
                  (-(-d // (block * vec)), rows), (block,), 0,
                  [x, runner.contiguous(targets), runner.contiguous(loss),
                   runner.contiguous(g), dx, np.uint32(d)])
    return dx
