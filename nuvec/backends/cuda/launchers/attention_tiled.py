"""Launcher of `nuvec/fast/kernels/attention_tiled.cu`: the planner's tiled attention kernel
(an `Attention` node with `passes == 0`) and its fused backward (`AttentionVjp`).

Half types run the `_mma` kernels (mma.sync, sm_80+; the emulator runs their portable
branch); float32 runs the FMA kernels (tf32 would miss float32's tolerance). A mask reaches the
kernels as strides over its broadcast dimensions, so a mask the op broadcast is never
materialized.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from nuvec.backends.cuda.launchers.rows import CTYPES, ITEMSIZE
from nuvec.backends.cuda.runner import KernelFile, Runner

__all__ = ["HEADS", "TILED", "attend", "attend_back", "kernel_names", "mask_view", "shared_bytes",
           "takes"]

HEADS = (64, 80, 128)
HALF_TYPES = ("float16", "bfloat16")
THREADS = 128
# Rows (query or key) per block of each kernel.
ROWS = {"flash_attend": 16, "flash_attend_mma": 64, "flash_attend_back": 32,
        "flash_attend_back_mma": 64}


def _variants() -> tuple[str, ...]:
    out = []
    for dtype, c in CTYPES.items():
        for d in HEADS:
            mma = "_mma" if dtype in HALF_TYPES else ""
            out += [f"flash_attend{mma}<{c}, {d}>", f"flash_attend_back{mma}<{c}, {d}>",
                    f"flash_delta<{c}, {d}>"]
        out.append(f"flash_dq<{c}>")
    return tuple(out)


TILED = KernelFile("attention_tiled", _variants())


def takes(inputs: Sequence[Any]) -> bool:
    """Whether the tiled kernels take `(q, k, v, ...)`: head sizes 64, 80 or 128, equal."""
    d = inputs[0].shape[3]
    return d in HEADS and inputs[1].shape[3] == d and inputs[2].shape[3] == d


def shared_bytes(name: str, d: int, itemsize: int) -> int:
    """Dynamic shared bytes of one kernel at head size `d`."""
    if name == "flash_attend":
        return 4 * (16 * d + 2 * 32 * (d + 1))
    if name == "flash_attend_mma":
        return itemsize * 192 * (d + 8)
    if name == "flash_attend_back":
        return 4 * (6 * 32 * (d + 1) + 2 * 32 * 33 + 64)
    return itemsize * (4 * 64 * (d + 8) + 64 * 72) + 8 * 64


def kernel_names(dtype: str, backward: bool = False) -> tuple[str, ...]:
    """The kernels a tiled node (or its backward) launches, in order."""
    mma = "_mma" if dtype in HALF_TYPES else ""
    if backward:
        return ("flash_delta", f"flash_attend_back{mma}", "flash_dq")
    return (f"flash_attend{mma}",)


def mask_view(runner: Runner, p: Any, inputs: Sequence[Any]) -> tuple[Any, int, list[Any]]:
    """`(mask buffer, kind, strides)`: kind 0 none, 1 boolean, 2 additive; the buffer holds
    only the mask's own data (index 0 of each broadcast dimension), the strides are 0 on
    those dimensions."""
    if not p.mask:
        return runner.empty((1,), "uint8"), 0, [np.uint32(0)] * 4
    m = inputs[3]
    strides = getattr(m, "strides", None) or (1,) * m.ndim
    keep = tuple(slice(0, 1) if s == 0 else slice(None) for s in strides)
    small = runner.contiguous(m[keep])
    kind = 1 if runner.dtype_of(small) == "bool" else 2
    step, steps = 1, [0] * 4
    for axis in range(3, -1, -1):
        n = small.shape[axis]
        steps[axis] = 0 if n == 1 else step
        step *= n
    return small, kind, [np.uint32(s) for s in steps]


def _geometry(p: Any, q: Any, k: Any) -> tuple[list[Any], tuple[int, ...]]:
    b, hq, lq, _ = q.shape
    hkv, lk = k.shape[1], k.shape[2]
    dims = [np.uint32(hq), np.uint32(hkv), np.uint32(lq), np.uint32(lk)]
    return dims, (b, hq, hkv, lq, lk)


def attend(runner: Runner, p: Any, *inputs: Any) -> Any:
    """`Attention(..., passes=0)` of `(q, k, v[, mask][, sinks])`: `out`, or `(out, lse)` for
    a node that saves the row log-sum-exp (`p.lse`)."""
    q, k, v = (runner.contiguous(a) for a in inputs[:3])
    dtype = runner.dtype_of(q)
    b, hq, lq, d = q.shape
    mask, kind, strides = mask_view(runner, p, inputs)
    sinks = runner.contiguous(inputs[-1]) if p.sinks else runner.empty((1,), dtype)
    out = runner.empty((b, hq, lq, d), dtype)
    lse = runner.empty((b, hq, lq), "float32")
    (name,) = kernel_names(dtype)
    dims, _ = _geometry(p, q, k)
    rows = ROWS[name]
    runner.launch(TILED, f"{name}<{CTYPES[dtype]}, {d}>", (-(-lq // rows), hq, b), (THREADS,),
                  shared_bytes(name, d, ITEMSIZE[dtype]),
                  [q, k, v, mask, sinks, out, lse, np.float32(p.scale), *dims, *strides,
                   np.int32(kind), np.int32(p.causal), np.int32(p.window or 0),
                   np.int32(p.sinks)])
    return (out, lse) if p.lse else out


def attend_back(runner: Runner, p: Any, *inputs: Any) -> tuple[Any, Any, Any]:
    """`AttentionVjp` of `(q, k, v[, mask], out, lse, dout)`: `(dq, dk, dv)` (the `flash_delta`,
    `flash_attend_back` and `flash_dq` launches)."""
    q, k, v = (runner.contiguous(a) for a in inputs[:3])
    out, lse, dout = (runner.contiguous(a) for a in inputs[-3:])
    dtype = runner.dtype_of(q)
    b, hq, lq, d = q.shape
    mask, kind, strides = mask_view(runner, p, inputs)
    dims, (_, _, hkv, _, lk) = _geometry(p, q, k)
    rows = b * hq * lq
    delta = runner.empty((b, hq, lq), "float32")
    first, back, last = kernel_names(dtype, backward=True)
    ct = CTYPES[dtype]
    runner.launch(TILED, f"{first}<{ct}, {d}>", (-(-rows // THREADS),), (THREADS,), 0,
                  [out, dout, delta, np.uint32(rows)])
    dq = runner.xp.zeros((b, hq, lq, d), np.float32)
    dk, dv = runner.empty(k.shape, dtype), runner.empty(v.shape, dtype)
    tile = ROWS[back]
    runner.launch(TILED, f"{back}<{ct}, {d}>", (-(-lk // tile), hkv, b), (THREADS,),
                  shared_bytes(back, d, ITEMSIZE[dtype]),
                  [q, k, v, mask, dout, lse, delta, dq, dk, dv, np.float32(p.scale), *dims,
                   *strides, np.int32(kind), np.int32(p.causal), np.int32(p.window or 0)])
    dq_out = runner.empty(q.shape, dtype)
    n = dq.size
    runner.launch(TILED, f"{last}<{ct}>", (-(-n // 256),), (256,), 0,
                  [dq, dq_out, np.float32(p.scale), np.uint32(n)])
    return dq_out, dk, dv
