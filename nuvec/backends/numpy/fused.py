"""The CPU kernel of `FusedElementwise`: the chain evaluated block by block.

The output is cut into blocks of at most `BLOCK` elements (fewer for smaller outputs, so that
every thread gets a few), each a contiguous run of the C-order output (a range of one axis
under fixed indices of the axes before it). Per block, every step
runs its ordinary CPU kernel on the block of its inputs (broadcast views, as the unfused node
sees them) into a small scratch buffer, so the working set stays in cache; the last step
writes into the output. Each step's result is coerced to its dtype as the evaluator does, so
the values are those of the unfused graph, whatever the block size or thread count. Scratch
buffers are reused once their last reader has run. Whole blocks are split over the CPU thread
pool (`nuvec.backends.threads`), each thread with its own scratch buffers. Outputs of up to
`WHOLE` elements skip the blocks: each step runs once over the whole arrays.

The kernel takes `out=`: an input buffer the evaluator gives up (the old value of an updated
array), which the last step writes into when the steps run once over the whole arrays (its one
call fails, if at all, before writing: a chain that fails is recomputed unfused from its
inputs). `c + s * x`, `s * x + c` and `c - s * x` with `s` one value (an optimizer's update)
run as one BLAS `axpy` into `c`'s buffer (or a copy of it) where the BLAS allows
(`nuvec.backends.numpy.blas`): one pass instead of two, most elements rounded once (fused
multiply-adds) rather than twice.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import product
from typing import Any

import numpy as np

from nuvec.backends import native, vector_math
from nuvec.backends.common.unary import derivative_product
from nuvec.backends.numpy import blas, native_fused
from nuvec.backends.numpy.broadcast import broadcast
from nuvec.backends.numpy.registry import kernel, table
from nuvec.backends.threads import get_num_threads, parallel_rows
from nuvec.fast.fused import FusedElementwise, ProductUpdate, fetcher, scaled_add_refs
from nuvec.graph import eager
from nuvec.ops.binary import Multiply
from nuvec.ops.unary import DerivativeProduct

__all__ = ["BLOCK", "MIN_AXPY", "MIN_BLOCK", "WHOLE", "blocks", "fused_elementwise",
           "product_update"]


# Elements per block, at most: `python benchmarks/bench_compile.py --blocks` on the 8-op chain
# over [2048, 2048] float32: 4K-16K blocks pay NumPy's per-call cost, 32K-256K are alike within
# the noise; eager fusion's 3-op `exp(x) * w + b` there took 3.4 ms with 64K-element blocks and
# 2.75 ms with 128K or 256K on two threads (`python benchmarks/bench_elementwise.py --fusion`,
# docs/performance.md). Smaller arrays take smaller blocks, down to `MIN_BLOCK`, so that every
# thread of the pool gets a few.
BLOCK = 1 << 18
MIN_BLOCK = 1 << 14

# Up to WHOLE / 4 output elements (up to WHOLE for chains of at most 4 steps) the steps run
# once each over the whole arrays (one call per step, no blocks, no scratch): arrays this small
# stay in the last-level cache between steps, so blocks would save little memory traffic and
# cost NumPy's per-call time once per block (the 3-op relu gradient on [256, 512] took 1.3x
# its unfused time in 64K blocks, the 2-op SGD update on 1M elements 1.7x). Long chains on
# larger arrays keep the blocks (the 256-op chain on 1M elements: 0.76x unfused in blocks,
# 1.06x whole). A step's value is dropped after its last reader, as the unfused graph frees it.
WHOLE = 1 << 20

# Scaled adds of fewer elements run as NumPy's two calls: binding a BLAS call through `ctypes`
# costs about 10 us (`ndarray.ctypes` alone 3 us on the Zen 3 machine of docs/performance.md),
# more than NumPy's multiply and subtract over a few thousand elements. A compiled update of
# [16K] float32 took 49 us either way, of [64K] 55 us through `axpy` in place and 70 us as
# two calls, of [512] 45 and 43 (the kernel's own time; `_axpy` into a copy is no faster there
# than the two calls at any size, but rounds once, as eager fusion's small chains do).
MIN_AXPY = 1 << 14


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


def _last_reads(p: FusedElementwise) -> dict[int, int]:
    """{ref: the last step reading it} over `p`'s refs (inputs and steps' values)."""
    last: dict[int, int] = {}
    for j, (_, refs, _) in enumerate(p.steps):
        for r in refs:
            last[r] = j
    return last


def _slots(p: FusedElementwise, n_inputs: int) -> list[int]:
    """A scratch buffer for every step but the last (which writes the output): buffer k is
    reused by a later step of its dtype once every reader of its value has run."""
    released: list[list[int]] = [[] for _ in p.steps]  # values whose last reader is step j
    for r, reader in _last_reads(p).items():
        if r >= n_inputs:
            released[reader].append(r - n_inputs)
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


def _scratch(shape: tuple[int, ...], dtype: np.dtype, whole: int) -> np.ndarray:
    """A block's scratch buffer; for an output of at least `vector_math.MIN_ELEMENTS` elements
    a view of a buffer of at least that many, so that `exp` and `tanh` of the block's values
    take the path of the whole output's (`nuvec.backends.vector_math`) for any block size."""
    n = math.prod(shape)
    if whole < vector_math.MIN_ELEMENTS or n >= vector_math.MIN_ELEMENTS:
        return np.empty(shape, dtype)
    return np.empty(vector_math.MIN_ELEMENTS, dtype)[:n].reshape(shape)


def _run_blocks(p: FusedElementwise, views: list[np.ndarray], flat: np.ndarray,
                plan: list[tuple[tuple[int, ...], slice]], block_shape: tuple[int, ...]) -> None:
    """Computes the output blocks of `plan` with scratch buffers of its own (one thread's)."""
    slots = _slots(p, len(views))
    scratch: dict[int, np.ndarray] = {}
    for j, k in enumerate(slots):
        if k not in scratch:
            scratch[k] = _scratch(block_shape, p.steps[j][2].np, flat.size)
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
                if (buffer is not target and type(result) is np.ndarray
                        and result.dtype == buffer.dtype and result.shape == buffer.shape):
                    # a kernel without `out=` (a comparison, a cast) made a fresh block of
                    # the step's dtype: read it as it is rather than copy it into scratch
                    values.append(result)
                    continue
                _coerce_into(buffer, result)
            values.append(buffer)


# (id(primitive), inputs) -> (primitive, its `_whole_plan`): a compiled program replays the
# same primitive at every call (the entry holds it, so the id is not reused meanwhile)
_plans: dict[tuple[int, int], tuple[FusedElementwise, list[tuple]]] = {}


def _whole_plan(p: FusedElementwise, n_inputs: int) -> list[tuple]:
    """Per step: its kernel, whether it takes `out=`, the primitive, the fetcher of its
    arguments, its dtype, the values it reads last (dropped after it), and one of those it may
    write into (an earlier step's value of its dtype, or None)."""
    key = (id(p), n_inputs)
    found = _plans.get(key)
    if found is not None and found[0] is p:
        return found[1]
    last = _last_reads(p)
    plan = []
    for j, (q, refs, dtype) in enumerate(p.steps):
        dead = sorted({r for r in refs if last[r] == j})
        takes_out = type(q) in table.writes_into
        into = next((r for r in dead if r >= n_inputs and takes_out
                     and p.steps[r - n_inputs][2] == dtype), None)
        plan.append((table.kernels[type(q)], takes_out, q, fetcher(refs), dtype.np, tuple(dead),
                     into))
    if len(_plans) >= 256:
        _plans.clear()
    _plans[key] = (p, plan)
    return plan


def _run_whole(p: FusedElementwise, values: list[Any], out: np.ndarray | None) -> np.ndarray:
    """Each step once over the whole arrays (the inputs, broadcast to the output's shape), as
    the unfused nodes run: a step's value is dropped after its last reader, and a step whose
    kernel takes `out=` writes into a value only it still reads, as the evaluator donates (the
    last step into `out`, if given)."""
    result = None
    plan = _whole_plan(p, len(values))
    last = len(plan) - 1
    owned = [False] * (len(values) + len(plan))  # values that are buffers of this call's making
    for j, (fn, takes_out, q, fetch, dtype, dead, into) in enumerate(plan):
        args = fetch(values)
        if j == last and out is not None and takes_out:
            result, mine = fn(q, *args, out=out), False
        elif into is not None and owned[into]:
            target = values[into]
            result = fn(q, *args, out=target)
            mine = result is target  # the buffer stays this call's, now as this step's value
        else:
            result, mine = fn(q, *args), None
        if type(result) is not np.ndarray or (result.dtype is not dtype
                                               and result.dtype != dtype):
            result, mine = np.asarray(result).astype(dtype), True  # (`astype` copies)
        elif mine is None:  # a fresh array, unless the kernel gave back a view or an input
            mine = (result.base is None and result.flags.writeable
                    and (result is not args[0] and result is not args[-1] if 0 < len(args) < 3
                         else all(result is not a for a in args)))
        owned[len(values)] = mine
        values.append(result)
        for r in dead:
            values[r] = None
            owned[r] = False
    return result


def _one_value(x: np.ndarray) -> bool:
    """Whether `x` holds one value (a size-1 array, or a broadcast of one)."""
    return x.size == 1 or not any(x.strides)


def _axpy_operands(p: FusedElementwise, inputs: list[Any]) -> tuple[int, Any, float] | None:
    """(position of `c`, `x`, `alpha`) where `p` on `inputs` is `c + alpha * x`: a scaled add
    (`scaled_add_refs`) of one value and two C-contiguous arrays of `p`'s shape, all of its
    dtype; None otherwise (or where an input is None)."""
    complete = len(inputs) == 3 and all(v is not None for v in inputs)
    refs = scaled_add_refs(p) if complete else None
    if refs is None:
        return None
    c, i, j, sign = refs
    scale, x = (inputs[i], inputs[j]) if _one_value(inputs[i]) else (inputs[j], inputs[i])
    target, shape, dtype = inputs[c], p.shape or (1,), p.steps[-1][2].np
    if (not _one_value(scale) or x.shape != shape or target.shape != shape
            or not x.flags.c_contiguous or not target.flags.c_contiguous
            or not x.dtype == scale.dtype == target.dtype == dtype):
        return None
    return c, x, sign * float(scale.item(0))


def _axpy(p: FusedElementwise, views: list[np.ndarray], out: np.ndarray | None
          ) -> np.ndarray | None:
    """A scaled add by one value as one BLAS pass: `axpy` into `out` when it is `c`'s buffer,
    `axpby` into `out` when it is the other factor's (an optimizer's gradient: `out = c +
    alpha * out`), else `axpy` into a copy of `c`; None where the program, values or layouts
    are not of that form."""
    operands = _axpy_operands(p, views) if math.prod(p.shape) >= MIN_AXPY else None
    if operands is None or not blas.available():
        return None
    c, x, alpha = operands
    if out is x:  # (x is an input array, never None)
        return out if blas.axpby(1.0, views[c], alpha, out) else None
    if out is None:
        out = views[c].copy()
    elif out is not views[c]:  # a buffer of neither: the general path
        return None
    return out if blas.axpy(alpha, x, out) else None


@kernel(FusedElementwise, out=True)
def fused_elementwise(p: FusedElementwise, *inputs: np.ndarray,
                      out: np.ndarray | None = None) -> np.ndarray:
    shape = p.shape or (1,)
    # broadcast views, as the unfused graph's broadcast nodes give them to its kernels
    views = [x if x.shape == shape else broadcast(x, shape) for x in inputs]
    size = math.prod(shape)
    if not p.shape:  # a 0-d output is never large enough to be given a buffer
        out = None
    result = _axpy(p, views, out)
    if result is None:
        result = native_fused.run(p, views, out)  # (from native_fused.MIN_ELEMENTS elements)
    if result is not None:
        return result if p.shape else result.reshape(())
    if 0 < size <= WHOLE and (len(p.steps) <= 4 or size <= WHOLE // 4):  # (tests vary WHOLE)
        result = _run_whole(p, views, out)
        return result if p.shape else result.reshape(())
    # blocks write the output one after another: a buffer given up is left alone, so that if a
    # block fails the evaluator recomputes the chain unfused from intact inputs
    out = np.empty(p.shape, p.steps[-1][2].np)
    if size == 0:
        return out
    flat = out.reshape(shape)
    # BLOCK is read at each call (benchmarks and tests vary it)
    block = min(BLOCK, max(MIN_BLOCK, size // (4 * get_num_threads())))
    plan = list(blocks(shape, block))
    block_shape = flat[(*plan[0][0], plan[0][1])].shape
    # blocks are independent: whole blocks go to the pool's threads, each with its scratch
    work = math.prod(block_shape) * sum(d.np.itemsize for _, _, d in p.steps)
    parallel_rows(len(plan), lambda a, b: _run_blocks(p, views, flat, plan[a:b], block_shape),
                  row_bytes=work)
    return out


@kernel(ProductUpdate, out=True)
def product_update(p: ProductUpdate, a: np.ndarray, b: np.ndarray, *rest: np.ndarray,
                   out: np.ndarray | None = None) -> np.ndarray:
    """`c + alpha * (a @ b)` as one BLAS gemm accumulating into `c`'s buffer (given up: `out`)
    or a copy of it, where the operands allow (see `blas.gemm`; `c` of the product's shape
    and dtype, from `MIN_AXPY` elements, the scale one value); else the product, then the
    update's own kernel."""
    c, i, j, sign = scaled_add_refs(p.update)
    factor = j if i == p.x else i
    inputs = p.update_inputs([a, b, *rest], None)
    scale, target = inputs[factor], inputs[c]
    if (_one_value(scale) and scale.dtype == target.dtype == p.update.steps[-1][2].np
            and target.shape == p.update.shape and target.flags.c_contiguous
            and target.size >= MIN_AXPY and blas.available()):
        into = out if out is target else target.copy()
        if blas.gemm(sign * float(scale.item(0)), a, b, 1.0, into):
            return into
    inputs[p.x] = np.asarray(table.kernels[type(p.product)](p.product, a, b))
    return fused_elementwise(p.update, *inputs, out=out)


@kernel(DerivativeProduct, out=True, replace=True)
def one_pass_derivative(p: DerivativeProduct, *inputs: np.ndarray,
                        out: np.ndarray | None = None) -> np.ndarray:
    """The tanh, sigmoid or relu derivative product (their backward) in one generated pass
    from `native_fused.MIN_ELEMENTS` elements (tanh's over 128K float32 elements, one thread:
    61 us against 82 for NumPy's three calls); else, and where the generator does not take
    it, NumPy's calls."""
    x = inputs[-1]
    if x.size >= native_fused.MIN_ELEMENTS and all(
            y.shape == x.shape and y.dtype == x.dtype for y in inputs):
        result = native_fused.step(p, list(inputs), out)
        if result is not None:
            return result
    return derivative_product(np, p, *inputs)


def _starts_scaled_add(inputs: list[np.ndarray]) -> bool:
    """Whether a product may begin a scaled add by one value: one factor is one value, the
    other an array, and there is a BLAS to call."""
    return (len(inputs) == 2 and _one_value(inputs[0]) != _one_value(inputs[1])
            and blas.available())


def _keeps_scaled_add(p: FusedElementwise, inputs: list[Any]) -> bool:
    """Whether a small chain found is a scaled add the BLAS computes, on these inputs."""
    return _axpy_operands(p, inputs) is not None


def _covered(p: FusedElementwise, dtypes: list[np.dtype]) -> bool:
    """Whether a chain is computed as generated C (a compiler found, its steps and dtypes
    covered: see `native_fused`)."""
    return native.compiler() is not None and native_fused.covers(p, dtypes)


eager.set_small_chains((Multiply,), _starts_scaled_add, _keeps_scaled_add)
eager.set_covered_chains(_covered)
