"""The fused backward of the tiled attention kernel on GPU streams (FlashAttention-2): the row
log-sum-exp a tiled `Attention` node saves, `AttentionVjp` (the gradients of q, k and v from
it) and the rule recording it; and the CPU attention node's (`AttentionRowsVjp`, `rows_vjp`).
Used by `nuvec.fast.attention`; imports nothing of it.
"""

from __future__ import annotations

from typing import Sequence

from nuvec.fast.base import FastOp, as_f32_bits, mx, record_or_fallback, wide
from nuvec.fast.planner import node_blocks
from nuvec.fast.softmax import logsumexp_graph
from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.ops.slicing import add_cotangents, in_zeros
from nuvec.transforms.depends import depends

__all__ = ["AttentionRowsVjp", "AttentionVjp", "blocks_of", "lse_graph", "rows_vjp",
           "tiled_vjp"]

OP = "scaled_dot_product_attention"


def blocks_of(block_rows: int | None, lq: int, lk: int, causal: bool, offset: int,
              window: int | None) -> list[tuple[int, int, int, int]] | None:
    """The row blocks `(start, end, lo, hi)` of a CPU attention node recorded with
    `block_rows` (`node_blocks`); None where it is one block."""
    if block_rows is None or block_rows >= lq:
        return None
    return node_blocks(lq, lk, causal, offset, window, block_rows)


def masked_scores(q: Array, k: Array, mask: Array | None, scale: float, causal: bool,
                  window: int | None) -> tuple[Array, Array | None, Array]:
    """`(scores, keep, q·scale)` grouped by key head, `[B, Hkv, Hq/Hkv, Lq, Lk]`: the scores
    as the fallback rounds them (in float32 after the mask), `keep` the causal or boolean mask
    (None without one; it passes no gradient where false)."""
    ops = mx()
    b, hq, lq, d = q.shape
    hkv, lk = k.shape[1], k.shape[2]
    qs = ops.reshape(ops.multiply(q, scale), (b, hkv, hq // hkv, lq, d))
    s = ops.matmul(qs, ops.swapaxes(ops.expand_dims(k, 2), -1, -2))
    keep = None
    if causal:
        off = lk - lq
        qi = ops.expand_dims(ops.arange(off, off + lq, dtype=dt.int32), 1)
        ki = ops.expand_dims(ops.arange(lk, dtype=dt.int32), 0)
        keep = ops.greater_equal(qi, ki)
        if window is not None:
            keep = ops.logical_and(keep, ops.greater(ki, ops.subtract(qi, window)))
    elif mask is not None:
        mask = ops.reshape(mask, s.shape)
        if mask.dtype is dt.bool_:
            keep = mask
        else:
            s = ops.add(s, mask)
    if keep is not None:
        s = ops.where(keep, s, float(dt.finfo(q.dtype).min))
    return wide(s), keep, qs


def lse_graph(inputs: Sequence[Array], scale: float, causal: bool, has_mask: bool,
              has_sinks: bool, window: int | None) -> Array:
    """Each query row's log-sum-exp `[B, Hq, Lq]` (float32) of its masked scores, with the
    sink as one more logit: what the tiled kernel saves for the backward."""
    ops = mx()
    q, k = inputs[0], inputs[1]
    s, _, _ = masked_scores(q, k, inputs[3] if has_mask else None, scale, causal, window)
    if has_sinks:
        sink = ops.reshape(ops.astype(inputs[-1], s.dtype), (1, *s.shape[1:3], 1, 1))
        s = ops.concatenate([s, ops.broadcast_to(sink, (*s.shape[:-1], 1))], axis=-1)
    return ops.reshape(logsumexp_graph(s), q.shape[:3])


class AttentionVjp(FastOp):
    """`(q, k, v[, mask], out, lse, dout)`: the cotangents `(dq, dk, dv)` of the tiled
    attention by the FlashAttention-2 backward: `P = exp(S − lse)`, `dV = Pᵀ dO`,
    `dS = P ⊙ (dO Vᵀ − rowsum(dO ⊙ O))`, `dQ = scale · dS K`, `dK = dSᵀ (scale · Q)`, summed
    over the query heads of each key head."""

    __slots__ = ("scale", "causal", "mask", "window")
    op = OP

    def __init__(self, scale: float, causal: bool, mask: bool, window: int | None = None):
        self.scale = as_f32_bits(scale)
        self.causal, self.mask = bool(causal), bool(mask)
        self.window = None if window is None else int(window)

    def params(self):
        return (self.scale, self.causal, self.mask, self.window)

    def arity(self, inputs):
        return 6 + int(self.mask)

    def valid(self, inputs):
        q, k, v = inputs[0], inputs[1], inputs[2]
        out, lse, dout = inputs[-3:]
        if any(a.ndim != 4 or a.dtype is not q.dtype for a in (q, k, v, out, dout)):
            return False
        qs, ks = q.shape, k.shape
        mask_ok = not self.mask or (inputs[3].shape == (*qs[:3], ks[2])
                                    and inputs[3].dtype in (dt.bool_, q.dtype))
        return (ks[0] == qs[0] and ks[1] > 0 and qs[1] % ks[1] == 0 and ks[3] == qs[3]
                and v.shape == ks and out.shape == qs and dout.shape == qs
                and lse.shape == qs[:3] and lse.dtype in (dt.float32, dt.float64) and mask_ok
                and (self.window is None or (self.causal and self.window >= 1)))

    def specs(self, inputs):
        return [(a.shape, a.dtype) for a in inputs[:3]]

    def fallback(self, inputs):
        ops = mx()
        q, k, v = inputs[0], inputs[1], inputs[2]
        out, lse, dout = inputs[-3:]
        b, hq, lq, d = q.shape
        s, keep, qs = masked_scores(q, k, inputs[3] if self.mask else None, self.scale,
                                    self.causal, self.window)
        grouped = s.shape[:-1]
        lse = ops.reshape(lse, (*grouped, 1))
        p = ops.exp(ops.subtract(s, lse))
        if self.mask and keep is not None:
            # A row the boolean mask blocks entirely averages its keys: its lse (the lowest
            # score + log Lk) rounds to the lowest score in float32.
            lowest = float(dt.finfo(q.dtype).min)
            p = ops.where(ops.less(lse, 0.5 * lowest), 1.0 / k.shape[2], p)
        do = ops.reshape(wide(dout), (*grouped, d))
        o = ops.reshape(wide(out), (*grouped, d))
        vg, kg = ops.expand_dims(wide(v), 2), ops.expand_dims(wide(k), 2)
        dp = ops.matmul(do, ops.swapaxes(vg, -1, -2))
        ds = ops.multiply(p, ops.subtract(dp, ops.sum(ops.multiply(do, o), axis=-1,
                                                      keepdims=True)))
        if keep is not None:
            ds = ops.where(keep, ds, 0.0)
        dq = ops.reshape(ops.multiply(ops.matmul(ds, kg), self.scale), q.shape)
        dk = ops.sum(ops.matmul(ops.swapaxes(ds, -1, -2), wide(qs)), axis=2)
        dv = ops.sum(ops.matmul(ops.swapaxes(p, -1, -2), do), axis=2)
        return [ops.astype(g, q.dtype) for g in (dq, dk, dv)]


def tiled_vjp(op, primals, cotangents, argnums, outputs) -> list[Array | None]:
    """The cotangents of a tiled `Attention` node that saved its lse: q, k and v by one
    `AttentionVjp` node, the sinks by their closed form `−Σ exp(sink − lse) · rowsum(dO ⊙ O)`,
    an additive mask through the fallback graph (everything, when the lse has a cotangent)."""
    ops = mx()
    out, lse = outputs
    dout, dlse = cotangents
    if dlse is not None:  # the lse itself differentiated (a second derivative's pass)
        return op.fallback_vjp(primals, cotangents, argnums)
    if dout is None:
        return [None] * len(argnums)
    dout = ops.astype(dout, out.dtype)
    n = 3 + int(op.mask)
    found: dict[int, Array | None] = {}
    if any(i < 3 for i in argnums):
        back = AttentionVjp(op.scale, op.causal, op.mask, op.window)
        found.update(enumerate(record_or_fallback(back, [*primals[:n], out, lse, dout])))
    if op.sinks and n in argnums:
        sinks = primals[n]
        delta = ops.sum(ops.multiply(wide(dout), wide(out)), axis=-1)
        weight = ops.exp(ops.subtract(ops.reshape(wide(sinks), (1, -1, 1)), lse))
        found[n] = ops.astype(ops.negative(ops.sum(ops.multiply(weight, delta), axis=(0, 2))),
                              sinks.dtype)
    if op.mask and 3 in argnums:
        found[3] = op.fallback_vjp(primals, cotangents, [3])[0]
    return [found.get(i) for i in argnums]


class AttentionRowsVjp(FastOp):
    """`(q, k, v, out, dout)`: the cotangents `(dq, dk, dv)` of a CPU attention node
    (`AttentionRows`) without a mask array or sinks whose causal offset is `Lk − Lq`, in one
    node: its CPU kernel recomputes each key head's scores and their softmax, then takes
    `AttentionVjp`'s steps (its fallback, with the lse from `lse_graph`, off the CPU). With
    `block_rows`, as the node it differentiates: the kernel's BLAS path and the fallback (the
    graph higher derivatives differentiate) take blocks of that many query rows, the fallback
    as one node a block, their key cotangents summed window by window."""

    __slots__ = ("scale", "causal", "window", "block_rows")
    op = OP
    cpu_fused = True

    def __init__(self, scale: float, causal: bool, window: int | None = None,
                 block_rows: int | None = None):
        self.scale = as_f32_bits(scale)
        self.causal = bool(causal)
        self.window = None if window is None else int(window)
        self.block_rows = None if block_rows is None else int(block_rows)

    def params(self):
        return (self.scale, self.causal, self.window, self.block_rows)

    def blocks(self, lq: int, lk: int) -> list[tuple[int, int, int, int]] | None:
        """The node's row blocks (`blocks_of`), None for one."""
        return blocks_of(self.block_rows, lq, lk, self.causal, lk - lq, self.window)

    def arity(self, inputs):
        return 5

    def valid(self, inputs):
        q, k, v, out, dout = inputs
        qs, ks = q.shape, k.shape
        return (all(a.ndim == 4 and a.dtype is q.dtype for a in inputs)
                and q.dtype.is_floating and ks[0] == qs[0] and ks[1] > 0
                and qs[2] > 0 and ks[2] > 0
                and qs[1] % ks[1] == 0 and ks[3] == qs[3] and v.shape == ks
                and out.shape == qs and dout.shape == qs
                and (not self.causal or ks[2] >= qs[2])
                and (self.window is None or (self.causal and self.window >= 1)))

    def specs(self, inputs):
        return [(a.shape, a.dtype) for a in inputs[:3]]

    def fallback(self, inputs):
        q, k, v, out, dout = inputs
        blocks = self.blocks(q.shape[2], k.shape[2])
        if blocks is None:
            lse = lse_graph([q, k, v], self.scale, self.causal, False, False, self.window)
            back = AttentionVjp(self.scale, self.causal, False, self.window)
            return back.fallback([q, k, v, out, lse, dout])
        block = AttentionRowsVjp(self.scale, self.causal, self.window)
        dq: list[Array] = []
        dk = dv = None
        for s, e, lo, hi in blocks:  # each evaluated after the last: one block's scores live
            qb = q[:, :, s:e] if not dq else depends([q[:, :, s:e]], [dq[-1]])[0]
            g = record_or_fallback(block, [qb, k[:, :, lo:hi], v[:, :, lo:hi], out[:, :, s:e],
                                           dout[:, :, s:e]])
            dq.append(g[0])
            window = ((0, 0, lo, 0), (*k.shape[:2], hi, k.shape[3]), (1, 1, 1, 1))
            gk, gv = in_zeros(k, g[1], *window), in_zeros(v, g[2], *window)
            dk = gk if dk is None else add_cotangents(dk, gk)
            dv = gv if dv is None else add_cotangents(dv, gv)
        return [mx().concatenate(dq, axis=2), dk, dv]


def rows_vjp(op, primals, cotangents, argnums, outputs) -> list[Array | None] | None:
    """The cotangents of q, k and v of a CPU attention node (`AttentionRows` as `op`) by one
    `AttentionRowsVjp` node, where that node takes them (a real floating dtype, no mask
    array, no sinks, the causal offset `Lk − Lq`); None elsewhere (the fallback graph's
    rule)."""
    q, k = primals[0], primals[1]
    dout = cotangents[0]
    if (op.mask or op.sinks or dout is None or not q.dtype.is_floating
            or (op.causal and op.offset != k.shape[2] - q.shape[2])
            or not set(argnums) <= {0, 1, 2}):
        return None
    back = AttentionRowsVjp(op.scale, op.causal, op.window, op.block_rows)
    inputs = [*primals[:3], outputs[0], mx().astype(dout, q.dtype)]
    if not back.valid(inputs):
        return None
    grads = record_or_fallback(back, inputs)
    return [grads[i] for i in argnums]
