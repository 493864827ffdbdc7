"""Launchers of `gated_delta.cu`: `GatedDelta` (the final state or every step's) and
`GatedDeltaSlots` (states read from and written to a pool).

The state's type is `q`'s or float32 (`STATE_TYPES`); `g` and `beta` may have any kernel float
type (passed as a kind). `Dk` is a multiple of 32 up to 256: `N` registers per lane and row
are 4 (`Dk <= 128`) or 8. Other inputs compute through the fallback (`takes`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.backends.cuda.launchers.rows import CTYPES, OFFSET_LIMIT
from nuvec.backends.cuda.runner import KernelFile, Runner

__all__ = ["GATED_DELTA", "gated_delta", "gated_delta_slots", "kernel_name", "takes"]

KERNELS = ("gated_delta", "gated_delta_steps", "gated_delta_slots")
# The state types the kernels take for each input type: its own and float32.
STATE_TYPES = {"float32": ("float32",), "float16": ("float16", "float32"),
               "bfloat16": ("bfloat16", "float32")}
LANE_REGISTERS = (4, 8)
ROWS_PER_BLOCK, THREADS = 16, 128
_KIND = {"float32": 0, "float16": 1, "bfloat16": 2}

GATED_DELTA = KernelFile("gated_delta", tuple(
    f"{name}<{CTYPES[t]}, {CTYPES[s]}, {n}>"
    for name in KERNELS for t, states in STATE_TYPES.items() for s in states
    for n in LANE_REGISTERS))


def _registers(dk: int) -> int:
    return 4 if dk <= 128 else 8


def _dtype(a: Any) -> str:
    name = str(a.dtype)
    return "bfloat16" if name == "uint16" else name


def takes(p: Any, inputs) -> bool:
    """Whether the kernels run the node: `Dk <= 256`, the state in `q`'s type or float32,
    and (for every step's state) an output under 2^32 elements."""
    q, state = inputs[0], inputs[5]
    t, dk = q.shape[1], q.shape[3]
    if dk > 32 * LANE_REGISTERS[-1] or _dtype(state) not in STATE_TYPES.get(_dtype(q), ()):
        return False
    return not getattr(p, "steps", False) or state.size * t < OFFSET_LIMIT


def kernel_name(p: Any) -> str:
    """The kernel a gated delta node launches."""
    if not hasattr(p, "steps"):
        return "gated_delta_slots"
    return "gated_delta_steps" if p.steps else "gated_delta"


def _launch(runner: Runner, name: str, q, k, v, g, beta, state_in, state_out, extra) -> Any:
    """Launches `name` over every (sequence, value head, row tile); returns y."""
    dtype, sdtype = runner.dtype_of(q), runner.dtype_of(state_in)
    b, t, hk, dk = q.shape
    hv, dv = v.shape[2], v.shape[3]
    y = runner.empty((b, t, hv, dv), dtype)
    blocks = -(-dv // ROWS_PER_BLOCK) * hv * b
    if blocks and t:
        expression = f"{name}<{CTYPES[dtype]}, {CTYPES[sdtype]}, {_registers(dk)}>"
        args = [q, k, v, g, beta, state_in, y, state_out, *extra[:1], np.uint32(b),
                np.uint32(t), np.uint32(hk), np.uint32(hv), np.uint32(dv), np.uint32(dk),
                np.int32(_KIND[runner.dtype_of(g)]), np.int32(_KIND[runner.dtype_of(beta)]),
                *extra[1:]]
        runner.launch(GATED_DELTA, expression, (blocks,), (THREADS,), 0, args)
    return y


def gated_delta(runner: Runner, p: Any, *inputs: Any) -> tuple[Any, Any]:
    """`GatedDelta(steps)` of `(q, k, v, g, beta, state)`: y and the final state (or the
    state after every step)."""
    q, k, v, g, beta, state = (runner.contiguous(a) for a in inputs)
    sdtype = runner.dtype_of(state)
    b, t = q.shape[:2]
    if p.steps:
        out = runner.empty((b, t, *state.shape[1:]), sdtype)
    elif t == 0:
        out = runner.xp.array(state, copy=True)
    else:
        out = runner.empty(state.shape, sdtype)
    y = _launch(runner, kernel_name(p), q, k, v, g, beta, state, out, [])
    return y, out


def gated_delta_slots(runner: Runner, p: Any, *inputs: Any) -> tuple[Any, Any]:
    """`GatedDeltaSlots` of `(q, k, v, g, beta, pool, slots)`: y and a copy of the pool with
    each sequence's final state at its slot."""
    q, k, v, g, beta, pool, slots = (runner.contiguous(a) for a in inputs)
    out = runner.xp.array(pool, copy=True)
    y = _launch(runner, "gated_delta_slots", q, k, v, g, beta, pool, out,
                [slots, np.uint32(pool.shape[0])])
    return y, out
