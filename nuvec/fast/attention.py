"""Scaled dot-product attention: the `Attention` primitive, its fallback graph (MLX's, with
sinks folded into the softmax, a causal offset and a sliding window), and the execution of a
plan (vector or tiled nodes on a GPU, one node of the tiled CPU kernel on the CPU, the
composition in row blocks elsewhere).
"""

from __future__ import annotations

import numbers
from typing import Any, Sequence

from nuvec.fast.attention_grad import blocks_of, lse_graph, rows_vjp, tiled_vjp
from nuvec.fast.base import FastOp, as_f32_bits, floating, mx, one, wide
from nuvec.fast.planner import (
    CPU_TILE_ROWS,
    AttentionOptions,
    AttentionPlan,
    Composed,
    ComposedBlocks,
    CpuTiles,
    Group,
    RouteKey,
    Target,
    Tiled,
    Vector,
    gqa_decode,
    key_range,
    plan,
    row_blocks,
    tiled_head,
    tk1_variant,
    traced_rows,
    vector_head,
)
from nuvec.fast.softmax import SOFTMAX
from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, record, tracing
from nuvec.graph.device import DeviceType, to_stream
from nuvec.graph.device import stream as stream_context
from nuvec.graph.caller import public_caller
from nuvec.ops.arguments import as_array, index_int, int_tuple
from nuvec.transforms.depends import depends

__all__ = ["plan_attention", "scaled_dot_product_attention"]

OP = "scaled_dot_product_attention"


def _invalid(msg: str) -> ValueError:
    return ValueError(f"{public_caller(OP)}: {msg}")


def attention_target(dtype: dt.Dtype, size: int, stream: Any = None) -> Target:
    """Where attention over `dtype` runs: a GPU for the kernels' dtypes on a GPU stream (or
    a GPU `Target`), else the CPU."""
    if isinstance(stream, Target):
        gpu = stream.kind == "gpu"
        cls = stream.gpu_class
    else:
        s = to_stream(stream)
        gpu = s.device.type is DeviceType.gpu
        cls = getattr(s.backend if gpu else None, "gpu_class", "g")
        cls = cls() if callable(cls) else cls
    if gpu and dtype in (dt.float16, dt.bfloat16, dt.float32) and 0 < max(size, 1) < 2**32 - 1:
        return Target("gpu", cls)
    return Target("cpu")


def attention_key(qs, ks, vs, dtype: dt.Dtype, options: AttentionOptions,
                  target: Target) -> RouteKey:
    """The routing key of a call from its shapes, dtype and options, validated as the op
    validates them (the mask's and the sinks' shapes and dtypes)."""
    qs, ks, vs = tuple(qs), tuple(ks), tuple(vs)
    if any(len(s) != 4 for s in (qs, ks, vs)):
        raise _invalid(f"q, k and v must be 4-D, got {list(qs)}, {list(ks)} and {list(vs)}")
    if ks[0] != qs[0] or vs[0] != qs[0] or qs[3] != ks[3] or ks[1] != vs[1] or ks[2] != vs[2]:
        raise _invalid(f"incompatible shapes {list(qs)}, {list(ks)} and {list(vs)}")
    if ks[1] == 0 or qs[1] % ks[1] != 0:
        raise _invalid(f"the query heads ({qs[1]}) must be a multiple of the key heads "
                       f"({ks[1]})")
    floating(OP, dtype)
    m = options.mask
    bool_mask = False
    if m is None:
        kind = "none"
    elif isinstance(m, str):
        if m != "causal":
            raise _invalid(f"the mask must be None, 'causal' or an array, got {m!r}")
        kind = "causal"
    else:
        if m.ndim > 4:
            raise _invalid(f"the mask must have at most 4 dimensions, got {list(m.shape)}")
        if m.dtype is not dt.bool_ and dt.promote_types(m.dtype, dtype) is not dtype:
            raise _invalid(f"a {m.dtype.name} mask does not promote to {dtype.name}")
        full = (qs[0], qs[1], qs[2], ks[2])
        if not all(a == b or a == 1 for a, b in zip(reversed(m.shape), reversed(full))):
            raise _invalid(f"the mask {list(m.shape)} does not broadcast to {list(full)}")
        kind, bool_mask = "array", m.dtype is dt.bool_
    s = options.sinks
    if s is not None and (s.ndim != 1 or s.size != qs[1]
                          or dt.promote_types(s.dtype, dtype) is not dtype):
        raise _invalid(f"sinks must be [{qs[1]}] of a type promoting to {dtype.name}")
    w, cap = options.window, options.max_score_bytes
    if w is not None:
        w = index_int(w, OP, "window", 1, 2**31 - 1)
        if kind != "causal":
            raise _invalid(f"a window needs the causal mask, got window={w} and mask={m!r}")
    if cap is not None:
        cap = index_int(cap, OP, "max_score_bytes", 1)
    return RouteKey(qs[0], qs[1], ks[1], qs[2], ks[2], qs[3], vs[3], dtype, kind, bool_mask,
                    s is not None, w, cap, target)


def attention_graph(inputs, scale: float, causal: bool, has_mask: bool, has_sinks: bool,
                    offset: int | None = None, window: int | None = None) -> Array:
    """MLX's attention fallback from ordinary operations, with sinks folded into the softmax.

    Under `causal`, query `i` sees keys up to `i + offset` (`offset` defaults to `Lk - Lq`,
    the queries being the last positions), and with a `window` only the `window` keys up to
    that one. Masked scores take the dtype's lowest value (a row that sees no key averages
    every key); an additive mask is added.
    """
    ops = mx()
    q, k, v = inputs[0], inputs[1], inputs[2]
    dtype = q.dtype
    b, hq, lq, d = q.shape
    hkv, lk, dv = k.shape[1], k.shape[2], v.shape[3]
    rep = hq // hkv
    q = ops.multiply(q, scale)
    if rep > 1:
        q = ops.reshape(q, (b, hkv, rep, lq, d))
        k, v = ops.expand_dims(k, 2), ops.expand_dims(v, 2)
    scores = ops.matmul(q, ops.swapaxes(k, -1, -2))
    mask = None
    if causal:
        off = lk - lq if offset is None else offset
        qi = ops.expand_dims(ops.arange(off, off + lq, dtype=dt.int32), 1)
        ki = ops.expand_dims(ops.arange(lk, dtype=dt.int32), 0)
        mask = ops.greater_equal(qi, ki)
        if window is not None:
            # Key `j` is in the window of query position `p` when `j > p - window`.
            mask = ops.logical_and(mask, ops.greater(ki, ops.subtract(qi, window)))
    elif has_mask:
        mask = inputs[3]
        if rep > 1:
            mask = ops.reshape(mask, (b, hkv, rep, lq, lk))
    if mask is not None:
        if mask.dtype is dt.bool_:
            scores = ops.where(mask, scores, float(dt.finfo(dtype).min))
        else:
            scores = ops.add(scores, mask)
    if scores.size == 0:
        probs = scores  # nothing to normalise (no keys: the output is the empty sum, zeros)
    elif has_sinks:
        # softmax over [sink, scores...], without the sink's column.
        s = wide(scores)
        shape = (1, hkv, rep, 1, 1) if rep > 1 else (1, hq, 1, 1)
        sink = ops.reshape(ops.astype(inputs[-1], s.dtype), shape)
        m = ops.stop_gradient(ops.maximum(ops.max(s, axis=-1, keepdims=True), sink))
        e = ops.exp(ops.subtract(s, m))
        denom = ops.add(ops.sum(e, axis=-1, keepdims=True), ops.exp(ops.subtract(sink, m)))
        probs = ops.astype(ops.divide(e, denom), dtype)
    else:
        probs = one(SOFTMAX, [scores])
    out = ops.matmul(probs, v)
    return ops.reshape(out, (b, hq, lq, dv)) if rep > 1 else out


def attention_config(op: Attention, inputs) -> bool:
    """Whether a recorded node's kernel choice fits its inputs (the planner's choices always
    do; this guards nodes built directly)."""
    q, k, v = inputs[0], inputs[1], inputs[2]
    lq, lk, d, dv = q.shape[2], k.shape[2], q.shape[3], v.shape[3]
    gqa = q.shape[1] // k.shape[1]
    if lq == 0 or lk == 0:
        return False
    if op.passes == 0:
        return tiled_head(d, dv) and (not op.causal or lq <= lk) and not op.gqa_kernel \
            and not op.tk1
    if op.passes not in (1, 2) or op.lse:
        return False
    vector = lq <= 8 and lq <= lk and vector_head(d, dv) and (d != 512 or lq == 1)
    two = op.passes == 1 or (
        1 <= op.blocks <= 1024 and 32 * gqa * lq <= 1024
        and (not op.gqa_kernel or (lq == 1 and not op.mask and not op.sinks
                                   and gqa_decode(gqa, d, dv)))
        and (not op.tk1 or (not op.gqa_kernel and tk1_variant(q.dtype, d, dv))))
    return vector and two and (op.passes == 2 or (not op.gqa_kernel and not op.tk1))


class Attention(FastOp):
    """`(q, k, v[, mask][, sinks])`: scaled dot-product attention as one kernel.

    `passes` is 1 or 2 for the vector kernels (`blocks` key partitions in the first of two,
    `gqa_kernel` the grouped-query decode kernel, `tk1` its one-key-per-step variant) or 0
    for the tiled kernel; set by the planner. `window` (causal only, beyond the seed's node):
    each query sees only its last `window` keys. With `lse` (the tiled kernel) the node also
    outputs each row's log-sum-exp `[B, Hq, Lq]` (float32), from which its `vjp` on a GPU
    stream runs the fused backward (`AttentionVjp`).
    """

    __slots__ = ("scale", "causal", "mask", "sinks", "passes", "blocks", "gqa_kernel", "tk1",
                 "window", "lse")
    op = OP

    def __init__(self, scale: float, causal: bool = False, mask: bool = False,
                 sinks: bool = False, passes: int = 0, blocks: int = 1,
                 gqa_kernel: bool = False, tk1: bool = False, window: int | None = None,
                 lse: bool = False):
        self.scale = as_f32_bits(scale)
        self.causal, self.mask, self.sinks = bool(causal), bool(mask), bool(sinks)
        self.passes, self.blocks = int(passes), int(blocks)
        self.gqa_kernel, self.tk1 = bool(gqa_kernel), bool(tk1)
        self.window, self.lse = None if window is None else int(window), bool(lse)

    def params(self):
        return (self.scale, self.causal, self.mask, self.sinks, self.passes, self.blocks,
                self.gqa_kernel, self.tk1, self.window, self.lse)

    def arity(self, inputs):
        return 3 + int(self.mask) + int(self.sinks)

    def valid(self, inputs):
        window_ok = self.window is None or (self.causal and self.window >= 1)
        return window_ok and self.valid_shapes(inputs) and attention_config(self, inputs)

    def valid_shapes(self, inputs) -> bool:
        """The seed's checks of the inputs' shapes and dtypes (raises for mixed dtypes)."""
        q, k, v = inputs[0], inputs[1], inputs[2]
        if any(a.ndim != 4 or a.dtype is not q.dtype for a in (q, k, v)):
            raise _invalid("q, k and v must be 4-D arrays of one dtype")
        qs, ks, vs = q.shape, k.shape, v.shape
        shapes = (ks[0] == qs[0] and vs[0] == qs[0] and qs[3] == ks[3] and ks[1] == vs[1]
                  and ks[2] == vs[2] and ks[1] > 0 and qs[1] % ks[1] == 0)
        mask_ok = not self.mask or (
            inputs[3].shape == (qs[0], qs[1], qs[2], ks[2])
            and inputs[3].dtype in (dt.bool_, q.dtype))
        sinks_ok = not self.sinks or (
            inputs[-1].ndim == 1 and inputs[-1].size == qs[1] and inputs[-1].dtype is q.dtype)
        return shapes and mask_ok and sinks_ok

    def specs(self, inputs):
        q, v = inputs[0], inputs[2]
        out = [((*q.shape[:3], v.shape[3]), q.dtype)]
        lse = dt.float64 if q.dtype is dt.float64 else dt.float32
        return out + [(q.shape[:3], lse)] if getattr(self, "lse", False) else out

    def fallback(self, inputs):
        args = (self.scale, self.causal, self.mask, self.sinks)
        out = [attention_graph(inputs, *args, None, self.window)]
        return out + [lse_graph(inputs, *args, self.window)] if self.lse else out

    def vjp(self, primals, cotangents, argnums, outputs):
        if self.lse and to_stream(None).device.type is DeviceType.gpu:
            return tiled_vjp(self, primals, cotangents, argnums, outputs)
        return self.fallback_vjp(primals, cotangents, argnums)


class AttentionRows(FastOp):
    """`(q, k, v[, mask][, sinks])`: attention over the CPU kernel's tiles as one node.

    The same computation as `attention_graph` with the causal `offset` and `window`, computed
    by a NumPy kernel in tiles of `tile_rows` query rows (of every query head of a key head)
    over chunks of at most `tile_keys` keys, at most `live` tiles at once. With `block_rows`
    (a node recorded under a transform) its fallback, which the rules that need a graph
    differentiate or batch (`jvp`, `vmap`, a backward other than `AttentionRowsVjp`), is one
    node a block of `block_rows` query rows (`node_blocks`), each with the block's graph as
    its own fallback: no rule holds more than a block's scores.
    """

    __slots__ = ("scale", "causal", "mask", "sinks", "offset", "window", "tile_rows",
                 "tile_keys", "live", "block_rows")
    op = OP
    cpu_fused = True

    def __init__(self, scale: float, causal: bool, mask: bool, sinks: bool, offset: int,
                 window: int | None, tiles: CpuTiles | None = None,
                 block_rows: int | None = None):
        self.scale = as_f32_bits(scale)
        self.causal, self.mask, self.sinks = bool(causal), bool(mask), bool(sinks)
        self.offset, self.window = int(offset), window
        tiles = tiles or CpuTiles(CPU_TILE_ROWS, 1 << 62, 1)
        self.tile_rows, self.tile_keys, self.live = tiles.rows, tiles.keys, tiles.live
        self.block_rows = None if block_rows is None else int(block_rows)

    def params(self):
        return (self.scale, self.causal, self.mask, self.sinks, self.offset, self.window,
                self.tile_rows, self.tile_keys, self.live, self.block_rows)

    def arity(self, inputs):
        return 3 + int(self.mask) + int(self.sinks)

    def valid(self, inputs):
        window_ok = self.window is None or (self.causal and self.window >= 1)
        return window_ok and Attention.valid_shapes(self, inputs)

    specs = Attention.specs

    def fallback(self, inputs):
        q, k = inputs[0], inputs[1]
        blocks = blocks_of(self.block_rows, q.shape[2], k.shape[2], self.causal, self.offset,
                           self.window)
        if blocks is None:
            return [attention_graph(inputs, self.scale, self.causal, self.mask, self.sinks,
                                    self.offset, self.window)]
        v = inputs[2]
        mask = inputs[3] if self.mask else None
        tiles = CpuTiles(self.tile_rows, self.tile_keys, self.live)
        outs: list[Array] = []
        for s, e, lo, hi in blocks:  # each evaluated after the last: one block's scores live
            qb = q[:, :, s:e] if not outs else depends([q[:, :, s:e]], [outs[-1]])[0]
            part = [qb, k[:, :, lo:hi], v[:, :, lo:hi]]
            if mask is not None:
                part.append(mask[:, :, s:e, lo:hi])
            if self.sinks:
                part.append(inputs[-1])
            block = AttentionRows(self.scale, self.causal, self.mask, self.sinks,
                                  s + self.offset - lo, self.window, tiles)
            outs.append(one(block, part))
        return [mx().concatenate(outs, axis=2)]

    def vjp(self, primals, cotangents, argnums, outputs):
        if to_stream(None).device.type is DeviceType.cpu:
            grads = rows_vjp(self, primals, cotangents, argnums, outputs)
            if grads is not None:
                return grads
        return self.fallback_vjp(primals, cotangents, argnums)


class Call:
    """One validated attention call, ready to run parts of."""

    def __init__(self, key: RouteKey, scale: float, q, k, v, mask, sinks):
        self.key, self.scale = key, as_f32_bits(scale)
        self.q, self.k, self.v, self.mask, self.sinks = q, k, v, mask, sinks

    def slices(self, rows: tuple[int, int], keys: tuple[int, int]):
        """Queries `rows`, keys `keys` and the mask's matching part."""
        key = self.key
        whole_q, whole_k = rows == (0, key.lq), keys == (0, key.lk)
        q = self.q if whole_q else self.q[:, :, rows[0]:rows[1]]
        k, v = self.k, self.v
        if not whole_k:
            k, v = k[:, :, keys[0]:keys[1]], v[:, :, keys[0]:keys[1]]
        mask = self.mask
        if mask is not None and not (whole_q and whole_k):
            mask = mask[:, :, rows[0]:rows[1], keys[0]:keys[1]]
        return q, k, v, mask

    def _inputs(self, q, k, v, mask) -> list[Array]:
        inputs = [q, k, v]
        if mask is not None:
            inputs.append(mask)
        if self.sinks is not None:
            inputs.append(self.sinks)
        return inputs

    def fused(self, start: int, end: int, keys: int, passes: int = 0, blocks: int = 1,
              gqa_kernel: bool = False, tk1: bool = False) -> Array:
        """One kernel node over query rows `start..end` and the first `keys` keys; a tiled
        node recorded under a transform also saves its lse for the fused backward."""
        q, k, v, mask = self.slices((start, end), (0, keys))
        tiled = passes == 0
        op = Attention(self.scale, self.key.mask == "causal", mask is not None,
                       self.sinks is not None, passes, blocks, gqa_kernel, tk1, self.key.window,
                       tiled and tracing.depth > 0)
        return record(op, self._inputs(q, k, v, mask), to_stream(None))[0]

    def group(self, g: Group) -> Array:
        """One dispatch group of the vector schedule."""
        if g.kind is not None:
            kd = g.kind
            return self.fused(g.start, g.end, g.keys, kd.passes, kd.blocks, kd.gqa_kernel,
                              kd.tk1)
        q, k, v, mask = self.slices((g.start, g.end), (0, g.keys))
        key = self.key
        return attention_graph(self._inputs(q, k, v, mask), self.scale, key.mask == "causal",
                               mask is not None, self.sinks is not None,
                               g.start + key.lk - key.lq)

    def composed(self, start: int, end: int, after: Array | None,
                 tiles: CpuTiles | None, block_rows: int | None = None) -> Array:
        """The composition over query rows `start..end` with the keys those rows see,
        evaluated after `after` when given (so one block's scores are live at a time); on
        the CPU one node of the tiled kernel (whose rules take blocks of `block_rows`)."""
        key = self.key
        lo, hi = key_range(key, start, end)
        q, k, v, mask = self.slices((start, end), (lo, hi))
        if after is not None:
            q = depends([q], [after])[0]
        args = (self.scale, key.mask == "causal", mask is not None, self.sinks is not None,
                start + key.lk - key.lq - lo, key.window)
        inputs = self._inputs(q, k, v, mask)
        if key.target.kind == "cpu" and q.size and k.size:
            return one(AttentionRows(*args, tiles, block_rows), inputs)
        return attention_graph(inputs, *args)

    def one_backward_node(self) -> bool:
        """Whether a CPU call traced for a transform is one node: where its backward is one
        `AttentionRowsVjp` node (`rows_vjp`: a real floating dtype, no mask array, no sinks,
        values of the queries' head size, every row seeing a key), whose kernel bounds its
        scores itself; its other rules take the node's row blocks (`AttentionRows`)."""
        key = self.key
        return (key.dtype.is_floating and self.mask is None
                and self.sinks is None and key.dv == key.d and key.lq > 0 and key.lk > 0
                and (key.mask != "causal" or key.lk >= key.lq))

    def run(self, force_fused: bool = False) -> Array:
        key = self.key
        chosen = plan(key)
        route = chosen.route
        if force_fused and route.kind not in ("vector", "tiled"):
            reasons = "; ".join(dict.fromkeys(reason for _, reason in chosen.rejected))
            raise _invalid(f"force_fused=True but no fused kernel takes this call ({reasons})")
        if route.kind == "tiled":
            return self.fused(0, key.lq, key.lk)
        if route.kind == "vector":
            outs = [self.group(g) for g in route.groups]
        elif route.tiles is not None and not tracing.depth:
            outs = [self.composed(0, key.lq, None, route.tiles)]
        elif route.tiles is not None and self.one_backward_node():
            outs = [self.composed(0, key.lq, None, route.tiles, traced_rows(key))]
        else:  # row blocks (under a transform on the CPU: each block's backward holds its scores)
            outs = []
            rows = route.rows if route.tiles is None else traced_rows(key)
            for s, e in row_blocks(key, rows):
                outs.append(self.composed(s, e, outs[-1] if outs else None, route.tiles))
            if not outs:
                outs = [self.composed(0, key.lq, None, route.tiles)]
        return outs[0] if len(outs) == 1 else mx().concatenate(outs, axis=2)


def scaled_dot_product_attention(q: Any, k: Any, v: Any, *, scale: float, mask: Any = None,
                                 sinks: Any = None, force_fused: bool = False,
                                 window: int | None = None,
                                 max_score_bytes: int | None = None,
                                 stream: Any = None) -> Array:
    """`softmax(q @ k^T * scale + mask) @ v` per head, with grouped-query heads.

    Args:
        q: queries `[B, Hq, Lq, D]`.
        k: keys `[B, Hkv, Lk, D]`, `Hq` a multiple of `Hkv`.
        v: values `[B, Hkv, Lk, Dv]`.
        scale: multiplies the scores: a number or a one-element real array (read at the
            call, so it carries no gradient, as in MLX).
        mask: None; "causal" (query `i` sees keys `0..i + Lk - Lq`, the queries being the last
            `Lq` positions); or an array broadcastable to `[B, Hq, Lq, Lk]`, boolean (true
            attends) or additive.
        sinks: per-query-head logits `[Hq]` that join each softmax without a value.
        force_fused: require a fused kernel (the vector or tiled kernel of a GPU stream);
            raise when the planner would compose the call instead.
        window: with the causal mask, each query sees only its last `window` keys.
        max_score_bytes: the most bytes of scores the composition holds at once (it then
            runs over blocks of query rows); the planner's choice otherwise.
        stream: stream or device.

    Returns:
        `[B, Hq, Lq, Dv]` in the promoted dtype of `q`, `k` and `v`.

    Raises:
        ValueError: for shapes that do not fit, a bad mask, sinks, window or cap, or
            `force_fused` where no fused kernel takes the call (always on the CPU).
        TypeError: if the promoted dtype is not floating-point, `scale` is not a number or
            a one-element real array, or `force_fused` is not a bool.

    Example:
        >>> q = mx.ones((1, 2, 3, 4))
        >>> mx.fast.scaled_dot_product_attention(q, q, q, scale=0.5, mask="causal").shape
        (1, 2, 3, 4)
    """
    if isinstance(scale, Array):
        if scale.size != 1 or not (scale.dtype.is_floating or scale.dtype.is_integer):
            raise TypeError(f"{OP}: scale must be a real number or a one-element real array, "
                            f"got shape {scale.shape} and dtype {scale.dtype.name}")
        scale = scale.item()  # a parameter of the node, not an input (MLX: no gradient)
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"{OP}: scale must be a real number, got {type(scale).__name__}")
    if not isinstance(force_fused, bool):
        raise TypeError(f"{OP}: force_fused must be a bool, got {type(force_fused).__name__}")
    with stream_context(to_stream(stream)):
        q, k, v = (as_array(a, OP) for a in (q, k, v))
        if any(a.ndim != 4 for a in (q, k, v)):
            raise _invalid(f"q, k and v must be 4-D, got {list(q.shape)}, {list(k.shape)} "
                           f"and {list(v.shape)}")
        dtype = dt.promote_types(dt.promote_types(q.dtype, k.dtype), v.dtype)
        if mask is not None and not isinstance(mask, str):
            mask = as_array(mask, OP)
        if sinks is not None:
            sinks = as_array(sinks, OP)
        options = AttentionOptions(mask, sinks, window, max_score_bytes)
        key = attention_key(q.shape, k.shape, v.shape, dtype, options,
                            attention_target(dtype, q.size))
        ops = mx()
        q, k, v = (ops.astype(a, dtype) for a in (q, k, v))
        full = None
        if key.mask == "array":
            m = mask if mask.dtype is dt.bool_ else ops.astype(mask, dtype)
            full = ops.broadcast_to(m, (key.b, key.hq, key.lq, key.lk))
        if sinks is not None:
            sinks = ops.astype(sinks, dtype)
        return Call(key, scale, q, k, v, full, sinks).run(force_fused)


def plan_attention(q_shape: Sequence[int], k_shape: Sequence[int], v_shape: Sequence[int],
                   dtype: Any, *, mask: Any = None, sinks: Any = None, window: int | None = None,
                   max_score_bytes: int | None = None, stream: Any = None) -> AttentionPlan:
    """The plan of an attention call, without running it.

    Args:
        q_shape, k_shape, v_shape: shapes `[B, Hq, Lq, D]`, `[B, Hkv, Lk, D]`,
            `[B, Hkv, Lk, Dv]`.
        dtype: the computation's dtype.
        mask: None, "causal" or an array (only its shape and dtype are read).
        sinks: None or an array `[Hq]` (only its shape and dtype are read).
        window: with the causal mask, the keys each query sees.
        max_score_bytes: the cap on the composition's scores held at once.
        stream: a stream or device to plan for, or a `Target` (e.g.
            `Target("gpu", "d")`, to plan for a GPU without one); default: the current.

    Returns:
        An `AttentionPlan`.

    Raises:
        ValueError: for negative dimensions or what `scaled_dot_product_attention` rejects.
        TypeError: for a non-floating dtype.

    Example:
        >>> plan_attention((1, 8, 1, 128), (1, 8, 4096, 128), (1, 8, 4096, 128),
        ...                mx.float16, stream=Target("gpu")).kernel
        Vector(passes=2, blocks=32, dispatches=1)
    """
    shapes = [int_tuple(s, "plan_attention", what) for s, what in
              ((q_shape, "q_shape"), (k_shape, "k_shape"), (v_shape, "v_shape"))]
    for s in shapes:
        if any(d < 0 for d in s):
            raise ValueError(f"plan_attention: dimensions must not be negative, got {list(s)}")
    dtype = dt.to_dtype(dtype, "plan_attention", names=True)
    options = AttentionOptions(mask, sinks, window, max_score_bytes)
    size = 1
    for d in shapes[0]:
        size *= d
    target = attention_target(dtype, size, stream)
    key = attention_key(*shapes, dtype, options, target)
    p = plan(key)
    r = p.route
    if r.kind == "vector":
        passes = max((g.kind.passes for g in r.groups if g.kind), default=1)
        blocks = max((g.kind.blocks for g in r.groups if g.kind), default=1)
        kernel: Any = Vector(passes, blocks, len(r.groups))
    elif r.kind == "tiled":
        kernel = Tiled()
    elif r.tiles is not None:
        kernel = r.tiles
    elif r.rows < key.lq:
        kernel = ComposedBlocks(r.rows)
    else:
        kernel = Composed()
    return AttentionPlan(kernel, p.scratch, p.max_intermediate, p.capped, p.rejected)
