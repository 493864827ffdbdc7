"""CPU kernels of `nuvec.fast.packed_attention`: the forward (output and log-sum-exp) and the
FlashAttention-2 backward, computed directly with NumPy one sequence at a time.

Each sequence runs over blocks of query rows whose scores stay under `SCORE_BYTES`, each block
against only the keys its rows reach (the window cuts them), so memory grows with the sum of
squared lengths at most and a window makes the work linear in the length. Half types compute
in float32, float64 in float64.
"""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.fast.packed_attention import PackedAttention, PackedAttentionVjp, positions, spans

# The most bytes of scores one block holds (as the attention composition's CPU cap).
SCORE_BYTES = 4 << 20


class Pack:
    """A node's pack in the compute dtype, heads first: q rotated and scaled, k rotated, v."""

    def __init__(self, p, qkv: np.ndarray, cos: np.ndarray, sin: np.ndarray):
        self.f = np.float64 if qkv.dtype == np.float64 else np.float32
        self.t, width = qkv.shape
        self.h, self.scale, self.window = p.heads, p.scale, p.window
        self.d = width // (3 * self.h)
        pos = positions(p.lengths)
        self.cos = cos[pos].astype(self.f)[:, None, :]  # [T, 1, D/2]
        self.sin = sin[pos].astype(self.f)[:, None, :]
        x = qkv.reshape(self.t, 3, self.h, self.d)
        self.q = self.rotated(x[:, 0])
        self.q *= self.f(p.scale)
        self.k = self.rotated(x[:, 1])
        self.v = self.heads_first(x[:, 2])
        self.lengths = p.lengths

    def heads_first(self, x: np.ndarray) -> np.ndarray:
        """`[T, H, D]` data as a contiguous `[H, T, D]` array of the compute dtype."""
        out = np.empty((self.h, self.t, self.d), self.f)
        out.transpose(1, 0, 2)[...] = x
        return out

    def rotated(self, x: np.ndarray) -> np.ndarray:
        """`[T, H, D]` rows rotated by their positions' angles, as a new `[H, T, D]` array."""
        whole = np.empty((self.h, self.t, self.d), self.f)
        self.rotate_into(x, whole.transpose(1, 0, 2))
        return whole

    def rotate_into(self, x: np.ndarray, out: np.ndarray, inverse: bool = False) -> None:
        """Writes `[T, H, D]` rows rotated by their positions' angles (or back) into `out`."""
        half = self.d // 2
        x1, x2 = x[..., :half], x[..., half:]
        c, s = self.cos, (-self.sin if inverse else self.sin)
        np.multiply(x1, c, out=out[..., :half])
        out[..., :half] -= x2 * s
        np.multiply(x1, s, out=out[..., half:])
        out[..., half:] += x2 * c

    def blocks(self):
        """`(rows, keys, hidden)` per block: token slices of the queries and the keys they
        reach, and the `[R, K]` mask of the pairs out of the window (None if none is)."""
        w = self.window
        for a, n in spans(self.lengths):
            reach = n if w is None else min(n, 2 * w + 1)
            step = max(1, SCORE_BYTES // (self.h * reach * np.dtype(self.f).itemsize))
            for r0 in range(0, n, step):
                r1 = min(n, r0 + step)
                k0, k1 = (0, n) if w is None else (max(0, r0 - w), min(n, r1 + w))
                hidden = None
                if w is not None:
                    gap = np.abs(np.arange(r0, r1)[:, None] - np.arange(k0, k1)[None, :])
                    hidden = gap > w
                    if not hidden.any():
                        hidden = None
                yield slice(a + r0, a + r1), slice(a + k0, a + k1), hidden

    def scores(self, rows: slice, keys: slice, hidden) -> np.ndarray:
        s = np.matmul(self.q[:, rows], np.swapaxes(self.k[:, keys], -1, -2))
        if hidden is not None:
            np.copyto(s, -np.inf, where=hidden)
        return s


@kernel(PackedAttention)
def packed_attention(p, qkv, cos, sin):
    pack = Pack(p, qkv, cos, sin)
    out = np.empty((pack.h, pack.t, pack.d), pack.f)
    lse = np.empty((pack.h, pack.t), pack.f)
    for rows, keys, hidden in pack.blocks():
        s = pack.scores(rows, keys, hidden)
        m = s.max(axis=-1, keepdims=True)
        s -= m
        np.exp(s, out=s)
        total = s.sum(axis=-1, keepdims=True)
        o = np.matmul(s, pack.v[:, keys])
        o /= total
        out[:, rows] = o
        lse[:, rows] = (m + np.log(total))[..., 0]
    merged = out.transpose(1, 0, 2).astype(qkv.dtype, order="C")
    return merged.reshape(pack.t, pack.h * pack.d), lse


@kernel(PackedAttentionVjp)
def packed_attention_vjp(p, qkv, cos, sin, out, lse, dout, dlse=None):
    pack = Pack(p, qkv, cos, sin)
    shape = (pack.t, pack.h, pack.d)
    o, do = pack.heads_first(out.reshape(shape)), pack.heads_first(dout.reshape(shape))
    delta = np.einsum("htd,htd->ht", do, o)
    if dlse is not None:
        delta -= dlse
    lse = lse.astype(pack.f, copy=False)
    dq, dk, dv = (np.zeros((pack.h, pack.t, pack.d), pack.f) for _ in range(3))
    for rows, keys, hidden in pack.blocks():
        s = pack.scores(rows, keys, hidden)
        s -= lse[:, rows, None]
        probs = np.exp(s, out=s)
        dos = do[:, rows]
        dv[:, keys] += np.matmul(np.swapaxes(probs, -1, -2), dos)
        ds = np.matmul(dos, np.swapaxes(pack.v[:, keys], -1, -2))
        ds -= delta[:, rows, None]
        ds *= probs
        dq[:, rows] += np.matmul(ds, pack.k[:, keys])
        dk[:, keys] += np.matmul(np.swapaxes(ds, -1, -2), pack.q[:, rows])
    dq *= pack.f(p.scale)
    dqkv = np.empty((pack.t, 3, pack.h, pack.d), pack.f)
    pack.rotate_into(dq.transpose(1, 0, 2), dqkv[:, 0], inverse=True)
    pack.rotate_into(dk.transpose(1, 0, 2), dqkv[:, 1], inverse=True)
    dqkv[:, 2] = dv.transpose(1, 0, 2)
    return dqkv.reshape(qkv.shape).astype(qkv.dtype, copy=False)
