"""Packed variable-length attention with RoPE inside (the seed `002_…txt`, hanzo-kernel).

Many sequences share one token axis: `qkv [T, 3·H·D]` holds each token's queries, keys and
values; each query attends only to its own sequence's keys (optionally within a bidirectional
window `|i − j| ≤ w`), after queries and keys are rotated by their position within the
sequence. `PackedAttention` returns the output and each row's log-sum-exp; its gradient is the
FlashAttention-2 backward, `PackedAttentionVjp`. Both have fallback graphs of ordinary
operations built sequence by sequence (memory grows with the sum of squared lengths, never
with T²). Kernels live in the backends; this module imports none.
"""

from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy as np

from nuvec.fast.base import FastOp, as_f32_bits, front, mx, on_gpu, one, record_or_fallback
from nuvec.fast.rope import rotate_pair
from nuvec.fast.softmax import LOGSUMEXP
from nuvec.graph.dtypes import DtypeError
from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.graph.device import stream as stream_context, to_stream
from nuvec.ops.arguments import as_array, bool_flag
from nuvec.ops.families import batch_size

__all__ = ["packed_attention"]

OP = "packed_attention"
# The head dimensions the GPU kernels are built for; others build the fallback graph there.
KERNEL_DIMS = (64, 128)


def head_dim(qkv: Array, heads: int) -> int:
    """D of a `[T, 3·heads·D]` projection."""
    return qkv.shape[-1] // (3 * heads)


def positions(lengths: Sequence[int]) -> np.ndarray:
    """Each token's position within its sequence, as int32."""
    parts = [np.arange(n, dtype=np.int32) for n in lengths if n]
    return np.concatenate(parts) if parts else np.zeros((0,), np.int32)


def spans(lengths: Sequence[int]) -> list[tuple[int, int]]:
    """`(first token, length)` of each non-empty sequence."""
    out, at = [], 0
    for n in lengths:
        if n:
            out.append((at, n))
        at += n
    return out


def band(n: int, window: int | None) -> np.ndarray | None:
    """The `[n, n]` boolean mask `|i − j| ≤ window`, or None when it keeps every pair."""
    if window is None or window >= n - 1:
        return None
    i = np.arange(n)
    return np.abs(i[:, None] - i[None, :]) <= window


def rotate(x: Array, c: Array, s: Array, inverse: bool = False) -> Array:
    """The halves `(x1, x2)` of the last axis rotated by the angles of `c`, `s` (or back)."""
    ops = mx()
    x1, x2 = ops.split(x, 2, axis=-1)
    return ops.concatenate(list(rotate_pair(x1, x2, c, s, not inverse)), axis=-1)


class Geometry:
    """The static layout of one pack: heads, head dimension, lengths, scale, window."""

    def __init__(self, heads: int, d: int, lengths: Sequence[int], scale: float,
                 window: int | None):
        self.heads, self.d, self.lengths = heads, d, tuple(lengths)
        self.scale, self.window = scale, window
        self.tokens = sum(self.lengths)

    def tables(self, cos: Array, sin: Array, dtype: dt.Dtype) -> tuple[Array, Array]:
        """The tables gathered at each token's position, `[T, 1, D/2]` in `dtype`."""
        ops = mx()
        pos = ops.array(positions(self.lengths))
        return tuple(ops.expand_dims(ops.take(ops.astype(t, dtype), pos, axis=0), 1)
                     for t in (cos, sin))

    def heads_first(self, x: Array, dtype: dt.Dtype) -> Array:
        """`[T, H·D]` data as `[H, T, D]` in `dtype`."""
        ops = mx()
        x = ops.reshape(ops.astype(x, dtype), (self.tokens, self.heads, self.d))
        return ops.swapaxes(x, 0, 1)

    def projections(self, qkv: Array, cos: Array, sin: Array, dtype: dt.Dtype):
        """`(q, k, v)` as `[H, T, D]` in `dtype`: q rotated and scaled, k rotated."""
        ops = mx()
        x = ops.reshape(ops.astype(qkv, dtype), (self.tokens, 3, self.heads, self.d))
        q, k, v = (ops.squeeze(p, 1) for p in ops.split(x, 3, axis=1))
        c, s = self.tables(cos, sin, dtype)
        q = ops.multiply(rotate(q, c, s), self.scale)
        return tuple(ops.swapaxes(a, 0, 1) for a in (q, rotate(k, c, s), v))

    def scores(self, q: Array, k: Array, n: int) -> Array:
        """`q kᵀ` of one sequence, pairs out of the window at −inf."""
        ops = mx()
        s = ops.matmul(q, ops.swapaxes(k, -1, -2))
        keep = band(n, self.window)
        return s if keep is None else ops.where(ops.array(keep), s, float("-inf"))


def compute_dtype(dtype: dt.Dtype) -> dt.Dtype:
    """float64 for float64, float32 for the others (float32 accumulation)."""
    return dt.float64 if dtype is dt.float64 else dt.float32


def packed_graph(g: Geometry, inputs: Sequence[Array]) -> list[Array]:
    """`(out [T, H·D], lse [H, T])` from ordinary operations, one sequence at a time."""
    ops = mx()
    qkv, cos, sin = inputs
    f = compute_dtype(qkv.dtype)
    if g.tokens == 0:
        return [ops.zeros((0, g.heads * g.d), qkv.dtype), ops.zeros((g.heads, 0), f)]
    q, k, v = g.projections(qkv, cos, sin, f)
    outs, lses = [], []
    for a, n in spans(g.lengths):
        s = g.scores(q[:, a:a + n], k[:, a:a + n], n)
        lse = one(LOGSUMEXP, [s])  # [H, n, 1]
        p = ops.exp(ops.subtract(s, lse))
        outs.append(ops.matmul(p, v[:, a:a + n]))
        lses.append(ops.squeeze(lse, -1))
    out = ops.concatenate(outs, axis=1) if len(outs) > 1 else outs[0]
    lse = ops.concatenate(lses, axis=1) if len(lses) > 1 else lses[0]
    out = ops.reshape(ops.swapaxes(out, 0, 1), (g.tokens, g.heads * g.d))
    return [ops.astype(out, qkv.dtype), lse]


def packed_back_graph(g: Geometry, inputs: Sequence[Array]) -> list[Array]:
    """`dqkv` from `(qkv, cos, sin, out, lse, dout[, dlse])` by the FlashAttention-2 backward:
    `P = exp(S − lse)`, `dV = Pᵀ dO`, `dS = P ⊙ (dO Vᵀ − rowsum(dO ⊙ O) + dlse)`, `dQ = dS K`,
    `dK = dSᵀ Q`, then dQ and dK rotated back (dQ scaled)."""
    ops = mx()
    qkv, cos, sin, out, lse, dout = inputs[:6]
    f = compute_dtype(qkv.dtype)
    if g.tokens == 0:
        return [ops.zeros(qkv.shape, qkv.dtype)]
    q, k, v = g.projections(qkv, cos, sin, f)
    o, do = g.heads_first(out, f), g.heads_first(dout, f)
    delta = ops.sum(ops.multiply(do, o), axis=-1)
    if len(inputs) > 6:
        delta = ops.subtract(delta, ops.astype(inputs[6], f))
    lse = ops.astype(lse, f)
    parts: list[list[Array]] = [[], [], []]
    for a, n in spans(g.lengths):
        rows = slice(a, a + n)
        s = g.scores(q[:, rows], k[:, rows], n)
        p = ops.exp(ops.subtract(s, ops.expand_dims(lse[:, rows], -1)))
        dos = do[:, rows]
        dp = ops.matmul(dos, ops.swapaxes(v[:, rows], -1, -2))
        ds = ops.multiply(p, ops.subtract(dp, ops.expand_dims(delta[:, rows], -1)))
        parts[0].append(ops.matmul(ds, k[:, rows]))
        parts[1].append(ops.matmul(ops.swapaxes(ds, -1, -2), q[:, rows]))
        parts[2].append(ops.matmul(ops.swapaxes(p, -1, -2), dos))
    dq, dk, dv = (ops.swapaxes(ops.concatenate(x, axis=1) if len(x) > 1 else x[0], 0, 1)
                  for x in parts)
    c, s = g.tables(cos, sin, f)
    dq = ops.multiply(rotate(dq, c, s, inverse=True), g.scale)
    dk = rotate(dk, c, s, inverse=True)
    dqkv = ops.reshape(ops.stack([dq, dk, dv], axis=1), qkv.shape)
    return [ops.astype(dqkv, qkv.dtype)]


class PackedBase(FastOp):
    """What the forward and backward ops share: parameters, checks, batching of packs."""

    __slots__ = ("heads", "lengths", "scale", "window")
    abstract = True
    op = OP
    cpu_fused = True

    def __init__(self, heads: int, lengths: Sequence[int], scale: float, window: int | None):
        self.heads, self.lengths = int(heads), tuple(int(n) for n in lengths)
        self.scale = as_f32_bits(scale)
        self.window = None if window is None else int(window)

    def params(self):
        return (self.heads, self.lengths, self.scale, self.window)

    def geometry(self, qkv: Array) -> Geometry:
        return Geometry(self.heads, head_dim(qkv, self.heads), self.lengths, self.scale,
                        self.window)

    def valid(self, inputs):
        qkv, cos, sin = inputs[:3]
        width = qkv.shape[-1]
        d = head_dim(qkv, self.heads) if self.heads > 0 else 0
        longest = max(self.lengths, default=0)
        return (qkv.ndim == 2 and d > 0 and d % 2 == 0 and width == 3 * self.heads * d
                and sum(self.lengths) == qkv.shape[0] and min(self.lengths, default=0) >= 0
                and (self.window is None or self.window >= 0)
                and all(t.shape == (t.shape[0], d // 2) and t.ndim == 2 and t.dtype is qkv.dtype
                        and t.shape[0] >= longest for t in (cos, sin)))

    def repacked(self, batch: int) -> PackedBase:
        """The op over `batch` packs laid end to end as one pack."""
        return type(self)(self.heads, self.lengths * batch, self.scale, self.window)

    def joined(self, inputs, axes, i: int) -> Array:
        """Input `i` (`[B, T, W]` token-major) as one `[B·T, W]` pack."""
        x = front(inputs, axes, i)
        return mx().reshape(x, (x.shape[0] * x.shape[1], x.shape[2]))

    def joined_rows(self, inputs, axes, i: int) -> Array:
        """Input `i` (`[B, H, T]` per-row values) as `[H, B·T]`."""
        ops = mx()
        x = front(inputs, axes, i)
        return ops.reshape(ops.swapaxes(x, 0, 1), (x.shape[1], x.shape[0] * x.shape[2]))

    def tables_unbatched(self, axes) -> bool:
        return axes[1] is None and axes[2] is None


def record_packed(op: PackedBase, inputs: list[Array]) -> list[Array]:
    """One node where a kernel takes the inputs (on a GPU only for D = 64 or 128), else the
    fallback graph."""
    d = head_dim(inputs[0], op.heads)
    if on_gpu(inputs[0].dtype, inputs[0].size) and d not in KERNEL_DIMS:
        return op.fallback(inputs)
    return record_or_fallback(op, inputs)


class PackedAttention(PackedBase):
    """`(qkv, cos, sin)`: packed attention with RoPE; outputs `out [T, H·D]` (qkv's dtype)
    and `lse [H, T]` (float32; float64 for float64). The gradient with respect to qkv is
    `PackedAttentionVjp`; the tables differentiate through the fallback graph."""

    __slots__ = ("backward_recorded",)

    def __init__(self, heads: int, lengths: Sequence[int], scale: float, window: int | None):
        super().__init__(heads, lengths, scale, window)
        # Set once the backward of this node is recorded: a hint that lets a CPU kernel keep
        # what its backward would recompute (never a parameter; results do not depend on it).
        self.backward_recorded = False

    def arity(self, inputs):
        return 3

    def specs(self, inputs):
        qkv = inputs[0]
        t, w = qkv.shape
        return [((t, w // 3), qkv.dtype), ((self.heads, t), compute_dtype(qkv.dtype))]

    def fallback(self, inputs):
        return packed_graph(self.geometry(inputs[0]), inputs)

    def vjp(self, primals, cotangents, argnums, outputs):
        found: dict[int, Array | None] = {}
        if 0 in argnums:
            found[0] = self.qkv_cotangent(primals, cotangents, outputs)
        tables = [i for i in argnums if i > 0]
        if tables:
            found.update(zip(tables, self.fallback_vjp(primals, cotangents, tables)))
        return [found[i] for i in argnums]

    def qkv_cotangent(self, primals, cotangents, outputs) -> Array:
        ops = mx()
        out, lse = outputs
        dout, dlse = cotangents
        dout = ops.zeros(out.shape, out.dtype) if dout is None else ops.astype(dout, out.dtype)
        rest = [] if dlse is None else [ops.astype(dlse, lse.dtype)]
        back = PackedAttentionVjp(self.heads, self.lengths, self.scale, self.window)
        self.backward_recorded = True
        return record_packed(back, [*primals, out, lse, dout, *rest])[0]

    def vmap(self, inputs, axes):
        if not self.tables_unbatched(axes):
            return super().vmap(inputs, axes)
        batch = batch_size(inputs, axes)
        qkv = self.joined(inputs, axes, 0)
        out, lse = record_packed(self.repacked(batch), [qkv, *inputs[1:]])
        ops = mx()
        out = ops.reshape(out, (batch, -1, out.shape[-1]))
        return [out, ops.reshape(lse, (self.heads, batch, -1))], [0, 1]


class PackedAttentionVjp(PackedBase):
    """`(qkv, cos, sin, out, lse, dout[, dlse])`: the cotangent of qkv (the FlashAttention-2
    backward with the inverse rotation); its own rules go through its fallback graph."""

    __slots__ = ()

    def arity(self, inputs):
        return min(max(len(inputs), 6), 7)

    def valid(self, inputs):
        qkv = inputs[0]
        t = qkv.shape[0]
        rows = (self.heads, t)
        return (super().valid(inputs) and inputs[3].shape == (t, qkv.shape[1] // 3)
                and inputs[5].shape == inputs[3].shape
                and all(a.shape == rows for a in inputs[4:7:2]))

    def specs(self, inputs):
        return [(inputs[0].shape, inputs[0].dtype)]

    def fallback(self, inputs):
        return packed_back_graph(self.geometry(inputs[0]), inputs)

    def vmap(self, inputs, axes):
        if not self.tables_unbatched(axes):
            return super().vmap(inputs, axes)
        batch = batch_size(inputs, axes)
        joined = [self.joined(inputs, axes, 0), inputs[1], inputs[2],
                  self.joined(inputs, axes, 3), self.joined_rows(inputs, axes, 4),
                  self.joined(inputs, axes, 5)]
        if len(inputs) > 6:
            joined.append(self.joined_rows(inputs, axes, 6))
        (dqkv,) = record_packed(self.repacked(batch), joined)
        return [mx().reshape(dqkv, (batch, -1, dqkv.shape[-1]))], [0]


def _shown(values: Sequence[int]) -> str:
    """A list of ints for a message, cut after 12 entries."""
    values = list(values)
    head = ", ".join(str(v) for v in values[:12])
    if len(values) <= 12:
        return f"[{head}]"
    return f"[{head}, ...] ({len(values)} entries)"


def check_lengths(lengths: Any, tokens: int) -> tuple[int, ...]:
    """`lengths` (Python ints or a 1-D integer array) as a tuple, checked against T."""
    if isinstance(lengths, (Array, np.ndarray)):
        data = np.asarray(lengths)
        if not (np.issubdtype(data.dtype, np.integer)):
            raise DtypeError(f"{OP}: lengths must be integers, got an array of {data.dtype}")
        if data.ndim != 1:
            raise ValueError(f"{OP}: lengths must be 1-D, got shape {tuple(data.shape)}")
        values = [int(n) for n in data]
    elif isinstance(lengths, (list, tuple)):
        bad = [n for n in lengths if isinstance(n, bool) or not isinstance(n, numbers.Integral)]
        if bad:
            raise TypeError(f"{OP}: lengths must be integers, got {bad[0]!r} "
                            f"({type(bad[0]).__name__})")
        values = [int(n) for n in lengths]
    else:
        raise TypeError(f"{OP}: lengths must be a sequence of ints or a 1-D integer array, "
                        f"got {type(lengths).__name__}")
    negative = [(i, n) for i, n in enumerate(values) if n < 0]
    if negative:
        i, n = negative[0]
        raise ValueError(f"{OP}: lengths must be non-negative, got {n} at index {i} "
                         f"of {_shown(values)}")
    if sum(values) != tokens:
        raise ValueError(f"{OP}: lengths {_shown(values)} sum to {sum(values)}, but qkv has "
                         f"{tokens} tokens")
    return tuple(values)


def check_qkv(qkv: Array, heads: Any) -> int:
    """The head dimension D of `qkv [T, 3·heads·D]`; raises for anything else."""
    if isinstance(heads, bool) or not isinstance(heads, numbers.Integral):
        raise TypeError(f"{OP}: heads must be an int, got {type(heads).__name__}")
    if heads < 1:
        raise ValueError(f"{OP}: heads must be at least 1, got {heads}")
    if not qkv.dtype.is_floating:
        raise DtypeError(f"{OP}: qkv must be floating-point, got {qkv.dtype.name}")
    if qkv.ndim != 2:
        raise ValueError(f"{OP}: qkv must be 2-D [T, 3·heads·D], got shape {qkv.shape}")
    width = qkv.shape[1]
    if width == 0 or width % (3 * heads):
        raise ValueError(f"{OP}: qkv width {width} is not 3·heads·D for heads={heads} "
                         f"(shape {qkv.shape})")
    d = width // (3 * heads)
    if d % 2:
        raise ValueError(f"{OP}: the head dimension D = {d} (width {width} = 3·{heads}·{d}) "
                         f"must be even")
    return d


def check_tables(cos: Array, sin: Array, d: int, longest: int) -> None:
    """Raises unless `cos` and `sin` are floating `[P, D/2]` with P at least `longest`."""
    for name, t in (("cos", cos), ("sin", sin)):
        if not t.dtype.is_floating:
            raise DtypeError(f"{OP}: {name} must be floating-point, got {t.dtype.name}")
    if cos.ndim != 2 or cos.shape != sin.shape or cos.shape[1] != d // 2:
        raise ValueError(f"{OP}: cos and sin must both be [P, D/2] = [P, {d // 2}], got "
                         f"shapes {cos.shape} and {sin.shape}")
    if cos.shape[0] < longest:
        raise ValueError(f"{OP}: the tables have {cos.shape[0]} positions, fewer than the "
                         f"longest sequence ({longest})")


def check_options(window: Any, scale: Any, d: int) -> tuple[int | None, float]:
    """The window (None or an int ≥ 0) and the scale (D^-1/2 when None)."""
    if window is not None:
        if isinstance(window, bool) or not isinstance(window, numbers.Integral):
            raise TypeError(f"{OP}: window must be None or an int, got {type(window).__name__}")
        if window < 0:
            raise ValueError(f"{OP}: window must be None or at least 0, got {window}")
        if window >= 2**31:  # the kernels take it as an int32
            raise ValueError(f"{OP}: window must be < 2**31, got {window}")
        window = int(window)
    if scale is None:
        return window, d ** -0.5
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"{OP}: scale must be a real number, got {type(scale).__name__}")
    return window, float(scale)


def packed_attention(qkv: Any, lengths: Any, cos: Any, sin: Any, *, heads: int,
                     scale: float | None = None, window: int | None = None,
                     return_lse: bool = False, stream: Any = None) -> Any:
    """Attention over sequences packed along one token axis, RoPE applied inside.

    Token `t` of sequence `s` (at position `i` within it) attends to the keys of `s` only:
    `out[t] = softmax_j(scale · R_i q_t · R_j k_j) v_j` per head, where `R_p` rotates the
    halves `(x1, x2)` of a head by the angles of row `p` of the tables (`x1 cos − x2 sin`,
    `x1 sin + x2 cos`); with a `window`, only keys with `|i − j| ≤ window`. Half types
    accumulate in float32. Differentiable (the FlashAttention-2 backward with respect to
    qkv), batched under `vmap` (packs with the same lengths).

    Args:
        qkv: `[T, 3·heads·D]`: each token's queries, keys and values, heads contiguous.
        lengths: the sequences' lengths (Python ints or a 1-D integer array) summing to T.
        cos: `[P, D/2]` cosines by position within a sequence, P at least the longest
            sequence (any angles); cast to qkv's dtype.
        sin: `[P, D/2]` sines, likewise.
        heads: the number of heads H.
        scale: multiplies the scores; D^-1/2 when None.
        window: None (every key of the sequence) or w ≥ 0 (keys with `|i − j| ≤ w`).
        return_lse: also return each row's log-sum-exp of the scaled scores.
        stream: stream or device.

    Returns:
        `out [T, H·D]` in qkv's dtype, and with `return_lse` the pair `(out, lse)`,
        `lse [H, T]` in float32 (float64 for float64 qkv).

    Raises:
        ValueError: lengths that are negative or do not sum to T; a width that is not
            `3·heads·D`; an odd D; tables of the wrong width or shorter than the longest
            sequence; a negative window; heads below 1.
        TypeError: non-floating qkv or tables; non-integer lengths, heads or window; a
            scale that is not a real number.

    Example:
        >>> qkv = mx.ones((5, 3 * 2 * 4))
        >>> cos, sin = mx.ones((3, 2)), mx.zeros((3, 2))
        >>> out, lse = mx.fast.packed_attention(qkv, [3, 2], cos, sin, heads=2,
        ...                                     return_lse=True)
        >>> out.shape, lse.shape, round(lse[0, 0].item(), 4)
        ((5, 8), (2, 5), 3.0986)
    """
    with stream_context(to_stream(stream)):
        qkv = as_array(qkv, OP)
        cos, sin = as_array(cos, OP), as_array(sin, OP)
        return_lse = bool_flag(return_lse, OP, "return_lse")
        d = check_qkv(qkv, heads)
        lengths = check_lengths(lengths, qkv.shape[0])
        check_tables(cos, sin, d, max(lengths, default=0))
        window, scale = check_options(window, scale, d)
        ops = mx()
        cos, sin = ops.astype(cos, qkv.dtype), ops.astype(sin, qkv.dtype)
        op = PackedAttention(int(heads), lengths, scale, window)
        if qkv.size == 0:
            out, lse = op.fallback([qkv, cos, sin])
        else:
            out, lse = record_packed(op, [qkv, cos, sin])
        return (out, lse) if return_lse else out
