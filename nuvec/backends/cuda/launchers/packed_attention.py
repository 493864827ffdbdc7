"""Launcher of `nuvec/fast/kernels/packed_attention.cu`: the tile schedules (the seed's `TILES`
and `BACKS`), their shared memory, and the forward and backward passes of a
`PackedAttention` / `PackedAttentionVjp` node, written against a `Runner` (CuPy on a GPU, the
emulator on the CPU). The schedule is the tuner's pick on a GPU, a fixed default elsewhere.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from nuvec.backends.cuda.launchers.rows import CTYPES, ITEMSIZE
from nuvec.backends.cuda.runner import KernelFile
from nuvec.fast.packed_attention import KERNEL_DIMS, positions
from nuvec.fast.tuner import Tuner, bucket, forced

HALF_TYPES = ("float16", "bfloat16")
# The kernels' offsets are signed 32-bit ints.
OFFSET_LIMIT = 2**31 - 1


@dataclass(frozen=True)
class Tile:
    """A forward schedule: `br` query rows and `bc` keys per tile; `mma` runs `attend_mma`
    (sm_80+, half types), else the scalar `attend`."""

    br: int
    bc: int
    mma: bool


@dataclass(frozen=True)
class Back:
    """A backward schedule: `bc` keys (and queries) per tile; `mma` runs `attend_back_mma`
    (sm_80+, half types), else the scalar `attend_back`."""

    bc: int
    mma: bool


TILES: dict[str, Tile] = {
    "r16_c16": Tile(16, 16, False), "r32_c32": Tile(32, 32, False),
    "r64_c32": Tile(64, 32, False), "r32_c64": Tile(32, 64, False),
    "r64_c64": Tile(64, 64, False), "m64_c32": Tile(64, 32, True),
    "m64_c64": Tile(64, 64, True), "m128_c64": Tile(128, 64, True),
}
BACKS: dict[str, Back] = {"c16": Back(16, False), "c32": Back(32, False), "c64": Back(64, False),
                          "m32": Back(32, True), "m64": Back(64, True)}


def attend_shared(tile: Tile, d: int, itemsize: int) -> int:
    """Dynamic shared bytes of `attend` (float32 tiles) or `attend_mma` (padded half rows)."""
    if tile.mma:
        return itemsize * (tile.br + 2 * tile.bc) * (d + 8)
    return 4 * (tile.br * d * 2 + 2 * tile.bc * d + tile.br * tile.bc + 3 * tile.br)


def attend_back_shared(back: Back, d: int, itemsize: int) -> int:
    """Dynamic shared bytes of `attend_back` (float32 tiles) or `attend_back_mma`."""
    bc = back.bc
    if back.mma:
        return itemsize * (4 * bc * (d + 8) + bc * (bc + 8)) + 8 * bc
    return 4 * (6 * bc * d + 2 * bc * bc + 2 * bc)


def usable_tiles(dtype: str, d: int, shared_limit: int, mma: bool = True) -> dict[str, Tile]:
    """The forward schedules that fit `shared_limit` bytes (mma ones for half types on
    sm_80+ only, `mma` says whether the device has them)."""
    return {name: t for name, t in TILES.items()
            if attend_shared(t, d, ITEMSIZE[dtype]) <= shared_limit
            and (not t.mma or (mma and dtype in HALF_TYPES))}


def usable_backs(dtype: str, d: int, shared_limit: int, mma: bool = True) -> dict[str, Back]:
    """The backward schedules that fit, as `usable_tiles`."""
    return {name: b for name, b in BACKS.items()
            if attend_back_shared(b, d, ITEMSIZE[dtype]) <= shared_limit
            and (not b.mma or (mma and dtype in HALF_TYPES))}


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
            for b in BACKS.values():
                if not b.mma:
                    out.append(f"attend_back<{ct}, {d}, {b.bc}>")
                elif dtype in HALF_TYPES:
                    out.append(f"attend_back_mma<{ct}, {d}, {b.bc}>")
            out += [f"delta<{ct}, {d}>", f"rotate_back<{ct}, {d}>"]
    return tuple(out)


KERNEL = KernelFile("packed_attention", variants())


def takes(p: Any, inputs: Sequence[Any]) -> bool:
    """Whether the kernels take a node's inputs: D = 64 or 128, offsets within int32."""
    qkv = inputs[0]
    return qkv.shape[1] // (3 * p.heads) in KERNEL_DIMS and qkv.size <= OFFSET_LIMIT


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
    runner.launch(KERNEL, f"{name}<{c.ctype}, {c.d}, {tile.br}, {tile.bc}>", grid,
                  (2 * tile.br,), attend_shared(tile, c.d, ITEMSIZE[c.dtype]),
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
    name = "attend_back_mma" if back.mma else "attend_back"
    runner.launch(KERNEL, f"{name}<{c.ctype}, {d}, {back.bc}>", grid, (2 * back.bc,),
                  attend_back_shared(back, d, ITEMSIZE[c.dtype]),
                  [qkv, cos, sin, cu, tiles, dout, lse, delta, dq, dqkv, *c.scalars,
                   np.float32(p.scale)])
    pairs = t * heads * (d // 2)
    runner.launch(KERNEL, f"rotate_back<{c.ctype}, {d}>", ((pairs + 127) // 128,), (128,), 0,
                  [dq, cos, sin, c.device(positions(p.lengths)), dqkv, np.int32(heads),
                   np.int32(t), np.float32(p.scale)])
    return dqkv


def tuning_key(p: Any, dtype: str, t: int) -> dict[str, Any]:
    """What the tuner's pick depends on besides the device (the seed's key): dtype, heads,
    window, and the token count and the longest length rounded up to powers of two."""
    return {"dtype": dtype, "heads": p.heads, "window": 0 if p.window is None else p.window + 1,
            "tokens": bucket(t), "longest": bucket(max(p.lengths, default=0))}


def source_version() -> str:
    """A hash of the kernel source: tuned picks of another source are ignored."""
    path = Path(__file__).resolve().parents[3] / "fast" / "kernels" / "packed_attention.cu"
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


@dataclass(frozen=True)
class DeviceFacts:
    """What the schedules depend on: the device's name, its opt-in shared memory per block,
    whether it has the sm_80 matrix instructions."""

    name: str
    shared_limit: int
    mma: bool


# The emulator's dynamic shared memory (227 KiB) and its emulated mma.
EMULATED = DeviceFacts("emulator", 227 * 1024, True)


def device_facts(runner: Any) -> DeviceFacts:
    """The current CUDA device's facts (CuPy), or the emulator's."""
    if not hasattr(runner, "arch"):
        return EMULATED
    cupy = runner.xp
    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return DeviceFacts(f"{name} sm_{dev.compute_capability}",
                       int(props.get("sharedMemPerBlockOptin", 48 * 1024)),
                       int(dev.compute_capability) >= 80)


def gpu_time(runner: Any, launch: Callable[[], Any], repeats: int = 10) -> float:
    """Mean milliseconds of `launch()` on the current CuPy stream after one warm-up."""
    cupy = runner.xp
    launch()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(repeats):
        launch()
    end.record()
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / repeats


def schedule(runner: Any, p: Any, qkv: Any, backward: bool,
             time: Callable[[str], float] | None, facts: DeviceFacts | None = None,
             tuner: Tuner | None = None) -> tuple[str, Any]:
    """The schedule of a launch: forced (`nuvec.fast.tuner.force`), else on a GPU the
    tuner's pick (timing each usable schedule with `time(name)` once per key), else (the
    emulator) the first usable one."""
    facts = facts or device_facts(runner)
    dtype = runner.dtype_of(qkv)
    d = qkv.shape[1] // (3 * p.heads)
    op = "packed_attention_back" if backward else "packed_attention"
    usable = usable_backs if backward else usable_tiles
    found = usable(dtype, d, facts.shared_limit, facts.mma)
    if facts is EMULATED:
        name = forced(op) or next(iter(found))
        if name not in found:
            raise ValueError(f"tuner: the forced {op} schedule {name!r} is not usable here")
        return name, found[name]
    tuner = tuner or Tuner(op, source_version())
    chosen = tuner.pick(facts.name, tuning_key(p, dtype, qkv.shape[0]), found, time)
    return chosen.name, found[chosen.name]


def forward_node(runner: Any, p: Any, qkv: Any, cos: Any, sin: Any):
    """A `PackedAttention` node's outputs at the tuned schedule (what a GPU backend runs)."""
    def time(name: str) -> float:
        return gpu_time(runner, lambda: attend(runner, p, qkv, cos, sin, TILES[name]))

    _, tile = schedule(runner, p, qkv, False, time)
    return attend(runner, p, qkv, cos, sin, tile)


def backward_node(runner: Any, p: Any, qkv: Any, cos: Any, sin: Any, out: Any, lse: Any,
                  dout: Any, dlse: Any = None):
    """A `PackedAttentionVjp` node's output at the tuned schedule."""
    def time(name: str) -> float:
        return gpu_time(runner, lambda: attend_back(runner, p, qkv, cos, sin, out, lse, dout,
                                                    dlse, BACKS[name]))

    _, back = schedule(runner, p, qkv, True, time)
    return attend_back(runner, p, qkv, cos, sin, out, lse, dout, dlse, back)
