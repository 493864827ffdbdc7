"""The CPU table's large unary elementwise kernels and reductions, split over the thread pool.

Wraps the kernels already in the table (the shared bodies): inputs over `2 * MIN_BYTES` are cut
(`2 * MEMORY_BOUND_BYTES` for reductions and the unary kernels of one cheap instruction an
element, which memory bandwidth bounds) into chunks of rows (of flat elements, 1024-aligned,
where every operand is C-contiguous), each computed by the same kernel into its slice of one
preallocated output. A reduction is split along its leading axis when it keeps that axis, so
every sum runs in the order of a single call and results are bit-identical for every thread
count. Small inputs go straight to the kernel.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from nuvec.backends import threads
from nuvec.backends.common.unary import HALF
from nuvec.backends.numpy.registry import table
from nuvec.ops import complex_parts, rounding, unary
from nuvec.ops import reduction as r
from nuvec.ops.families import Unary

_ALIGN = 1024  # flat chunks start on 4 KiB of float32: SIMD loops see the unsplit alignment

# the unary kernels split only from `threads.MEMORY_BOUND_BYTES` a chunk (see there)
# (`sqrt` too: one instruction; split from 1 MiB it took 1.7 times its one-thread time)
_MEMORY_BOUND = (unary.Abs, unary.Negative, unary.Sign, unary.Square, unary.Sqrt,
                 unary.LogicalNot, rounding.Floor, rounding.Ceil, rounding.Trunc, rounding.Round,
                 complex_parts.Conjugate)


def _small(x: Any, least: int) -> bool:
    """Whether `x` stays on one thread: under two chunks of `least` bytes, 0-d, or one
    thread."""
    return x.nbytes < 2 * least or x.ndim == 0 or threads.get_num_threads() == 1


def _leading(arrays: list[Any]) -> tuple[list[Any], int]:
    """The arrays as views to split along their first axis (flat when all are C-contiguous,
    else without the leading size-1 axes), and the alignment of chunk bounds."""
    if all(a.flags.c_contiguous for a in arrays):
        return [a.reshape(-1) for a in arrays], _ALIGN
    shape = arrays[0].shape
    k = next((i for i, n in enumerate(shape) if n > 1), 0)
    return [a[(0,) * k] for a in arrays], 1


def _result_dtype(kernel: Callable, p: Any, x: Any) -> np.dtype:
    """The dtype of `kernel`'s result, from one element; a half-type input computed in
    float32 gives its own dtype back (the node's, as the evaluator would cast it)."""
    probe = np.asarray(kernel(p, x[(slice(0, 1),) * x.ndim]))
    if x.dtype in HALF and probe.dtype == np.float32:
        return x.dtype
    return probe.dtype


def _split_elementwise(kernel: Callable, p: Any, x: Any, out: Any, least: int) -> Any:
    if out is None:
        out = np.empty(x.shape, _result_dtype(kernel, p, x))
    (part, target), align = _leading([x, out])

    def chunk(start: int, stop: int) -> None:
        into = target[start:stop]
        result = kernel(p, part[start:stop], out=into)
        if result is not into:  # a half type computed in float32: cast as the evaluator does
            into[...] = result

    row_bytes = max(part[0:1].nbytes, target[0:1].nbytes) if len(target) else 0
    threads.parallel_rows(len(target), chunk, row_bytes=row_bytes, min_bytes=least,
                          align=align)
    return out


def elementwise(kernel: Callable, memory_bound: bool = False) -> Callable:
    """`kernel(p, x, out=None)`, split over threads when `x` is large (from chunks of
    `threads.MEMORY_BOUND_BYTES` with `memory_bound`, else of `threads.MIN_BYTES`)."""

    def run(p, x, out=None):
        least = threads.MEMORY_BOUND_BYTES if memory_bound else threads.MIN_BYTES
        if x.nbytes < 2 * least or _small(x, least):  # the first test is the fast path
            return kernel(p, x, out=out)
        return _split_elementwise(kernel, p, x, out, least)

    return run


def _kept_axis(x: Any, axes: tuple[int, ...]) -> int | None:
    """The axis to split a reduction along: the first axis longer than 1, if the reduction
    keeps it (a split of a later axis strides through memory and gains nothing)."""
    reduced = {a % x.ndim for a in axes}
    axis = next((i for i, n in enumerate(x.shape) if n > 1), None)
    return axis if axis is not None and axis not in reduced and x.shape[axis] >= 4 else None


def reduction(kernel: Callable) -> Callable:
    """`kernel(p, x)` reducing `p.axes` (kept as size 1), split along a kept axis when large
    (from chunks of `threads.MEMORY_BOUND_BYTES`)."""

    def run(p, x):
        least = threads.MEMORY_BOUND_BYTES
        axis = None if _small(x, least) else _kept_axis(x, p.axes)
        if axis is None:
            return kernel(p, x)
        lead = (slice(None),) * axis
        first = kernel(p, x[lead + (slice(0, 1),)])
        out = np.empty(first.shape[:axis] + (x.shape[axis],) + first.shape[axis + 1:],
                       first.dtype)

        def chunk(start: int, stop: int) -> None:
            rows = lead + (slice(start, stop),)
            out[rows] = kernel(p, x[rows])

        # chunks of at least 2 along the axis: one would drop it, changing NumPy's loop order
        threads.parallel_rows(x.shape[axis], chunk, row_bytes=x.nbytes // x.shape[axis],
                              min_bytes=least, align=2)
        return out

    return run


def _install() -> None:
    # The unary kernels taking `out=`. Binary arithmetic is left on one thread: it is bound by
    # memory bandwidth, and split over two threads `exp(x) * w + b` on [2048, 2048] took 2.5x
    # its one-thread time on the two-core machine the benchmarks run on.
    for cls in list(table.writes_into):
        if issubclass(cls, Unary):
            table.add(cls, elementwise(table.get(cls), cls in _MEMORY_BOUND), out=True,
                      replace=True)
    for cls in (r.Sum, r.Prod, r.Max, r.Min, r.AllTrue, r.AnyTrue, r.ArgMax, r.ArgMin):
        table.add(cls, reduction(table.get(cls)), replace=True)


_install()
