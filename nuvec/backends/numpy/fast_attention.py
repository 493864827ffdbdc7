"""CPU kernels of `nuvec.fast`'s attention nodes: the CPU attention kernel (`AttentionRows`)
computed in tiles, and nodes built for a GPU kernel (`Attention`, `AttentionVjp`, the paged
ops) through their fallback graphs (`run_on_cpu`).

float32 calls (half types computed in float32) without a mask array, sinks or rows that see no
key, on a machine with AVX-512 and a C compiler, compute each work item (batch, key head, up
to `FUSED_ROWS` stacked query rows) in one call of the fused C kernel (`attention.c`): scores,
online softmax and the product with the values in blocks of 64 keys held in registers and
cache, each key head's keys packed once a call (read as they are by items of at most
`UNPACKED_ROWS` rows), nothing the size of the scores written; float32 q, k and v with
contiguous rows are read where they are (`rows_in_place`: a transposed `[B, T, H, D]` view is
not copied). On the
causal `[1, 8, 1024, 64]` call it took 0.79 of the BLAS tiles' time on two threads (one
process, best of 30). Where every key head is one item (a short sequence), runs of items
go to the kernel in one call each (`nuvec_attention_items_f32`, a table of their arguments),
each item packing its head's keys first. Other calls take the BLAS tiles below. The backward
node (`AttentionRowsVjp`) in float32 computes a key head's gradients in one pass of the fused
kernel, runs of heads in one call each (`attention_rows_vjp`).

The BLAS tiles' work items are (batch, key head, query tile): the tile's rows of every query head
of that key head, scaled and stacked as one matrix in per-thread scratch, against only the keys
those rows see (key ranges fully masked by the causal mask or the window skipped), in chunks of
at most the plan's keys (an online softmax across chunks: running row maximum and sum, the
accumulator rescaled). Scores go through BLAS into per-thread scratch (`out=` everywhere),
computed as keys x rows (`k @ q.T`, a quarter faster than `q @ k.T` through OpenBLAS once a
chunk has hundreds of keys) and used through their transpose; so do the row sums (a product
with a column of ones, cheaper than a pass over the scores). A tile of a call without a mask
array or sinks whose scores are bounded (`|scale·q·k| <= |scale·q|·|k|` small enough that `exp`
of every score, and their sums with the values, stay finite and normal; the query norms taken
per tile, the key norms and value magnitudes per key head) skips the row maximum: it takes
`exp` of every score (`nuvec.backends.vector_math`, whose range check it skips) and zeroes the
causal diagonal's hidden entries by a product with a 0/1 mask built once per call; where
`vector_math.c`'s float32 `exp` is in use, one pass of `vector_math.exp_visible` does both and
takes the row sums too (in key order, instead of the product with ones), skipping the `exp`
of hidden scores. Other tiles
add the mask's bias (the dtype's lowest value) before the maximum. Every tile's bound is
taken before the items start, from two passes over all heads (a thread each), so the items
make only their products and passes over their scores; nothing the size of the inputs is
written but the output. Items run on the thread pool (at most the plan's live tiles at once)
with BLAS kept to one thread meanwhile; the tiles are the plan's, never the thread count's, so
a row's sums run in one order on any number of threads. A short sequence's items (one chunk of
at most `SMALL_ITEM` scores each, bounded, `exp_visible` in use) run in groups over consecutive
heads, a batched product each way and one `exp_visible` call per head: there the dozen calls an
item makes cost more than its products.
"""

from __future__ import annotations

import ctypes
import threading
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from nuvec.backends import native, vector_math
from nuvec.backends.numpy.registry import kernel
from nuvec.backends.threads import get_num_threads, one_blas_thread, parallel_items
from nuvec.fast.attention import Attention, AttentionRows
from nuvec.fast.attention_grad import AttentionRowsVjp, AttentionVjp
from nuvec.fast.base import cpu_fallback_kernel
from nuvec.fast.paged import PagedAttention, PagedWrite
from nuvec.fast.planner import causal_keys, split_rows
from nuvec.graph import dtypes as dt

kernel(Attention, AttentionVjp, PagedAttention, PagedWrite)(cpu_fallback_kernel)

# The largest score bound, and log of the largest sum of `exp(score)·value`, per dtype.
BOUNDS = {np.dtype(np.float32): (80.0, 85.0), np.dtype(np.float64): (700.0, 705.0)}
# Below this many multiply-adds a call runs on the calling thread with BLAS left as it is:
# waking workers and pinning BLAS (20-60 us) would cost more than the threads save.
MIN_THREADED_WORK = 1 << 22
# Items of at most this many scores (a short sequence's heads) are computed in groups of at
# most `GROUP_SCORES` scores, a batched product and one `exp_visible` pass each: an item's
# dozen NumPy and C calls cost more than its products there (64 heads of [128, 32] causal:
# about 90 us an item, 20 of them products and `exp`).
SMALL_ITEM = 1 << 15
GROUP_SCORES = 1 << 18
# Stacked query rows an item of the fused kernel computes at most (`attention.c`): on a causal
# `[1, 8, 1024, 64]` call (one thread) items of 96 to 192 rows took alike, 32 rows 1.15 times
# as long.
FUSED_ROWS = 128
# Items of at most this many stacked rows (decoding, a few grouped query heads) take their
# scores from the key rows as they are, each a sum across a vector's lanes: packing the keys,
# a pass that writes them all, cost more than these rows' products. Against 2048 keys in 8
# heads (D 64): 1 row 0.54 ms against 1.31 packed, 8 rows 0.76 against 1.35, 16 rows 0.95 to
# 1.09 against 1.30 to 1.45.
UNPACKED_ROWS = 16
_SOURCES = (Path(vector_math.__file__).with_name("vector_math.c"),
            Path(__file__).with_name("attention.c"))


class _Fused(NamedTuple):
    """`attention.c`'s functions: `pack` a key head's keys, compute an `item` (or several
    from a table: `items`), key heads' gradients from a table (`grads`); `block`: the keys
    a block."""

    pack: Any
    item: Any
    items: Any
    grads: Any
    block: int


ITEM_FIELDS = 26  # a row of `nuvec_attention_items_f32`'s table (attention.c)
GRAD_FIELDS = 17  # a row of `nuvec_attention_grads_f32`'s


def _bind(lib: ctypes.CDLL) -> _Fused | None:
    lib.nuvec_attention_block.restype = ctypes.c_int64
    block = lib.nuvec_attention_block()
    if not block:
        return None
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    pack, item = lib.nuvec_attention_pack_f32, lib.nuvec_attention_f32
    items, grads = lib.nuvec_attention_items_f32, lib.nuvec_attention_grads_f32
    pack.argtypes, pack.restype = [i64, i64, ptr, i64, ptr], None
    item.argtypes = ([i64] * 4 + [ptr, i64, i64, ctypes.c_float, ptr, ptr, i64, ptr, i64]
                     + [i64] * 5 + [ptr, i64, ptr])
    items.argtypes = grads.argtypes = [i64, ptr]
    item.restype = items.restype = grads.restype = ctypes.c_int
    return _Fused(pack, item, items, grads, int(block))


def _compute_dtype(dtype: np.dtype) -> type:
    """The dtype the CPU attention kernels compute `dtype` inputs in: float64 for float64,
    float32 for the rest (half types too)."""
    return np.float64 if dtype == np.float64 else np.float32


def _runs(n: int, work: int) -> list[tuple[int, int]]:
    """`n` items as runs `(start, stop)` of one C call each: one run below
    `MIN_THREADED_WORK` of work, else four a thread (at most `n`)."""
    count = 1 if work < MIN_THREADED_WORK else min(n, 4 * get_num_threads())
    bounds = [n * i // count for i in range(count + 1)]
    return list(zip(bounds, bounds[1:]))


def _as_bits(scale: float) -> int:
    """`scale`'s float32 bits, as the C tables carry it."""
    return int(np.float32(scale).view(np.int32))


def _table(columns: tuple, rows: int, fields: int) -> np.ndarray:
    """An int64 table of `rows` rows from `columns` (numbers or arrays of `rows`)."""
    table = np.empty((rows, fields), np.int64)
    for j, column in enumerate(columns):
        table[:, j] = column
    return table


def rows_in_place(a: np.ndarray) -> np.ndarray:
    """`a` itself where it is float32 with contiguous rows and strides of whole floats (a
    transposed `[B, T, H, D]` view, say: the fused kernel reads it where it is), else a
    contiguous float32 copy."""
    if a.dtype == np.float32 and a.strides[-1] == 4 and not any(st % 4 for st in a.strides):
        return a
    return np.ascontiguousarray(a, np.float32)


def fused_kernel() -> _Fused | None:
    """`attention.c` built for this machine, or None (no compiler, no AVX-512)."""
    return native.bound(_SOURCES, _bind)


def diagonal_hidden(rows: int, window: int | None) -> list[tuple[int, np.ndarray]]:
    """`(first key relative to a tile's first row position, hidden)` pieces marking the scores
    a tile of `rows` rows does not see near its diagonal: keys after each row's position, and
    with a window those before its window; each keys x rows, as the kernel's scores."""
    i = np.arange(rows)[None, :]
    if window is not None and window < rows:
        c = np.arange(rows + window - 1)[:, None]  # from the first row's window start
        return [(1 - window, (c < i) | (c > i + window - 1))]
    c = np.arange(rows)[:, None]
    pieces = [(0, c > i)]
    if window is not None:
        pieces.append((1 - window, c < i))
    return pieces


# (rows, window, dtype) -> `_diagonal`'s pieces, for those of at most `DIAGONAL_BYTES`
_diagonals: dict[tuple, tuple[tuple, tuple]] = {}
DIAGONAL_BYTES = 1 << 22


def _diagonal(rows: int, window: int | None, f) -> tuple[tuple, tuple]:
    """`diagonal_hidden`'s pieces and their 0/1 counterparts in `f` (`hide` after `exp`),
    read-only and kept (up to `DIAGONAL_BYTES` of them, so a long window's are made each
    call): making them took about 0.19 ms of a causal `[1, 8, 1024, 64]` call, before its
    items started."""
    key = (rows, window, np.dtype(f))
    found = _diagonals.get(key)
    if found is None:
        hidden = tuple(diagonal_hidden(rows, window))
        keep = tuple((start, (~h).astype(f)) for start, h in hidden)
        for _, b in hidden + keep:
            b.setflags(write=False)
        found = (hidden, keep)
        if sum(b.nbytes for _, b in hidden + keep) <= DIAGONAL_BYTES:
            if len(_diagonals) >= 16:
                _diagonals.clear()
            _diagonals[key] = found
    return found


class Scratch:
    """One thread's buffers for the tiles of a call: `rows` stacked query rows, chunks of
    `width` keys."""

    def __init__(self, rows: int, width: int, d: int, dv: int, f):
        self.width, self.d = width, d
        self.q, self.s = np.empty(rows * d, f), np.empty(rows * width, f)
        self.acc, self.part = np.empty((rows, dv), f), np.empty((rows, dv), f)
        self.total, self.psum = np.empty((rows, 1), f), np.empty((rows, 1), f)
        self.top, self.m = np.empty((rows, 1), f), np.empty((rows, 1), f)
        self.unit = np.ones((width, 1), f)  # the row sums as a product


class Tiles:
    """One call of the kernel: its inputs in the compute dtype, its items and output."""

    def __init__(self, p, q, k, v, rest):
        self.p, f = p, _compute_dtype(q.dtype)
        self.f, self.q = f, q
        self.k, self.v = k.astype(f, copy=False), v.astype(f, copy=False)
        b, hq, r, d = q.shape
        hkv, lk, dv = k.shape[1], k.shape[2], v.shape[3]
        self.rep, self.lk = hq // hkv, lk
        rest = list(rest)
        self.sinks = rest.pop().astype(f) if p.sinks else None
        self.mask = rest[0] if p.mask else None
        self.fill = float(dt.finfo(dt.from_numpy_dtype(q.dtype)).min)
        self.blind = min(r, max(0, -p.offset)) if p.causal else 0
        # Masks, sinks and rows that see no key take the exact path; any other tile skips
        # the row maximum when its scores are bounded (see `settle`), or is the fused
        # kernel's in float32 where it is built and the plan's tiles hold a block of keys.
        self.exact = self.mask is not None or self.sinks is not None or self.blind > 0
        fused = fused_kernel() if f is np.float32 and not self.exact and lk else None
        self.fused = fused if fused and p.tile_keys >= min(fused.block, lk) else None
        self.rows = max(1, min(p.tile_rows, r))
        if self.fused:
            self.rows = min(self.rows, max(1, FUSED_ROWS // self.rep))
        self.hidden, self.keep = _diagonal(self.rows, p.window, f) \
            if p.causal and not self.fused else ((), ())
        self.additive = self.mask is not None and self.mask.dtype != np.bool_
        self.scale = f(p.scale)
        self.tiles = list(split_rows(r, self.blind, self.rows))
        # whether each tile of a key head is bounded (`settle`, at the start of `run`)
        self.heads = [(False,) * len(self.tiles)] * (b * hkv)
        self.out = np.empty((b, hq, r, dv), f)
        self.scratch: dict[int, Scratch] = {}
        self.grouped: dict[int, Scratch] = {}  # (`group_buffers`)
        self.lock, self.qkv = threading.Lock(), None  # (`stacked`)
        items = []  # (cost, batch, key head, tile, rows r0..r1, the keys k0..k1 they see)
        for t, (r0, r1) in enumerate(self.tiles):
            k0, k1 = causal_keys(p.offset, lk, p.window, r0, r1) if p.causal else (0, lk)
            items += [((r1 - r0) * (k1 - k0), bi, h, t, r0, r1, k0, k1) for bi in range(b)
                      for h in range(hkv)]
        # A key head's tiles one after another (its keys and values stay in cache), the
        # costliest first: the last items are small, for balance.
        items.sort(key=lambda t: (t[1], t[2], -t[0]))
        self.items = items
        self.work = sum(t[0] for t in items) * self.rep * (d + dv)
        self.units = self.groups() if self.groupable() else [(i,) for i in range(len(items))]
        self.table = np.empty((0, ITEM_FIELDS), np.int64)  # (`fused_table`)
        self.kt, self.packed = None, [False] * (b * hkv)  # (`fused_item`)
        self.inputs: list[np.ndarray] = []  # q, k, v as the fused kernel reads them

    def buffers(self) -> Scratch:
        """This thread's scratch for the call (made on its first item)."""
        mine = self.scratch.get(threading.get_ident())
        if mine is None:
            rows = self.rep * self.rows
            width = min(self.p.tile_keys, max(1, self.lk))
            mine = self.scratch[threading.get_ident()] = Scratch(
                rows, width, self.q.shape[3], self.v.shape[3], self.f)
        return mine

    def run(self) -> np.ndarray:
        # the bounds first (where tiles may be bounded): the queries' norms and the keys' and
        # values', two passes over every head at once (a thread each)
        bounds = [] if self.exact or self.fused or not self.tiles \
            else [self.query_norms, self.key_bounds]
        if self.fused:
            self.table = self.fused_table()
            if len(self.tiles) == 1:  # a key head an item: items batched, each packing its head
                self.units = self.fused_units()
        if self.work < MIN_THREADED_WORK:
            if bounds:
                self.settle(*(pass_() for pass_ in bounds))
            for unit in self.units:
                self.unit(unit)
            return self.out
        found: list = [None] * len(bounds)
        left, lock, ready = [len(bounds)], threading.Lock(), threading.Event()
        if not bounds:
            ready.set()

        def work(i: int) -> None:
            if i >= len(bounds):
                ready.wait()  # (set once both passes are done, even if one failed)
                self.unit(self.units[i - len(bounds)])
                return
            try:
                found[i] = bounds[i]()
            finally:
                with lock:
                    left[0] -= 1
                    last = left[0] == 0
                if last:
                    try:
                        if all(f is not None for f in found):  # (else: the exact path)
                            self.settle(*found)
                    finally:
                        ready.set()

        with one_blas_thread():
            parallel_items(len(bounds) + len(self.units), work, threads=self.p.live)
        return self.out

    def groupable(self) -> bool:
        """Whether small items may be grouped: no mask array, sinks or blind rows, and
        `vector_math.exp_visible` in use (the bounded path's one pass)."""
        return (not self.exact and not self.fused and vector_math.in_use() == "c"
                and self.f is np.float32 and len(self.items) > 1)

    def groups(self) -> list[tuple[int, ...]]:
        """The items as units of work: runs of consecutive items of one tile geometry, one
        chunk of keys each and at most `SMALL_ITEM` scores, over consecutive heads (batch
        `bi`, key head `h` as `bi * key heads + h`), in groups of at most `GROUP_SCORES`
        scores; every other item alone. A group holds at most the plan's live tiles shared
        among the threads, so the scores held at once stay under its cap."""
        hkv, width = self.k.shape[1], min(self.p.tile_keys, max(1, self.lk))
        most = max(1, self.p.live // max(1, min(get_num_threads(), self.p.live)))
        units: list[tuple[int, ...]] = []
        run: list[int] = []
        for i, (cost, bi, h, t, r0, r1, k0, k1) in enumerate(self.items):
            small = k1 - k0 <= width and cost * self.rep <= SMALL_ITEM
            if run:
                _, b0, h0, t0, *span = self.items[run[0]]
                follows = (bi * hkv + h == b0 * hkv + h0 + len(run) and t == t0
                           and span == [r0, r1, k0, k1])
                if (small and follows and len(run) < most
                        and (len(run) + 1) * cost * self.rep <= GROUP_SCORES):
                    run.append(i)
                    continue
                units.append(tuple(run))
                run = []
            if small:
                run = [i]
            else:
                units.append((i,))
        if run:
            units.append(tuple(run))
        return units

    def unit(self, unit: tuple[int, ...]) -> None:
        """Computes a unit of `groups` or `fused_units`: one item, or a group of small ones."""
        if self.fused and len(unit) > 1:
            self.fused_run(unit)
            return
        if len(unit) == 1:
            self.item(unit[0])
            return
        heads = [self.items[i][1:3] for i in unit]
        t = self.items[unit[0]][3]
        if not all(self.prepare(bi, h)[t] for bi, h in heads):  # (unbounded: the exact path)
            for i in unit:
                self.item(i)
            return
        self.group(unit)

    def group(self, unit: tuple[int, ...]) -> None:
        """A group of small bounded items of one geometry over consecutive heads: their
        scaled query rows stacked per item, the scores of every item (keys x stacked rows)
        through one batched product, an `exp_visible` pass each, one batched product with the
        values."""
        _, bi, h, _, r0, r1, k0, k1 = self.items[unit[0]]
        b, hkv = self.k.shape[:2]
        rep, n, g, keys = self.rep, r1 - r0, len(unit), k1 - k0
        rows, d, dv = rep * n, self.q.shape[3], self.v.shape[3]
        u0 = bi * hkv + h
        q4, k3, v3 = self.stacked()
        sc = self.group_buffers(g * rows, keys)
        qt = sc.q[:g * rows * d].reshape(g, rep, n, d)
        np.multiply(q4[u0:u0 + g, :, r0:r1], self.scale, out=qt)
        st = sc.s[:g * keys * rows].reshape(g, keys, rows)
        np.matmul(k3[u0:u0 + g, k0:k1], qt.reshape(g, rows, d).transpose(0, 2, 1), out=st)
        total = sc.total[:g * rows].reshape(g, rows)
        for j in range(g):
            if not self.visible(st[j], n, r0, k0, total[j]):
                for i in unit:  # (nothing done: `vector_math` fell back to NumPy meanwhile)
                    self.item(i)
                return
        acc = sc.acc[:g * rows].reshape(g, rows, dv)
        np.matmul(st.transpose(0, 2, 1), v3[u0:u0 + g, k0:k1], out=acc)
        out4 = self.out.reshape(b * hkv, rep, -1, dv)
        np.divide(acc.reshape(g, rep, n, dv), total.reshape(g, rep, n, 1),
                  out=out4[u0:u0 + g, :, r0:r1])

    def stacked(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The queries as `[batch * key heads, query heads a key head, rows, D]`, the keys and
        values as `[batch * key heads, keys, D]` (copies made once a call, where they are not
        contiguous)."""
        with self.lock:
            if self.qkv is None:
                (b, hkv, lk), r = self.k.shape[:3], self.q.shape[2]
                self.qkv = (np.ascontiguousarray(self.q).reshape(b * hkv, self.rep, r, -1),
                            np.ascontiguousarray(self.k).reshape(b * hkv, lk, -1),
                            np.ascontiguousarray(self.v).reshape(b * hkv, lk, -1))
            return self.qkv

    def group_buffers(self, rows: int, keys: int) -> Scratch:
        """This thread's scratch for groups of `rows` stacked rows over `keys` keys."""
        mine = self.grouped.get(threading.get_ident())
        if mine is None or mine.acc.shape[0] < rows or mine.width < keys:
            mine = self.grouped[threading.get_ident()] = Scratch(
                rows, keys, self.q.shape[3], self.v.shape[3], self.f)
        return mine

    def fused_table(self) -> np.ndarray:
        """The fused kernel's arguments for every item, a row an item as `attention.c`'s
        `nuvec_attention_items_f32` reads them: its key head's packing (`kt`, made here;
        zeros where the items read the key rows unpacked), then `nuvec_attention_f32`'s
        arguments: addresses and row strides in the inputs as they are (`rows_in_place`) and
        in the output, `scale` as its float32's bits."""
        # (kept for the call: the items read them by address)
        self.inputs = q4, k4, v4 = [rows_in_place(a) for a in (self.q, self.k, self.v)]
        (b, hkv, lk, d), r, dv = k4.shape, q4.shape[2], v4.shape[3]
        p, rep = self.p, self.rep
        (qb, qh, qr), (kb, kh, kr), (vb, vh, vr) = (
            [step // 4 for step in a.strides[:3]] for a in (q4, k4, v4))
        q, k, v, out = (native.address(a) for a in (q4, k4, v4, self.out))
        bi, h, _, r0, r1, k0, k1 = np.array([t[1:] for t in self.items], np.int64).reshape(-1, 7).T
        u = bi * hkv + h
        span = -(-lk // self.fused.block) * self.fused.block * d
        if rep * self.rows <= UNPACKED_ROWS:  # (scores from the key rows: nothing packed)
            self.packed = [True] * (b * hkv)
            kt = np.zeros_like(u)
        else:
            self.kt = np.empty((b * hkv, span), np.float32)
            kt = native.address(self.kt) + 4 * u * span
        key_rows = k + 4 * (bi * kb + h * kh)
        columns = (lk, d, key_rows, kr, kt,
                   rep, r1 - r0, d, dv, q + 4 * (bi * qb + h * rep * qh + r0 * qr), qh, qr,
                   _as_bits(self.scale), kt, key_rows, kr, v + 4 * (bi * vb + h * vh), vr, k0,
                   k1, int(p.causal), p.offset + r0, p.window or 0,
                   out + 4 * ((u * rep * r + r0) * dv), r * dv, 0)
        return _table(columns, len(u), ITEM_FIELDS)

    def fused_units(self) -> list[tuple[int, ...]]:
        """Runs of consecutive items for `nuvec_attention_items_f32` (every key head one
        item), as `_runs` cuts them."""
        return [tuple(range(a, z)) for a, z in _runs(len(self.items), self.work)]

    def fused_run(self, unit: tuple[int, ...]) -> None:
        """A run of items (`fused_units`) through one call of the fused kernel, each packing
        its key head's keys first."""
        rows = self.table[unit[0]:unit[-1] + 1]
        if self.fused.items(len(rows), native.address(rows)):
            raise MemoryError("scaled_dot_product_attention: no memory for a tile of "
                              f"{self.rep * self.rows} rows")

    def fused_item(self, i: int) -> None:
        """Item `i` through the fused kernel: its key head's keys packed if no item has yet,
        then one C call."""
        u = self.items[i][1] * self.k.shape[1] + self.items[i][2]
        row = self.table[i].tolist()
        if not self.packed[u]:
            with self.lock:
                if not self.packed[u]:
                    self.fused.pack(*row[:5])
                    self.packed[u] = True
        args = row[5:]
        args[7] = float(self.scale)
        if self.fused.item(*args):
            raise MemoryError(f"scaled_dot_product_attention: no memory for a tile of "
                              f"{args[0] * args[1]} rows")

    def item(self, i: int) -> None:
        if self.fused:
            self.fused_item(i)
            return
        _, bi, h, t, r0, r1, k0, k1 = self.items[i]
        rep, n, sc = self.rep, r1 - r0, self.buffers()
        rows, heads = rep * n, slice(h * rep, (h + 1) * rep)
        qt = sc.q[:rows * sc.d].reshape(rep, n, sc.d)  # the query heads' rows scaled, stacked
        np.multiply(self.q[bi, heads, r0:r1], self.scale, out=qt)
        qt = qt.reshape(rows, sc.d)
        acc, total = sc.acc[:rows], sc.total[:rows]
        top = None if self.prepare(bi, h)[t] else sc.top[:rows]
        sink = None if self.sinks is None else np.repeat(self.sinks[heads], n)[:, None]
        kh, vh = self.k[bi, h], self.v[bi, h]
        for c0 in range(k0, k1, sc.width):
            c1 = min(k1, c0 + sc.width)
            st = sc.s[:rows * (c1 - c0)].reshape(c1 - c0, rows)
            np.matmul(kh[c0:c1], qt.T, out=st)  # keys x rows through BLAS
            first = c0 == k0
            if top is None:  # bounded: `exp` of every score unchecked, the masked ones zeroed
                if self.visible(st, n, r0, c0, total if first else sc.psum[:rows]):
                    self.chunk(st.T, first, vh[c0:c1], sc, rows, None, sink, summed=True)
                    continue
                vector_math.exp(st, st, in_range=True)
            self.hide(st, bi, heads, r0, r1, c0, c1, after_exp=top is None)
            self.chunk(st.T, first, vh[c0:c1], sc, rows, top, sink)
        if sink is not None:
            total += np.exp(sink - top)
        np.divide(acc.reshape(rep, n, -1), total.reshape(rep, n, 1),
                  out=self.out[bi, heads, r0:r1])

    def prepare(self, bi: int, h: int) -> tuple[bool, ...]:
        """Whether each tile of key head `h` of batch `bi` is bounded (`settle`)."""
        return self.heads[bi * self.k.shape[1] + h]

    def query_norms(self) -> np.ndarray:
        """The largest norm of each tile's scaled query rows over each key head's query heads,
        `[batch, key heads, tiles]`."""
        q, (b, hkv), r = self.q, self.k.shape[:2], self.q.shape[2]
        with np.errstate(over="ignore", invalid="ignore"):
            rows = np.einsum("bhrd,bhrd->bhr", q, q, dtype=self.f)
            rows = rows.reshape(b, hkv, self.rep, r).max(axis=2)
            starts = [r0 for r0, _ in self.tiles]
            return abs(float(self.scale)) * np.sqrt(
                np.maximum.reduceat(rows, starts, axis=2).astype(np.float64))

    def key_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The largest norm of each key head's keys and magnitude of its values,
        `[batch, key heads]` each."""
        k, v = self.k, self.v
        with np.errstate(over="ignore", invalid="ignore"):
            knorm = np.sqrt(np.einsum("bhkd,bhkd->bhk", k, k).max(axis=2).astype(np.float64)) \
                if k.size else np.zeros(k.shape[:2])
            vtop = np.maximum(v.max(axis=(2, 3)), -v.min(axis=(2, 3))).astype(np.float64) \
                if v.size else np.zeros(k.shape[:2])
        return knorm, vtop

    def settle(self, norms: np.ndarray, keys: tuple[np.ndarray, np.ndarray]) -> None:
        """Whether each tile is bounded, into `heads`: whether its scores, and every sum of
        `exp(score)·value`, stay finite and normal without subtracting the row maximum:
        `|scale·q·k| <= |scale·q|·|k|` under the dtype's bounds (which leave room for the
        rounding of the norms and the scores), from `query_norms` and `key_bounds`. Those
        are two passes over every head at once: one pass per key head, as work items, made
        many short NumPy calls that took turns on the GIL (about 1 ms of a causal
        `[1, 8, 1024, 64]` call's 10 on two threads)."""
        knorm, vtop = keys
        limit, total_limit = BOUNDS[np.dtype(self.f)]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            score = norms * knorm[..., None]
            top = np.log(self.lk * np.maximum(vtop, 1.0))[..., None]
            ok = (score <= limit) & (score + top <= total_limit)
        self.heads = [tuple(tiles) for tiles in ok.reshape(len(self.heads), -1).tolist()]

    def visible(self, st, n, r0, c0, sums) -> bool:
        """`exp` of a bounded tile's chunk of scores `st` (keys from `c0` x the stacked rows
        of `n` rows from `r0`) in place, its hidden entries zeroed and its row sums into
        `sums` (one per row, contiguous), in one pass of `vector_math.exp_visible`; False
        where that does not run."""
        p = self.p
        if not p.causal:  # every key visible: positions past the chunk's last key
            return vector_math.exp_visible(st, n, st.shape[0], None, sums)
        return vector_math.exp_visible(st, n, p.offset + r0 - c0, p.window, sums)

    def chunk(self, s, first, values, sc, rows, top, sink, summed: bool = False) -> None:
        """Adds a chunk of scores `s` to the tile's accumulator, row sums and (exact path)
        running row maximum `top`; on the bounded path (`top` None) `s` holds their `exp`,
        and with `summed` their row sums are already in the tile's sums (`first`) or in
        `sc.psum`."""
        acc, total, w = sc.acc[:rows], sc.total[:rows], s.shape[1]
        if top is not None:
            m = top if first else sc.m[:rows]
            np.max(s, axis=1, keepdims=True, out=m)
            if self.additive:
                np.maximum(m, self.fill, out=m)  # rows an additive -inf hides entirely
            if first and sink is not None:
                np.maximum(m, sink, out=m)
            if not first:
                np.maximum(m, top, out=m)
                np.subtract(top, m, out=top)
                alpha = np.exp(top, out=top)
                acc *= alpha
                total *= alpha
                top[...] = m
            s -= top
            vector_math.exp(s, s)
        if first:
            np.matmul(s, values, out=acc)
            if not summed:
                np.matmul(s, sc.unit[:w], out=total)
            return
        acc += np.matmul(s, values, out=sc.part[:rows])
        total += sc.psum[:rows] if summed else np.matmul(s, sc.unit[:w], out=sc.psum[:rows])

    def hide(self, st, bi, heads, r0, r1, c0, c1, after_exp: bool = False) -> None:
        """Masks a chunk of scores (`st`: keys `c0..c1` x the tile's stacked rows): a blind
        tile entirely, the causal diagonal's hidden scores set to the dtype's lowest value (as
        the formula's `where`: a NaN or infinite score there is hidden too), a mask array's
        part. `after_exp` (a bounded tile: finite scores, no blind rows, no mask array) masks
        their `exp` instead, by a product with the 0/1 counterpart (`exp` of a masked score is
        exactly 0 either way)."""
        p = self.p
        if p.causal and r0 < self.blind:
            st[...] = self.fill
            return
        n, pos = r1 - r0, p.offset + r0
        s3 = st.reshape(c1 - c0, self.rep, n)
        for start, piece in (self.keep if after_exp else self.hidden):
            lo, hi = max(c0, pos + start), min(c1, pos + start + piece.shape[0])
            if lo < hi:
                part = piece[lo - pos - start:hi - pos - start, None, :n]
                if after_exp:
                    s3[lo - c0:hi - c0] *= part
                else:
                    np.copyto(s3[lo - c0:hi - c0], self.fill, where=part)
        if self.mask is not None:
            m = self.mask[bi, heads, r0:r1, c0:c1].transpose(2, 0, 1)
            if m.dtype == np.bool_:
                np.copyto(s3, self.fill, where=~m)
            else:
                s3 += m


@kernel(AttentionRows)
def attention_rows(p, q, k, v, *rest):
    """The CPU attention kernel over the node's query rows (see the module docstring)."""
    return Tiles(p, q, k, v, rest).run()


def _hidden_keys(p, lq: int, lk: int, rep: int) -> np.ndarray | None:
    """True where a stacked query row (`rep` heads of `lq` rows) does not see a key (causal,
    offset `lk - lq`, and the window); None without a causal mask."""
    if not p.causal:
        return None
    qi = np.arange(lk - lq, lk)[:, None]
    ki = np.arange(lk)[None, :]
    hidden = ki > qi
    if p.window is not None:
        hidden |= ki <= qi - p.window
    return np.tile(hidden, (rep, 1))


class _Backward:
    """One call of the CPU attention backward (`attention_rows_vjp`): the inputs stacked per
    key head (its query heads' rows one after another) in the compute dtype, the outputs."""

    def __init__(self, p, q, k, v, out, dout):
        f = self.f = _compute_dtype(q.dtype)
        b, hq, self.lq, d = q.shape
        hkv, self.lk, dv = k.shape[1], k.shape[2], v.shape[3]
        self.p, self.rep, self.units = p, hq // hkv, b * hkv
        self.rows = rows = self.rep * self.lq

        def stacked(a, n, width):
            return np.ascontiguousarray(a, f).reshape(self.units, n, width)

        self.q, self.k = stacked(q, rows, d), stacked(k, self.lk, d)
        self.v = stacked(v, self.lk, dv)
        self.o, self.do = stacked(out, rows, dv), stacked(dout, rows, dv)
        self.dq = np.empty((self.units, rows, d), f)
        self.dk = np.empty((self.units, self.lk, d), f)
        self.dv = np.empty((self.units, self.lk, dv), f)
        self.scale = f(p.scale)
        size = max(1, GROUP_SCORES // max(1, rows * self.lk))
        self.starts = list(range(0, self.units, size))
        self.size = size
        # the fused kernel's gradients, a key head an item, in float32 where every row sees a
        # key (the forward's condition); else the BLAS groups, bounded where their scores are
        fused = fused_kernel() if f is np.float32 and self.lk else None
        self.fused = fused if fused and not (p.causal and self.lq > self.lk) else None
        self.bounded = None if self.fused else self.bounds()
        self.hidden: np.ndarray | None = None  # the masked scores, made by the first exact group

    def bounds(self) -> np.ndarray:
        """Whether each key head's scores are bounded and `exp_visible` takes them (`exp`
        without the row maximum): `|scale·q·k| <= |scale·q|·|k|` under `BOUNDS`' score limit,
        and with `log(keys)` added under its sum limit, so each row's sum stays finite."""
        if self.f is not np.float32 or vector_math.in_use() != "c":
            return np.zeros(self.units, bool)
        limit, total_limit = BOUNDS[np.dtype(self.f)]
        with np.errstate(over="ignore", invalid="ignore"):
            qn = np.sqrt(np.einsum("urd,urd->ur", self.q, self.q).max(axis=1).astype(np.float64))
            kn = np.sqrt(np.einsum("ukd,ukd->uk", self.k, self.k).max(axis=1).astype(np.float64))
            score = abs(float(self.scale)) * qn * kn
            return (score <= limit) & (score + np.log(self.lk) <= total_limit)

    def fused_table(self) -> np.ndarray:
        """Every key head's arguments for the fused kernel's gradients, a row a head as
        `attention.c`'s `nuvec_attention_grads_f32` reads them."""
        u, p = np.arange(self.units, dtype=np.int64), self.p
        arrays = (self.q, self.k, self.v, self.o, self.do, self.dq, self.dk, self.dv)
        q, k, v, o, do, dq, dk, dvo = (native.address(a) + u * a.strides[0] for a in arrays)
        columns = (self.rep, self.lq, self.lk, self.q.shape[2], self.v.shape[2],
                   _as_bits(self.scale), q, k, v, o, do, int(p.causal), self.lk - self.lq,
                   p.window or 0, dq, dk, dvo)
        return _table(columns, self.units, GRAD_FIELDS)

    def fused_run(self, rows: np.ndarray) -> None:
        """The gradients of the key heads `rows` (of `fused_table`) hold: one C call."""
        if self.fused.grads(len(rows), native.address(rows)):
            raise MemoryError(f"scaled_dot_product_attention: no memory for the gradients of "
                              f"a key head of {self.rows} rows and {self.lk} keys")

    def group(self, i: int) -> None:
        u0 = self.starts[i]
        u1 = min(self.units, u0 + self.size)
        if self.bounded[u0:u1].all() and self.visible_group(u0, u1):
            return
        self.exact_group(u0, u1)

    def visible_group(self, u0: int, u1: int) -> bool:
        """Key heads `u0..u1` with bounded scores, as keys x rows: `E = exp(S)` with the mask's
        entries 0 and the row sums `l` in one `exp_visible` pass a head, then with
        `dO' = dO / l`: `dV = E dO'`, `dS = E ⊙ (V dO'ᵀ − rowsum(dO' ⊙ O))` (keys x rows, 0
        where masked),
        `dK = dS (scale·Q)`, `dQ = scale · dSᵀ K`. False, with nothing written, where
        `exp_visible` does not run."""
        g = u1 - u0
        qs = np.multiply(self.q[u0:u1], self.scale)
        st = np.matmul(self.k[u0:u1], qs.transpose(0, 2, 1))  # [g, keys, rows]
        sums = np.empty((g, self.rows), self.f)
        for j in range(g):
            if not self.visible_head(st[j], sums[j]):
                return False
        do = self.do[u0:u1] / sums[..., None]
        np.matmul(st, do, out=self.dv[u0:u1])
        ds = np.matmul(self.v[u0:u1], do.transpose(0, 2, 1))  # [g, keys, rows]
        ds -= np.einsum("gri,gri->gr", do, self.o[u0:u1])[:, None, :]
        ds *= st
        hidden = self.hidden_keys()
        if hidden is not None:  # (as `exact_group`)
            np.copyto(ds, 0, where=hidden.T)
        np.matmul(ds, qs, out=self.dk[u0:u1])
        np.matmul(ds.transpose(0, 2, 1), self.k[u0:u1], out=self.dq[u0:u1])
        self.dq[u0:u1] *= self.scale
        return True

    def visible_head(self, st: np.ndarray, sums: np.ndarray) -> bool:
        """`exp_visible` of one key head's scores (keys x its stacked rows)."""
        p = self.p
        if not p.causal:
            return vector_math.exp_visible(st, self.lq, st.shape[0], None, sums)
        return vector_math.exp_visible(st, self.lq, self.lk - self.lq, p.window, sums)

    def hidden_keys(self) -> np.ndarray | None:
        """`_hidden_keys` of the call (stacked rows x keys), made by the first group that
        needs it (two threads may both make it: the same)."""
        if self.hidden is None and self.p.causal:
            self.hidden = _hidden_keys(self.p, self.lq, self.lk, self.rep)
        return self.hidden

    def exact_group(self, u0: int, u1: int) -> None:
        """Key heads `u0..u1` as rows x keys, the masked scores set to -inf and each row's
        maximum subtracted before `exp`; the same steps with `dO' = dO / l`, `dS` 0 where
        masked (as the formula's `where`: a NaN or infinity in a masked key or value stays
        out of the scores' gradient)."""
        qs = np.multiply(self.q[u0:u1], self.scale)
        s = np.matmul(qs, self.k[u0:u1].transpose(0, 2, 1))  # [g, rows, keys]
        hidden = self.hidden_keys()
        if hidden is not None:
            np.copyto(s, -np.inf, where=hidden)
        s -= s.max(axis=-1, keepdims=True)
        vector_math.exp(s, s)
        do = self.do[u0:u1] / s.sum(axis=-1, keepdims=True)
        np.matmul(s.transpose(0, 2, 1), do, out=self.dv[u0:u1])
        ds = np.matmul(do, self.v[u0:u1].transpose(0, 2, 1))
        ds -= np.einsum("gri,gri->gr", do, self.o[u0:u1])[..., None]
        ds *= s
        if hidden is not None:
            np.copyto(ds, 0, where=hidden)
        np.matmul(ds, self.k[u0:u1], out=self.dq[u0:u1])
        self.dq[u0:u1] *= self.scale
        np.matmul(ds.transpose(0, 2, 1), qs, out=self.dk[u0:u1])


@kernel(AttentionRowsVjp)
def attention_rows_vjp(p, q, k, v, out, dout):
    """`AttentionRowsVjp` on the CPU: per key head, its query heads' rows stacked, the scores
    recomputed and their softmax taken, then `dV = Pᵀ dO`, `dS = P ⊙ (dO Vᵀ − rowsum(dO ⊙ O))`,
    `dQ = scale · dS K`, `dK = dSᵀ (scale · Q)`, half types in float32 (and their results
    rounded once). In float32 where the fused kernel is built
    (and every row sees a key), one pass a key head, runs of heads one C call each
    (`attention.c`: blocks of keys against
    chunks of rows, nothing the size of the scores written); otherwise with the softmax's sums
    folded into `dO`, without the row maximum where bounded (as the forward kernel's tiles), key
    heads in groups of at most `GROUP_SCORES` scores, one batched product per step, a block of
    query rows after another where the node has blocks. Key heads or groups run on the thread
    pool (BLAS on one thread meanwhile); a result does not depend on the thread count."""
    blocks = p.blocks(q.shape[2], k.shape[2])
    f = _compute_dtype(q.dtype)
    if blocks is None or (f is np.float32 and fused_kernel()):
        grads = _rows_vjp(p, q, k, v, out, dout)
    else:  # the BLAS path holds a key head's scores: a node with blocks takes them in turn
        grads = (np.empty(q.shape, f), np.zeros(k.shape, f), np.zeros(v.shape, f))
        for s, e, lo, hi in blocks:
            dq, dk, dv = _rows_vjp(p, q[:, :, s:e], k[:, :, lo:hi], v[:, :, lo:hi],
                                   out[:, :, s:e], dout[:, :, s:e])
            grads[0][:, :, s:e] = dq
            grads[1][:, :, lo:hi] += dk
            grads[2][:, :, lo:hi] += dv
    return tuple(g.astype(a.dtype, copy=False) for g, a in zip(grads, (q, k, v)))


def _rows_vjp(p, q, k, v, out, dout):
    """`attention_rows_vjp` over the whole of its inputs (one block), in the compute dtype
    (float32, or float64 for float64 inputs)."""
    call = _Backward(p, q, k, v, out, dout)
    work = call.units * call.rows * call.lk * (q.shape[3] + v.shape[3]) * 2
    if call.fused:  # runs of key heads, one C call each
        table, runs = call.fused_table(), _runs(call.units, work)
        parallel_items(len(runs), lambda i: call.fused_run(table[runs[i][0]:runs[i][1]]))
    elif work < MIN_THREADED_WORK or len(call.starts) == 1:
        for i in range(len(call.starts)):
            call.group(i)
    else:
        with one_blas_thread():
            parallel_items(len(call.starts), call.group)
    return call.dq.reshape(q.shape), call.dk.reshape(k.shape), call.dv.reshape(v.shape)
