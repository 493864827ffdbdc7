"""Launcher of `nuvec/fast/kernels/packed_attention.cu`: the tile schedules (the seed's `TILES`
and `BACKS`), their shared memory, and the forward and backward passes of a
`PackedAttention` / `PackedAttentionVjp` node, written against a `Runner` (CuPy on a GPU, the
emulator on the CPU). The schedule is the tuner's pick on a GPU, a fixed default elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from nuvec.backends.cuda.runner import KernelFile
from nuvec.fast.packed_attention import KERNEL_DIMS, positions

CTYPES = {"float32": "float", "float16": "__half", "bfloat16": "__nv_bfloat16"}
HALF_TYPES = ("float16", "bfloat16")
_I32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Tile:
    """A forward schedule: `br` query rows and `bc` keys per tile; `mma` runs `attend_mma`
    (sm_80+, half types), else the scalar `attend`."""

    br: int
    bc: int
    mma: bool


@dataclass(frozen=True)
class Back:
    """A backward schedule: `bc` keys (and queries) per tile; `mma` would run the matrix-unit
    variant."""

    bc: int
    mma: bool


TILES: dict[str, Tile] = {
    "r16_c16": Tile(16, 16, False), "r32_c32": Tile(32, 32, False),
    "r64_c32": Tile(64, 32, False), "r32_c64": Tile(32, 64, False),
    "r64_c64": Tile(64, 64, False), "m64_c32": Tile(64, 32, True),
    "m64_c64": Tile(64, 64, True), "m128_c64": Tile(128, 64, True),
}
# The seed's m32/m64 backward schedules have no kernel here yet (see the report of issue 11).
BACKS: dict[str, Back] = {"c16": Back(16, False), "c32": Back(32, False), "c64": Back(64, False)}


def attend_shared(tile: Tile, d: int, itemsize: int) -> int:
    """Dynamic shared bytes of `attend` (float32 tiles) or `attend_mma` (padded half rows)."""
    if tile.mma:
        return itemsize * (tile.br + 2 * tile.bc) * (d + 8)
    return 4 * (tile.br * d * 2 + 2 * tile.bc * d + tile.br * tile.bc + 3 * tile.br)


def attend_back_shared(back: Back, d: int) -> int:
    """Dynamic shared bytes of `attend_back`."""
    return 4 * (6 * back.bc * d + 2 * back.bc * back.bc + 2 * back.bc)


def usable_tiles(dtype: str, d: int, shared_limit: int, mma: bool = True) -> dict[str, Tile]:
    """The forward schedules that fit `shared_limit` bytes (mma ones for half types on
    sm_80+ only, `mma` says whether the device has them)."""
    itemsize = 4 if dtype == "float32" else 2
    return {name: t for name, t in TILES.items()
            if attend_shared(t, d, itemsize) <= shared_limit
            and (not t.mma or (mma and dtype in HALF_TYPES))}


def usable_backs(d: int, shared_limit: int) -> dict[str, Back]:
    return {name: b for name, b in BACKS.items() if attend_back_shared(b, d) <= shared_limit}


def variants() -> tuple[str, ...]:
    """Every name expression a launch may use (the compile check compiles them all)."""
    out = []
    for dtype, ct in CTYPES.items():
        for d in KERNEL_DIMS:
            for t in TILES.values():
                if not t.mma:
                    out.append(f"attend<{ct}, {d}, {t.br}, {t.bc}>")
                elif dtype in HALF_TYPES:
                    out.append(f"attend_mma<{ct}, {d}, {t.br}, {t.bc}>")
            out += [f"attend_back<{ct}, {d}, {b.bc}>" for b in BACKS.values()]
            out += [f"delta<{ct}, {d}>", f"rotate_back<{ct}, {d}>"]
    return tuple(out)


KERNEL = KernelFile("packed_attention", variants())


def layout(lengths: Sequence[int], rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Each sequence's first token `cu [S + 1]` and each `rows`-row tile as `[sequence, first
    row]` pairs `tiles [NT, 2]`, int32 (the seed's `layout`)."""
    cu = np.zeros(len(lengths) + 1, np.int32)
    cu[1:] = np.cumsum(lengths)
    tiles = [(s, i0) for s, n in enumerate(lengths) for i0 in range(0, n, rows)]
    return cu, np.array(tiles, np.int32).reshape(-1, 2)


class Call:
    """One node's launch parameters: dtype, head dimension, pack layout, scalars."""

    def __init__(self, runner: Any, p: Any, qkv: Any):
        self.runner, self.p = runner, p
        self.dtype = runner.dtype_of(qkv)
        self.ctype = CTYPES[self.dtype]
        self.t, width = qkv.shape
        self.d = width // (3 * p.heads)
        if self.t * width > _I32_MAX:
            raise ValueError(f"packed_attention: {self.t}·{width} elements overflow the "
                             f"kernels' 32-bit offsets")
        self.scalars = (np.int32(p.heads), np.int32(0 if p.window is None else p.window + 1),
                        np.int32(self.t))

    def device(self, host: np.ndarray) -> Any:
        return self.runner.xp.asarray(host)

    def grid(self, lengths: Sequence[int], rows: int):
        cu, tiles = layout(lengths, rows)
        return (max(len(tiles), 1), self.p.heads), self.device(cu), self.device(tiles)


def attend(runner: Any, p: Any, qkv: Any, cos: Any, sin: Any, tile: Tile):
    """`(out [T, H·D], lse [H, T])` of node `p` on `runner` at schedule `tile`."""
    c = Call(runner, p, qkv)
    out = runner.empty((c.t, c.p.heads * c.d), c.dtype)
    lse = runner.empty((c.p.heads, c.t), "float32")
    if c.t == 0:
        return out, lse
    grid, cu, tiles = c.grid(p.lengths, tile.br)
    name = "attend_mma" if tile.mma else "attend"
    itemsize = 4 if c.dtype == "float32" else 2
    runner.launch(KERNEL, f"{name}<{c.ctype}, {c.d}, {tile.br}, {tile.bc}>", grid,
                  (2 * tile.br,), attend_shared(tile, c.d, itemsize),
                  [qkv, cos, sin, cu, tiles, out, lse, *c.scalars, np.float32(p.scale)])
    return out, lse


def attend_back(runner: Any, p: Any, qkv: Any, cos: Any, sin: Any, out: Any, lse: Any,
                dout: Any, dlse: Any, back: Back):
    """`dqkv` of node `p` (the `delta`, `attend_back` and `rotate_back` launches)."""
    c = Call(runner, p, qkv)
    xp = runner.xp
    heads, t, d = p.heads, c.t, c.d
    dqkv = runner.empty((t, 3 * heads * d), c.dtype)
    if t == 0:
        return dqkv
    delta = runner.empty((heads, t), "float32")
    count = t * heads
    no_lse = np.uintp(0)
    runner.launch(KERNEL, f"delta<{c.ctype}, {d}>", ((count + 127) // 128,), (128,), 0,
                  [out, dout, no_lse if dlse is None else dlse, delta, np.int32(heads),
                   np.int32(t)])
    dq = xp.zeros((t, heads * d), np.float32)
    grid, cu, tiles = c.grid(p.lengths, back.bc)
    runner.launch(KERNEL, f"attend_back<{c.ctype}, {d}, {back.bc}>", grid, (2 * back.bc,),
                  attend_back_shared(back, d),
                  [qkv, cos, sin, cu, tiles, dout, lse, delta, dq, dqkv, *c.scalars,
                   np.float32(p.scale)])
    pairs = t * heads * (d // 2)
    runner.launch(KERNEL, f"rotate_back<{c.ctype}, {d}>", ((pairs + 127) // 128,), (128,), 0,
                  [dq, cos, sin, c.device(positions(p.lengths)), dqkv, np.int32(heads),
                   np.int32(t), np.float32(p.scale)])
    return dqkv


def tuning_key(p: Any, dtype: str, t: int) -> dict[str, Any]:
    """What the tuner's pick depends on besides the device (the seed's key)."""
    return {"dtype": dtype, "heads": p.heads, "window": 0 if p.window is None else p.window + 1,
            "tokens": t, "longest": max(p.lengths, default=0)}


def schedules(runner: Any, p: Any, qkv: Any, shared_limit: int, mma: bool, backward: bool,
              pick: Callable[..., str] | None = None):
    """The schedule of a launch: the tuner's `pick(candidates, key, time)` when given, else
    the first usable one (the emulator and CPU runs)."""
    dtype = runner.dtype_of(qkv)
    d = qkv.shape[1] // (3 * p.heads)
    found = usable_backs(d, shared_limit) if backward else usable_tiles(dtype, d, shared_limit,
                                                                        mma)
    if pick is None:
        return next(iter(found.values()))
    return found[pick(found, tuning_key(p, dtype, qkv.shape[0]))]
