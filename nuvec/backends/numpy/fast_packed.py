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


def heads(x: np.ndarray, tokens: slice) -> np.ndarray:
    """`[H, n, D]` view of tokens `tokens` of token-major `[T, H, D]` data."""
    return x[tokens].transpose(1, 0, 2)


class Pack:
    """A node's pack in the compute dtype, token-major `[T, H, D]`: q rotated and scaled,
    k rotated, v (a view of the input when it already has the compute dtype)."""

    def __init__(self, p, qkv: np.ndarray, cos: np.ndarray, sin: np.ndarray):
        self.f = np.float64 if qkv.dtype == np.float64 else np.float32
        self.t, width = qkv.shape
        self.h, self.scale, self.window = p.heads, p.scale, p.window
        self.d = width // (3 * self.h)
        pos = positions(p.lengths)
        c, sn = cos[pos].astype(self.f)[:, None, :], sin[pos].astype(self.f)[:, None, :]
        # [T, 1, D] tables on the whole head: x·[c, c] + swap(x)·[−s, s] rotates
        self.cos = np.concatenate([c, c], axis=-1)
        self.sin = np.concatenate([-sn, sn], axis=-1)
        x = qkv.reshape(self.t, 3, self.h, self.d)
        # q and k rotate together: the view [T, 2H, D] keeps each row's runs long
        qk = np.empty((self.t, 2 * self.h, self.d), self.f)
        self.rotate_into(x[:, :2].reshape(self.t, 2 * self.h, self.d), qk)
        qk[:, :self.h] *= self.f(p.scale)
        self.q, self.k = qk[:, :self.h], qk[:, self.h:]
        self.v = x[:, 2].astype(self.f, copy=False)
        self.lengths = p.lengths

    def rotate_into(self, x: np.ndarray, out: np.ndarray, inverse: bool = False) -> None:
        """Writes `[T, H, D]` rows rotated by their positions' angles (or back) into `out`:
        `(x1, x2) -> (x1 c − x2 s, x1 s + x2 c)`, computed on whole rows (long runs)."""
        half = self.d // 2
        swapped = np.empty(x.shape, self.f)
        swapped[..., :half] = x[..., half:]
        swapped[..., half:] = x[..., :half]
        np.multiply(x, self.cos, out=out)
        swapped *= -self.sin if inverse else self.sin
        out += swapped

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
        s = np.matmul(heads(self.q, rows), heads(self.k, keys).transpose(0, 2, 1))
        if hidden is not None:
            np.copyto(s, -np.inf, where=hidden)
        return s


@kernel(PackedAttention)
def packed_attention(p, qkv, cos, sin):
    pack = Pack(p, qkv, cos, sin)
    out = np.empty((pack.t, pack.h, pack.d), pack.f)
    lse = np.empty((pack.h, pack.t), pack.f)
    for rows, keys, hidden in pack.blocks():
        s = pack.scores(rows, keys, hidden)
        m = s.max(axis=-1, keepdims=True)
        s -= m
        np.exp(s, out=s)
        total = s.sum(axis=-1, keepdims=True)
        o = np.matmul(s, heads(pack.v, keys))
        o /= total
        heads(out, rows)[...] = o
        lse[:, rows] = (m + np.log(total))[..., 0]
    return out.reshape(pack.t, pack.h * pack.d), lse


@kernel(PackedAttentionVjp)
def packed_attention_vjp(p, qkv, cos, sin, out, lse, dout, dlse=None):
    pack = Pack(p, qkv, cos, sin)
    shape = (pack.t, pack.h, pack.d)
    o = out.reshape(shape).astype(pack.f, copy=False)
    do = dout.reshape(shape).astype(pack.f, copy=False)
    delta = np.einsum("thd,thd->ht", do, o)
    if dlse is not None:
        delta -= dlse
    lse = lse.astype(pack.f, copy=False)
    dq, dk, dv = (np.zeros(shape, pack.f) for _ in range(3))
    for rows, keys, hidden in pack.blocks():
        s = pack.scores(rows, keys, hidden)
        s -= lse[:, rows, None]
        probs = np.exp(s, out=s)
        dos = heads(do, rows)
        heads(dv, keys)[...] += np.matmul(probs.transpose(0, 2, 1), dos)
        ds = np.matmul(dos, heads(pack.v, keys).transpose(0, 2, 1))
        ds -= delta[:, rows, None]
        ds *= probs
        heads(dq, rows)[...] += np.matmul(ds, heads(pack.k, keys))
        heads(dk, keys)[...] += np.matmul(ds.transpose(0, 2, 1), heads(pack.q, rows))
    dq *= pack.f(p.scale)
    dqkv = np.empty((pack.t, 3, pack.h, pack.d), pack.f)
    pack.rotate_into(dq, dqkv[:, 0], inverse=True)
    pack.rotate_into(dk, dqkv[:, 1], inverse=True)
    dqkv[:, 2] = dv
    return dqkv.reshape(qkv.shape)
