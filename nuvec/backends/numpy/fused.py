"""The CPU kernel of `FusedElementwise`: the chain evaluated block by block.

The output is cut into blocks of at most `BLOCK` elements (fewer for small outputs), each a contiguous run of the C-order
output (a range of one axis under fixed indices of the axes before it). Per block, every step
runs its ordinary CPU kernel on the block of its inputs (broadcast views, as the unfused node
sees them) into a small scratch buffer, so the working set stays in cache; the last step
writes into the output. Each step's result is coerced to its dtype as the evaluator does, so
the values are those of the unfused graph, whatever the block size or thread count. Scratch
buffers are reused once their last reader has run. Whole blocks are split over the CPU thread
pool (`nuvec.backends.threads`), each thread with its own scratch buffers.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import product
from typing import Any

import numpy as np

from nuvec.backends.numpy.registry import kernel, table
from nuvec.backends.threads import get_num_threads, parallel_rows
from nuvec.fast.fused import FusedElementwise

__all__ = ["BLOCK", "MIN_BLOCK", "blocks", "fused_elementwise"]


# Elements per block, at most: `python benchmarks/bench_compile.py --blocks` on the 8-op chain
# over [2048, 2048] float32: 4K-16K blocks pay NumPy's per-call cost, 32K-256K are alike within
# the noise; eager fusion's 3-op `exp(x) * w + b` there took 3.4 ms with 64K-element blocks and
# 2.75 ms with 128K or 256K on two threads (`python benchmarks/bench_elementwise.py --fusion`,
# docs/performance.md). Smaller arrays take smaller blocks, down to `MIN_BLOCK`, so that every
# thread of the pool gets a few.
BLOCK = 1 << 18
MIN_BLOCK = 1 << 14


def blocks(shape: tuple[int, ...], size: int = BLOCK) -> Iterator[tuple[tuple[int, ...], slice]]:
    """The blocks of a C-order array of `shape`: (indices of the leading axes, range of the
    next axis), each covering at most `size` elements unless one row of the trailing axes is
    longer; together they cover the array in order.

    Example:
        >>> from nuvec.backends.numpy.fused import blocks
        >>> [(lead, (r.start, r.stop)) for lead, r in blocks((2, 3, 4), 8)]
        [((0,), (0, 2)), ((0,), (2, 3)), ((1,), (0, 2)), ((1,), (2, 3))]
    """
    axis = 0
    while axis < len(shape) - 1 and math.prod(shape[axis + 1:]) > size:
        axis += 1
    rows = max(1, size // math.prod(shape[axis + 1:]))
    for lead in product(*(range(n) for n in shape[:axis])):
        for start in range(0, shape[axis], rows):
            yield lead, slice(start, min(start + rows, shape[axis]))


def _slots(p: FusedElementwise, n_inputs: int) -> list[int]:
    """A scratch buffer for every step but the last (which writes the output): buffer k is
    reused by a later step of its dtype once every reader of its value has run."""
    last_read: dict[int, int] = {}
    for j, (_, refs, _) in enumerate(p.steps):
        for r in refs:
            if r >= n_inputs:
                last_read[r - n_inputs] = j
    released: list[list[int]] = [[] for _ in p.steps]  # values whose last reader is step j
    for step, reader in last_read.items():
        released[reader].append(step)
    slots: list[int] = []
    dtypes: list[np.dtype] = []
    free: dict[np.dtype, list[int]] = {}
    for j, (_, _, dtype) in enumerate(p.steps[:-1]):
        pool = free.setdefault(dtype.np, [])
        if pool:
            slots.append(pool.pop())
        else:
            slots.append(len(dtypes))
            dtypes.append(dtype.np)
        # after step j has run (never before: its output must not alias its inputs)
        for step in released[j]:
            free.setdefault(dtypes[slots[step]], []).append(slots[step])
    return slots


def _coerce_into(target: np.ndarray, result: Any) -> None:
    """A kernel result stored as the evaluator stores it (`astype` to the node's dtype)."""
    result = np.asarray(result)
    if result.dtype != target.dtype:
        result = result.astype(target.dtype)
    np.copyto(target, result)


def _run_blocks(p: FusedElementwise, views: list[np.ndarray], flat: np.ndarray,
                plan: list[tuple[tuple[int, ...], slice]], block_shape: tuple[int, ...]) -> None:
    """Computes the output blocks of `plan` with scratch buffers of its own (one thread's)."""
    slots = _slots(p, len(views))
    scratch: dict[int, np.ndarray] = {}
    for j, k in enumerate(slots):
        if k not in scratch:
            scratch[k] = np.empty(block_shape, p.steps[j][2].np)
    calls = [(table.kernels[type(q)], type(q) in table.writes_into, q, refs)
             for q, refs, _ in p.steps]
    for lead, rows in plan:
        index = (*lead, rows)
        target = flat[index]
        partial = target.shape[0] != block_shape[0]
        buffers = [scratch[k][: target.shape[0]] if partial else scratch[k] for k in slots]
        buffers.append(target)
        values = [v[index] for v in views]
        for (fn, takes_out, q, refs), buffer in zip(calls, buffers):
            args = [values[r] for r in refs]
            result = fn(q, *args, out=buffer) if takes_out else fn(q, *args)
            if result is not buffer:
                _coerce_into(buffer, result)
            values.append(buffer)


@kernel(FusedElementwise)
def fused_elementwise(p: FusedElementwise, *inputs: np.ndarray) -> np.ndarray:
    out = np.empty(p.shape, p.steps[-1][2].np)
    if out.size == 0:
        return out
    shape = p.shape or (1,)
    flat = out.reshape(shape)
    # broadcast views, as the unfused graph's broadcast nodes give them to its kernels
    views = [x if x.shape == shape else np.broadcast_to(x, shape) for x in inputs]
    # BLOCK is read at each call (benchmarks and tests vary it)
    size = min(BLOCK, max(MIN_BLOCK, out.size // (4 * get_num_threads())))
    plan = list(blocks(shape, size))
    block_shape = flat[(*plan[0][0], plan[0][1])].shape
    # blocks are independent: whole blocks go to the pool's threads, each with its scratch
    work = math.prod(block_shape) * sum(d.np.itemsize for _, _, d in p.steps)
    parallel_rows(len(plan), lambda a, b: _run_blocks(p, views, flat, plan[a:b], block_shape),
                  row_bytes=work)
    return out
