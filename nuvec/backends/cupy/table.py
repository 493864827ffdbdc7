"""The GPU kernel table, built against a namespace `xp` without importing CuPy.

`build_table(xp, ...)` binds the shared bodies to `xp`, adds the GPU overrides, routes the
listed primitives (`nuvec.backends.cpu_route.CPU_ROUTE`) through the host, and wraps every
kernel so that bfloat16 inputs (2-byte `Bfloat16Buffer`s) reach the bodies as float32, except
for layout primitives, which move the bits unchanged. The CuPy backend builds it with CuPy; the
NumPy test double (`nuvec.backends.double`) with NumPy, which is how CI runs these paths.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import nuvec.backends.common  # noqa: F401  (registers every shared body)
from nuvec.backends.common.registry import SHARED, Bodies, bind
from nuvec.backends.cpu_route import CPU_ROUTE
from nuvec.backends.cupy.bfloat16 import BFLOAT16, Bfloat16Buffer, narrow, widen
from nuvec.backends.cuda.custom import USER_KERNELS
from nuvec.backends.cuda.launchers import LAUNCHERS
from nuvec.graph.backend import KernelTable
from nuvec.graph.primitive import Copy
from nuvec.ops import indexing as ix
from nuvec.ops import linalg as la
from nuvec.ops import join as jn
from nuvec.ops import matrices as mt
from nuvec.ops import misc as ms
from nuvec.ops import shape as sh
from nuvec.ops import slicing as sl
from nuvec.ops import unary as u
from nuvec.ops.comparison import Select

FUSED_CLASSES = (*LAUNCHERS, *USER_KERNELS)  # CUDA kernels, launched by `cupy/fused.py`

# Primitives that move or pick elements without arithmetic: on bfloat16 they run on the bits.
LAYOUT = frozenset((
    Copy, u.StopGradient, sh.Reshape, sh.Transpose, sh.Contiguous, sh.BroadcastTo, sl.Slice,
    sl.SliceUpdate, sl.DynamicSlice, sl.DynamicSliceUpdate, jn.Concatenate, ix.Gather,
    mt.Diagonal, ms.AsStrided,
))  # fmt: skip

# Primitives whose GPU body reads bfloat16 buffers itself (a bit cast; the CUDA kernels, named
# by `build_table`'s `bits`): their kernels get the inputs unchanged.
RAW = frozenset((ms.View,))

GPU = Bodies()  # GPU overrides of shared bodies (or bodies the CPU has only NumPy-only kernels for)


@GPU.register(u.AsType)
def astype(xp, p, x):
    if x.dtype.kind == "c" and p.dtype.kind != "c":
        x = x.real
    if p.dtype.np == BFLOAT16:
        return narrow(xp, x.astype(np.float32))
    return x.astype(p.dtype.np)


@GPU.register(la.Cholesky)
def cholesky(xp, p, a):
    # CuPy's cholesky reads the lower triangle only (no `upper=`): the upper factor of `a`
    # is the conjugate transpose of the lower factor of `a`'s conjugate transpose
    if not p.upper:
        return xp.linalg.cholesky(a)
    lower = xp.linalg.cholesky(xp.conj(xp.swapaxes(a, -1, -2)))
    return xp.conj(xp.swapaxes(lower, -1, -2))


@GPU.register(mt.Eye, mt.Tri)
def eye_tri(xp, p):
    dtype = np.float32 if p.dtype.np == BFLOAT16 else p.dtype.np  # the evaluator narrows
    fn = xp.eye if isinstance(p, mt.Eye) else xp.tri
    return fn(p.n, p.m, p.k, dtype=dtype)


@GPU.register(ms.View)
def view(xp, p, x):
    bits = x.bits if type(x) is Bfloat16Buffer else xp.ascontiguousarray(x)
    if p.dtype.np == BFLOAT16:
        return Bfloat16Buffer(bits.view(np.uint16))
    return bits.view(p.dtype.np)


def host_route(cpu_kernel: Callable, to_host: Callable, from_host: Callable) -> Callable:
    """A kernel computing `cpu_kernel` on host copies of its inputs, uploading the outputs."""

    def routed(p, *inputs):
        result = cpu_kernel(p, *[to_host(x) for x in inputs])
        if isinstance(result, tuple):
            return tuple(from_host(np.asarray(r)) for r in result)
        return from_host(np.asarray(result))

    return routed


def _bits_kernel(fn: Callable) -> Callable:
    """`fn` applied to the bits of bfloat16 inputs, its result wrapped back; `out` (given only
    to a class whose body takes it: a window update's input buffer) passed on otherwise."""

    def compute(p, *inputs, out=None):
        if any(type(x) is Bfloat16Buffer for x in inputs):
            bits = [x.bits if type(x) is Bfloat16Buffer else x for x in inputs]
            return Bfloat16Buffer(fn(p, *bits))
        if out is not None:
            return fn(p, *inputs, out=out)
        return fn(p, *inputs)

    return compute


def _widening_kernel(xp: Any, fn: Callable, takes_out: bool) -> Callable:
    """`fn` with bfloat16 inputs widened to float32 (the evaluator narrows the result)."""

    def compute(p, *inputs, out=None):
        if any(type(x) is Bfloat16Buffer for x in inputs):
            wide = [widen(xp, x) if type(x) is Bfloat16Buffer else x for x in inputs]
            return fn(p, *wide)
        if takes_out and out is not None:
            return fn(p, *inputs, out=out)
        return fn(p, *inputs)

    return compute


def build_table(
    xp: Any,
    name: str,
    cpu_kernels: KernelTable,
    to_host: Callable[[Any], np.ndarray],
    from_host: Callable[[np.ndarray], Any],
    overrides: dict[type, Callable] | None = None,
    bits: frozenset[type] = frozenset(),
) -> KernelTable:
    """The GPU table over namespace `xp`.

    Args:
        xp: the array namespace (CuPy; NumPy for the test double).
        name: the table's name, for messages.
        cpu_kernels: the CPU table, for the listed CPU route.
        to_host: one device buffer (bfloat16 buffers included) as a NumPy array.
        from_host: one NumPy array as a device buffer.
        overrides: kernels replacing the bodies of their classes (e.g. CuPy's `erf`).
        bits: override classes whose kernels take bfloat16 buffers as they are (no widening).

    Returns:
        A table with a kernel for every class that has a shared body, a GPU body or a route.
    """
    raw = KernelTable(name)
    bind(raw, xp, SHARED, skip=frozenset(CPU_ROUTE) | frozenset(GPU.classes()))
    bind(raw, xp, GPU)
    for cls, fn in (overrides or {}).items():
        raw.add(cls, fn, replace=True)
    table = KernelTable(name)
    for cls, fn in raw.kernels.items():
        takes_out = cls in raw.writes_into
        if cls in RAW or cls in bits:
            wrapped = fn
        elif cls in LAYOUT:
            wrapped = _bits_kernel(fn)
        else:
            wrapped = _widening_kernel(xp, fn, takes_out)
        table.add(cls, wrapped, out=takes_out)
    for cls in CPU_ROUTE:
        table.add(cls, host_route(cpu_kernels.kernels[cls], to_host, from_host))
    # `where` picks elements: bits when both branches are bfloat16
    table.add(Select, _select(xp), replace=True)
    return table


def _select(xp: Any) -> Callable:
    def select(p, c, x, y):
        if type(x) is Bfloat16Buffer and type(y) is Bfloat16Buffer:
            return Bfloat16Buffer(xp.where(c, x.bits, y.bits))
        x = widen(xp, x) if type(x) is Bfloat16Buffer else x
        y = widen(xp, y) if type(y) is Bfloat16Buffer else y
        return xp.where(c, x, y)

    return select
