"""Paged attention over block-table KV caches, and writing tokens into such a cache.

A cache is `[blocks, Hkv, block_size, D]`; sequence `b` lists its blocks in
`block_tables[b]`. The fallbacks gather the listed blocks (ids clamped to the cache, as the
kernels do) and attend with a mask of each sequence's positions.
"""

from __future__ import annotations

from typing import Any

from nuvec.fast.attention import scaled_dot_product_attention
from nuvec.fast.base import FastOp, as_f32_bits, floating, mx, one
from nuvec.graph import dtypes as dt
from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array
from nuvec.graph.device import stream as stream_context, to_stream
from nuvec.ops.arguments import as_array, real_number

__all__ = ["paged_attention", "paged_write"]


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def paged_keys(cache: Array, tables: Array) -> Array:
    """The keys of every listed block per sequence, `[B, Hkv, max_blocks * block_size, D]`.

    Block ids are clamped to `0..blocks`, as the kernels do.
    """
    ops = mx()
    b, max_blocks = tables.shape
    blocks, hkv, bs, d = cache.shape
    ids = ops.clip(ops.reshape(tables, (-1,)), 0, max(blocks - 1, 0))
    gathered = ops.take(cache, ids, axis=0)  # [B * M, Hkv, bs, D]
    gathered = ops.reshape(gathered, (b, max_blocks, hkv, bs, d))
    gathered = ops.transpose(gathered, (0, 2, 1, 3, 4))
    return ops.reshape(gathered, (b, hkv, max_blocks * bs, d))


def paged_attention_graph(inputs, scale: float) -> Array:
    """`paged_attention` from ordinary operations: every listed block gathered, then
    attention with a mask of each sequence's positions."""
    ops = mx()
    q, k_cache, v_cache, tables, lengths = inputs
    b, lq = q.shape[0], q.shape[2]
    k, v = paged_keys(k_cache, tables), paged_keys(v_cache, tables)
    s = k.shape[2]
    # Lengths past the capacity see every listed position (clamped first, so that the
    # arithmetic below cannot wrap).
    lengths = ops.clip(lengths, 0, s)
    # Query `l` sees positions up to `lengths[b] - L + l`.
    positions = ops.reshape(ops.arange(s, dtype=dt.int32), (1, 1, 1, s))
    queries = ops.reshape(ops.arange(lq, dtype=dt.int32), (1, 1, lq, 1))
    end = ops.add(ops.reshape(lengths, (b, 1, 1, 1)), ops.subtract(queries, lq - 1))
    mask = ops.less(positions, end)
    return scaled_dot_product_attention(q, k, v, scale=scale, mask=mask)


def paged_write_graph(inputs) -> Array:
    """`paged_write` from ordinary operations: the cache as one row per slot, the rows of
    `slots` replaced. Out-of-range slots write a scratch row past the end, dropped after."""
    ops = mx()
    cache, new, slots = inputs
    blocks, hkv, bs, d = cache.shape
    end = blocks * bs
    if end >= 2**31:
        raise ValueError("paged_write: more than 2^31 slots")
    rows = ops.reshape(ops.transpose(cache, (0, 2, 1, 3)), (end, hkv, d))
    slots = ops.where(ops.less(slots, 0), end, ops.where(ops.less(slots, end), slots, end))
    rows = ops.concatenate([rows, ops.zeros((1, hkv, d), rows.dtype)], axis=0)
    at = ops.broadcast_to(ops.reshape(slots, (-1, 1, 1)), new.shape)
    rows = ops.put_along_axis(rows, at, new, axis=0)[:end]
    return ops.transpose(ops.reshape(rows, (blocks, bs, hkv, d)), (0, 2, 1, 3))


class PagedAttention(FastOp):
    """`(q, k_cache, v_cache, block_tables, lengths)`: `paged_attention`."""

    __slots__ = ("scale",)
    op = "paged_attention"

    def __init__(self, scale: float):
        self.scale = as_f32_bits(scale)

    def params(self):
        return (self.scale,)

    def arity(self, inputs):
        return 5

    def valid(self, inputs):
        q, k, v, tables, lengths = inputs
        if q.ndim != 4:
            return False
        b, hq, d = q.shape[0], q.shape[1], q.shape[3]
        return (k.ndim == 4 and k.shape == v.shape
                and k.dtype is q.dtype and v.dtype is q.dtype and k.shape[3] == d
                and k.shape[1] > 0 and hq % k.shape[1] == 0 and d in (64, 128, 256)
                and _pow2(k.shape[2]) and k.size < 2**32 - 1
                and tables.ndim == 2 and tables.shape[0] == b and tables.dtype is dt.int32
                and lengths.shape == (b,) and lengths.dtype is dt.int32)

    def fallback(self, inputs):
        return [paged_attention_graph(inputs, self.scale)]


class PagedWrite(FastOp):
    """`(cache, new, slots)`: `paged_write`."""

    __slots__ = ()
    op = "paged_write"

    def arity(self, inputs):
        return 3

    def valid(self, inputs):
        cache, new, slots = inputs
        return (cache.ndim == 4 and new.ndim == 3 and new.dtype is cache.dtype
                and new.shape[1] == cache.shape[1] and new.shape[2] == cache.shape[3]
                and slots.shape == (new.shape[0],) and slots.dtype is dt.int32)

    def fallback(self, inputs):
        return [paged_write_graph(inputs)]


PAGED_WRITE = PagedWrite()


def paged_attention(q: Any, k_cache: Any, v_cache: Any, block_tables: Any, lengths: Any, *,
                    scale: float, stream: Any = None) -> Array:
    """Attention of each sequence's queries over its blocks of a paged KV cache.

    Sequence `b` holds `lengths[b]` positions laid out in the blocks
    `block_tables[b, 0], block_tables[b, 1], ...` (position `p` in block `p // block_size`
    of its list, row `p % block_size`); its `L` queries are its last positions, so query `l`
    sees positions `0..lengths[b] - L + l`. Lengths past the listed capacity see every
    listed position; out-of-range block ids read the nearest block of the cache.

    Args:
        q: queries `[B, Hq, L, D]`.
        k_cache, v_cache: `[blocks, Hkv, block_size, D]`, `Hq` a multiple of `Hkv`.
        block_tables: `[B, max_blocks]` integer block ids.
        lengths: `[B]` integer sequence lengths.
        scale: multiplies the scores.
        stream: stream or device.

    Returns:
        `[B, Hq, L, D]` in `q`'s dtype.

    Raises:
        ValueError: for shapes that do not fit, non-integer tables or lengths, or empty caches.
        TypeError: if `q` is not floating-point.

    Example:
        >>> import nuvec as mx
        >>> q, kv = mx.ones((1, 2, 1, 4)), mx.ones((2, 1, 2, 4))
        >>> mx.fast.paged_attention(q, kv, kv, mx.array([[0, 1]]), mx.array([3]), scale=0.5).shape
        (1, 2, 1, 4)
    """
    op = "paged_attention"
    with stream_context(to_stream(stream)):
        q, k_cache, v_cache, block_tables, lengths = (
            as_array(a, op) for a in (q, k_cache, v_cache, block_tables, lengths))
        floating(op, q.dtype)
        scale = real_number(scale, op, "scale")
        if q.ndim != 4 or k_cache.ndim != 4 or k_cache.shape != v_cache.shape:
            raise ValueError(
                f"{op}: q must be [B, Hq, L, D] and the caches [blocks, Hkv, block_size, D], "
                f"got {list(q.shape)}, {list(k_cache.shape)}, {list(v_cache.shape)}")
        b, hq, d = q.shape[0], q.shape[1], q.shape[3]
        hkv = k_cache.shape[1]
        if k_cache.shape[3] != d:
            raise ValueError(f"{op}: the caches' head size ({k_cache.shape[3]}) must be q's "
                             f"({d}), got q {list(q.shape)} and caches {list(k_cache.shape)}")
        if hkv == 0 or hq % hkv != 0:
            raise ValueError(f"{op}: q's heads ({hq}) must be a multiple of the caches' "
                             f"({hkv})")
        if (block_tables.ndim != 2 or block_tables.shape[0] != b
                or not block_tables.dtype.is_integer):
            raise ValueError(f"{op}: block_tables must be [{b}, max_blocks] integers, got "
                             f"{block_tables.dtype.name} {list(block_tables.shape)}")
        if lengths.shape != (b,) or not lengths.dtype.is_integer:
            raise ValueError(f"{op}: lengths must be [{b}] integers, got "
                             f"{lengths.dtype.name} {list(lengths.shape)}")
        if k_cache.shape[0] == 0:
            raise ValueError(f"{op}: the caches hold no blocks")
        ops = mx()
        inputs = [q, ops.astype(k_cache, q.dtype), ops.astype(v_cache, q.dtype),
                  ops.astype(block_tables, dt.int32), ops.astype(lengths, dt.int32)]
        node = PagedAttention(scale)
        # The kernels use 32-bit offsets into the caches.
        if d in (64, 128, 256) and _pow2(k_cache.shape[2]) and k_cache.size < 2**32 - 1:
            return one(node, inputs)
        return node.fallback(inputs)[0]


def paged_write(cache: Any, new: Any, slots: Any, *, stream: Any = None) -> Array:
    """`cache` with token `t` of `new` written at slot `slots[t]`.

    Slot `s` is row `s % block_size` of block `s // block_size`; slots outside
    `0..blocks * block_size` are dropped.

    Args:
        cache: `[blocks, Hkv, block_size, D]`.
        new: `[T, Hkv, D]`, cast to the cache's dtype.
        slots: `[T]` integers.
        stream: stream or device.

    Returns:
        The updated cache (a new array; `cache` is unchanged).

    Raises:
        ValueError: for shapes that do not fit.
        TypeError: for non-integer slots.

    Example:
        >>> import nuvec as mx
        >>> cache = mx.fast.paged_write(mx.zeros((2, 1, 2, 1)), mx.ones((1, 1, 1)), mx.array([3]))
        >>> cache.flatten().tolist()
        [0.0, 0.0, 0.0, 1.0]
    """
    op = "paged_write"
    with stream_context(to_stream(stream)):
        cache, new, slots = (as_array(a, op) for a in (cache, new, slots))
        fits = (cache.ndim == 4 and new.ndim == 3 and new.shape[1] == cache.shape[1]
                and new.shape[2] == cache.shape[3])
        if not fits or slots.shape != (new.shape[0] if new.ndim else 0,):
            raise ValueError(
                f"{op}: cache must be [blocks, Hkv, block_size, D], new [T, Hkv, D] and slots "
                f"[T], got {list(cache.shape)}, {list(new.shape)}, {list(slots.shape)}")
        if not slots.dtype.is_integer:
            raise DtypeError(f"{op}: slots must be integers, got {slots.dtype.name}")
        inputs = [cache, mx().astype(new, cache.dtype), mx().astype(slots, dt.int32)]
        return one(PAGED_WRITE, inputs)
