"""The attention planner: which kernel (or composition) runs one attention call.

A pure function of the target (CPU, or a GPU and its class), the dtype, the shapes and the
options: `plan` maps a validated `RouteKey` to a `Route`; `nuvec.fast.attention.plan_attention`
is the public view.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from nuvec.graph import dtypes as dt

__all__ = [
    "AttentionOptions",
    "AttentionPlan",
    "Composed",
    "ComposedBlocks",
    "CpuTiles",
    "Target",
    "Tiled",
    "Vector",
]

KERNEL_FLOATS = (dt.float16, dt.bfloat16, dt.float32)
# Score bytes the CPU kernel's tiles may hold at once (all threads together) when no cap is
# given, and the most one tile holds: a tile's scores stay in a core's cache (1-2 MiB of L2
# here) between the product that writes them and the one that reads them.
CPU_SCORE_BYTES = 1 << 22
CPU_TILE_BYTES = 1 << 19
# Stacked query rows per CPU tile (the query heads of one key head times the tile's rows),
# and the fewest keys per chunk before the tile takes fewer rows instead. 256 rows make wider
# score products and half the items of 128 (docs/performance.md, "Tile height").
CPU_TILE_ROWS = 256
CPU_MIN_KEYS = 128
# A tile takes at most this share of the budget, so that a capped call still runs this many
# tiles at once (on as many cores).
CPU_LIVE_TILES = 2
# Queries the vector kernels take per call; lanes of one query in the two-pass kernel.
VECTOR_QUERIES = 8
SIMD = 32
THREADS = 1024
# Keys from which one pass over the keys is split into two.
TWO_PASS_KEYS = 1024


@dataclass(frozen=True)
class Target:
    """Where attention runs: `kind` "cpu" or "gpu"; `gpu_class` sizes the two-pass kernel
    ("s" small, "g" general, "d" large), as MLX's architecture letter does."""

    kind: str = "cpu"
    gpu_class: str = "g"

    def __post_init__(self):
        if self.kind not in ("cpu", "gpu") or self.gpu_class not in ("s", "g", "d"):
            raise ValueError(f"plan_attention: unknown target {self.kind!r}/{self.gpu_class!r}")


CPU = Target()


@dataclass(frozen=True, eq=False)
class AttentionOptions:
    """The options of an attention call.

    Attributes:
        mask: None, "causal" or an array (boolean: true attends; else added to the scores).
        sinks: per-query-head sink logits `[Hq]`, or None.
        window: with the causal mask, each query sees only its last `window` keys.
        max_score_bytes: the most bytes of scores a composition may hold at once.
    """

    mask: Any = None
    sinks: Any = None
    window: int | None = None
    max_score_bytes: int | None = None


@dataclass(frozen=True)
class RouteKey:
    """A validated attention call: what the planner decides from."""

    b: int
    hq: int
    hkv: int
    lq: int
    lk: int
    d: int
    dv: int
    dtype: dt.Dtype
    mask: str  # "none", "causal" or "array"
    bool_mask: bool
    sinks: bool
    window: int | None
    cap: int | None
    target: Target


# -- public kernel choices -------------------------------------------------------------
@dataclass(frozen=True)
class Vector:
    """The vector kernels: `passes` over the keys (1 or 2), `blocks` key partitions of the
    first of two passes, `dispatches` kernel launches (query row groups)."""

    passes: int
    blocks: int
    dispatches: int


@dataclass(frozen=True)
class Tiled:
    """The tiled (flash) kernel over query and key tiles."""


@dataclass(frozen=True)
class Composed:
    """The composition of ordinary operations over every query row at once."""


@dataclass(frozen=True)
class ComposedBlocks:
    """The composition over blocks of `rows` query rows, one block's scores live at a time."""

    rows: int


@dataclass(frozen=True)
class CpuTiles:
    """The CPU kernel: tiles of `rows` query rows (of every query head of one key head) over
    chunks of at most `keys` keys (an online softmax across the chunks of a tile), at most
    `live` tiles computed at once (on threads)."""

    rows: int
    keys: int
    live: int


@dataclass(frozen=True)
class AttentionPlan:
    """What runs an attention call.

    Attributes:
        kernel: `Vector`, `Tiled`, `Composed`, `ComposedBlocks` or `CpuTiles`.
        scratch_bytes: scratch memory of the kernel (the two-pass kernel's partial results).
        max_intermediate_bytes: the most bytes of intermediates held at once (scores or
            scratch; for `CpuTiles`, the scores of `live` tiles).
        capped: whether `max_score_bytes` made the composition's row blocks (the CPU
            kernel's tiles, or how many of them are live) smaller.
        rejected: `(kernel, reason)` for each kernel not chosen.

    Example:
        >>> import nuvec as mx
        >>> s = (1, 8, 16, 64)
        >>> p = mx.fast.plan_attention(s, s, s, mx.float32, stream=mx.cpu)
        >>> p.kernel, p.capped
        (CpuTiles(rows=16, keys=16, live=8), False)
    """

    kernel: Vector | Tiled | Composed | ComposedBlocks | CpuTiles
    scratch_bytes: int
    max_intermediate_bytes: int
    capped: bool
    rejected: tuple[tuple[str, str], ...] = ()


# -- internal routes -------------------------------------------------------------------
@dataclass(frozen=True)
class GroupVector:
    passes: int
    blocks: int
    gqa_kernel: bool
    tk1: bool


@dataclass(frozen=True)
class Group:
    """Query rows `start..end` over keys `0..keys`, by a vector kernel or composed (`kind`
    None)."""

    start: int
    end: int
    keys: int
    kind: GroupVector | None


@dataclass(frozen=True)
class Route:
    """`kind` "vector" (with `groups`), "tiled" or "composed" (with `rows` per block; on the
    CPU with the kernel's `tiles`, in blocks of `traced_rows` under a transform)."""

    kind: str
    groups: tuple[Group, ...] = ()
    rows: int = 0
    tiles: CpuTiles | None = None


@dataclass(frozen=True)
class Plan:
    route: Route
    scratch: int
    max_intermediate: int
    capped: bool
    rejected: tuple[tuple[str, str], ...] = field(default=())


def vector_head(d: int, dv: int) -> bool:
    """Head sizes the vector kernels take."""
    return d == dv and d in (64, 96, 128, 256, 512)


def tiled_head(d: int, dv: int) -> bool:
    """Head sizes the tiled kernel takes."""
    return d == dv and d in (64, 80, 128)


def tk1_variant(dtype: dt.Dtype, d: int, dv: int) -> bool:
    """Whether the two-pass kernel has a one-key-per-step variant for these types."""
    return dtype in (dt.float16, dt.bfloat16) and d == dv and d in (64, 128)


def gqa_decode(gqa: int, d: int, dv: int) -> bool:
    """Head groupings the grouped-query decode kernel takes."""
    return d == dv and ((gqa == 8 and d in (64, 128)) or (gqa in (12, 16) and d == 128))


def elem_bytes(dtype: dt.Dtype) -> int:
    """Bytes per score element: the scores are accumulated in float32 at least."""
    return max(dtype.size, 4)


def causal_keys(offset: int, lk: int, window: int | None, start: int, end: int
                ) -> tuple[int, int]:
    """The keys `lo..hi` of `lk` that query rows `start..end` see under the causal mask, row
    `i` at key position `offset + i` (the prefix cut to the window); every key for rows that
    see none, as the unblocked composition averages them."""
    hi = offset + end
    if hi <= 0 or lk == 0:
        return 0, lk
    hi = min(hi, lk)
    lo = 0 if window is None else min(max(offset + start - window + 1, 0), hi - 1)
    return lo, hi


def key_range(key: RouteKey, start: int, end: int) -> tuple[int, int]:
    """The keys `lo..hi` that query rows `start..end` of a call see (`causal_keys`)."""
    if key.mask != "causal":
        return 0, key.lk
    return causal_keys(key.lk - key.lq, key.lk, key.window, start, end)


def split_rows(n: int, blind: int, rows: int) -> Iterator[tuple[int, int]]:
    """Blocks of at most `rows` of `n` query rows, the first `blind` (rows that see no key)
    never sharing a block with the others."""
    rows = max(rows, 1)
    for lo, hi in ((0, blind), (blind, n)):
        for s in range(lo, hi, rows):
            yield s, min(s + rows, hi)


def node_blocks(lq: int, lk: int, causal: bool, offset: int, window: int | None, rows: int
                ) -> list[tuple[int, int, int, int]]:
    """Blocks `(start, end, lo, hi)` of at most `rows` of a node's `lq` query rows, with the
    keys `lo..hi` of `lk` each sees (`causal_keys`; every key without the causal mask); rows
    that see no key (row `i` at key position `offset + i`) never share a block with others."""
    blind = min(max(-offset, 0), lq) if causal else 0
    return [(s, e, *(causal_keys(offset, lk, window, s, e) if causal else (0, lk)))
            for s, e in split_rows(lq, blind, rows)]


def row_blocks(key: RouteKey, rows: int) -> Iterator[tuple[int, int]]:
    """Blocks of at most `rows` query rows; under the causal mask the rows that see no key
    (when Lq > Lk) never share a block with rows that see some."""
    blind = key.lq - key.lk if key.mask == "causal" and key.lq > key.lk else 0
    return split_rows(key.lq, blind, rows)


def block_bytes(key: RouteKey, rows: int) -> int:
    """Bytes of the widest block of scores of the composition in blocks of `rows`."""
    per = key.b * key.hq * elem_bytes(key.dtype)
    widest = 0
    for s, e in row_blocks(key, rows):
        lo, hi = key_range(key, s, e)
        widest = max(widest, (e - s) * (hi - lo))
    return widest * per


def composed_rows(key: RouteKey, budget: int) -> int:
    """The most rows per block whose widest block of scores fits `budget` (at least 1)."""
    lo, hi = 1, max(key.lq, 1)
    if block_bytes(key, hi) <= budget:
        return hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if block_bytes(key, mid) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def tile_span(key: RouteKey, rows: int) -> int:
    """The most keys a tile of `rows` query rows sees (at least 1)."""
    if key.mask == "causal" and key.window is not None:
        return max(1, min(key.lk, key.window + rows - 1))
    return max(1, key.lk)


def cpu_tiles(key: RouteKey, budget: int) -> CpuTiles:
    """The CPU kernel's tiles under `budget` bytes of scores: a tile of at most
    `CPU_TILE_BYTES` and `budget / CPU_LIVE_TILES`, of `CPU_TILE_ROWS` stacked rows (fewer when
    even `CPU_MIN_KEYS` keys would not fit), the keys they see or as many as fit; as many live
    tiles as fit the budget (and there are items). A function of the call alone, never of
    the thread count, so that every row's sums run in one order on any number of threads."""
    e, rep = elem_bytes(key.dtype), key.hq // key.hkv
    tile = max(1, min(budget // CPU_LIVE_TILES, CPU_TILE_BYTES))
    rows = max(1, min(CPU_TILE_ROWS // rep, key.lq))
    if rep * rows * min(tile_span(key, rows), CPU_MIN_KEYS) * e > tile:
        rows = max(1, tile // (rep * CPU_MIN_KEYS * e))
    keys = max(1, min(tile_span(key, rows), tile // (rep * rows * e)))
    items = key.b * key.hkv * -(-max(key.lq, 1) // rows)
    return CpuTiles(rows, keys, max(1, min(items, budget // (rep * rows * keys * e))))


def traced_rows(key: RouteKey) -> int:
    """Rows per block of a CPU call under a transform: blocks of at most the budget of
    scores each, since the backward differentiates each block's fallback graph (which holds
    its scores)."""
    return composed_rows(key, CPU_SCORE_BYTES if key.cap is None else
                         min(key.cap, CPU_SCORE_BYTES))


def _cpu_plan(key: RouteKey, rejected: tuple[tuple[str, str], ...]) -> Plan:
    """The CPU kernel over the whole call (in row blocks under a transform), its tiles under
    the cap and `CPU_SCORE_BYTES`."""
    default = cpu_tiles(key, CPU_SCORE_BYTES)
    tiles = default if key.cap is None else cpu_tiles(key, min(key.cap, CPU_SCORE_BYTES))
    e, rep = elem_bytes(key.dtype), key.hq // key.hkv
    live = tiles.live * rep * tiles.rows * tiles.keys * e
    route = Route("composed", rows=max(key.lq, 1), tiles=tiles)
    return Plan(route, 0, live, tiles != default, rejected)


def _vector_reason(key: RouteKey) -> str | None:
    if key.lq > VECTOR_QUERIES:
        return f"{key.lq} queries, the vector kernels take at most {VECTOR_QUERIES}"
    if not vector_head(key.d, key.dv):
        return f"head sizes ({key.d}, {key.dv}) not supported by the vector kernels"
    if key.d == 512 and key.lq > 1:
        return "head size 512 takes one query"
    if key.lq > key.lk and key.mask != "causal":
        return f"more queries ({key.lq}) than keys ({key.lk})"
    return None


def _tiled_reason(key: RouteKey) -> str | None:
    if not tiled_head(key.d, key.dv):
        return f"head sizes ({key.d}, {key.dv}) not supported by the tiled kernel"
    if key.mask == "causal" and key.lq > key.lk:
        return f"causal with more queries ({key.lq}) than keys ({key.lk})"
    return None


def supported(key: RouteKey, kernel: str) -> tuple[bool, str]:
    """MLX-style `(supported, reason)` of the "vector" or "tiled" kernel for `key`."""
    if key.target.kind != "gpu":
        return False, "a GPU kernel: the CPU runs CpuTiles"
    if key.lq == 0 or key.lk == 0:
        return False, "empty sequences"
    reason = _vector_reason(key) if kernel == "vector" else _tiled_reason(key)
    return reason is None, reason or ""


def two_pass_blocks(key: RouteKey, rows: int, n: int | None = None) -> int:
    """Key partitions of the two-pass kernel's first pass over `n` keys (default `Lk`) for
    the target's class."""
    simds = (key.hq // key.hkv) * rows
    n = key.lk if n is None else n
    cls = key.target.gpu_class
    if cls == "s":
        blocks = 64 if n <= 1024 or simds <= 4 else (
            128 if n <= 8192 else 256 if n <= 32768 else 512 if n <= 65536 else 1024)
    elif cls == "d":
        blocks = 128
        if simds <= 2 and n > 8192:
            blocks = 256
        elif simds >= 6 and n >= 16384:
            blocks = 512 if n < 65536 else 1024
    else:
        blocks = 64 if simds >= 4 else 32
    return max(1, min(blocks, n))


def _vector_group(key: RouteKey, start: int, end: int) -> Group:
    keys = key.lk - key.lq + end if key.mask == "causal" else key.lk
    rows, gqa = end - start, key.hq // key.hkv
    # The keys the kernels scan: under a window, from the first row's window start.
    span = keys if key.window is None else min(keys, key.window + rows - 1)
    two = span >= TWO_PASS_KEYS and SIMD * gqa * rows <= THREADS
    if not two:
        return Group(start, end, keys, GroupVector(1, 1, False, False))
    blocks = two_pass_blocks(key, rows, None if key.window is None else span)
    gqa_kernel = rows == 1 and key.mask != "array" and not key.sinks and gqa_decode(
        gqa, key.d, key.dv)
    tk1 = not gqa_kernel and tk1_variant(key.dtype, key.d, key.dv) and span <= SIMD * blocks
    return Group(start, end, keys, GroupVector(2, blocks, gqa_kernel, tk1))


def _vector_route(key: RouteKey) -> tuple[Route, int, int]:
    """Groups of the vector schedule with their scratch and largest intermediate."""
    groups: list[Group] = []
    blind = key.lq - key.lk if key.mask == "causal" and key.lq > key.lk else 0
    if blind:
        # Rows that see no key: composed over every key, as the unblocked graph does.
        groups.append(Group(0, blind, key.lk, None))
    gqa = key.hq // key.hkv
    # Two passes give each query `gqa` simdgroups of one threadgroup: split the rows so
    # that a group fits when the keys are long enough for two passes.
    reach = key.lk if key.window is None else min(key.lk, key.window + key.lq - 1)
    per = max(1, THREADS // (SIMD * gqa)) if reach >= TWO_PASS_KEYS else key.lq
    for s in range(blind, key.lq, per):
        groups.append(_vector_group(key, s, min(s + per, key.lq)))
    scratch = intermediate = 0
    for g in groups:
        if g.kind is None:
            intermediate = max(intermediate, key.b * key.hq * (g.end - g.start) * g.keys
                               * elem_bytes(key.dtype))
        elif g.kind.passes == 2:
            part = key.b * key.hq * (g.end - g.start) * g.kind.blocks * (key.dv + 2) * 4
            scratch = max(scratch, part)
    return Route("vector", tuple(groups)), scratch, max(scratch, intermediate)


def plan(key: RouteKey) -> Plan:
    """The route of a validated call: vector kernels for short query blocks on a GPU, the
    tiled kernel for long ones, on the CPU its tiled kernel (`CpuTiles`), else the
    composition (in row blocks under the cap).

    Raises:
        ValueError: for a window without the causal mask.
    """
    if key.window is not None and key.mask != "causal":
        raise ValueError("scaled_dot_product_attention: a window needs the causal mask")
    rejected = []
    for name in ("vector", "tiled"):
        ok, reason = supported(key, name)
        if ok and name == "vector":
            route, scratch, inter = _vector_route(key)
            return Plan(route, scratch, inter, False, tuple(rejected))
        if ok:
            return Plan(Route("tiled"), 0, 0, False, tuple(rejected))
        rejected.append((name, reason))
    if key.target.kind == "cpu":
        return _cpu_plan(key, tuple(rejected))
    rows = default = max(key.lq, 1)
    if key.cap is not None:
        rows = min(rows, composed_rows(key, key.cap))
    route = Route("composed", rows=rows)
    return Plan(route, 0, block_bytes(key, rows), rows < default, tuple(rejected))
