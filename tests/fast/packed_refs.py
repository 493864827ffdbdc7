"""Float64 NumPy references of packed attention, written from the formula, and its data.

Per sequence and head: q and k rotated by their position within the sequence
(`x1 cos − x2 sin`, `x1 sin + x2 cos` on the halves of a head), scores `scale · q kᵀ`, pairs
with `|i − j| > window` removed, a softmax over the sequence's keys, the product with V; the
log-sum-exp of each row's kept scores. The gradient is written out by the chain rule.
"""

from __future__ import annotations

import numpy as np

SEED_LENGTHS = [5, 40, 1, 33, 70]


def rope_tables(p: int, d: int, base: float = 10000.0):
    """RoPE's tables `[p, d/2]`: angle `pos / base^(2i/d)`."""
    pos = np.arange(p)[:, None]
    theta = pos / base ** (2.0 * np.arange(d // 2)[None, :] / d)
    return np.cos(theta), np.sin(theta)


def arbitrary_tables(rng: np.random.Generator, p: int, d: int):
    """Tables of random angles: scores then depend on positions, not only on their gaps."""
    theta = rng.uniform(-np.pi, np.pi, (p, d // 2))
    return np.cos(theta), np.sin(theta)


def bench_lengths() -> list[int]:
    """The seed's bench shape: 32 sequences of 64 to 191 tokens."""
    return [64 + (i * 37) % 128 for i in range(32)]


def rel(got, want) -> float:
    """`max|got − want| / max|want|`."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want), initial=0.0) / max(np.max(np.abs(want),
                                                                      initial=0.0), 1e-6))


def _rotate(x, c, s):
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1)


def _rotate_back(y, c, s):
    h = y.shape[-1] // 2
    y1, y2 = y[..., :h], y[..., h:]
    return np.concatenate([y1 * c + y2 * s, y2 * c - y1 * s], axis=-1)


def _sequences(qkv, lengths, cos, sin, heads):
    """Per non-empty sequence: its token slice, rotated q, k `[H, L, D]`, v, tables."""
    t, width = qkv.shape
    d = width // (3 * heads)
    x = np.asarray(qkv, np.float64).reshape(t, 3, heads, d).transpose(1, 2, 0, 3)
    at = 0
    for n in lengths:
        rows = slice(at, at + n)
        at += n
        if n == 0:
            continue
        c, s = np.asarray(cos, np.float64)[:n], np.asarray(sin, np.float64)[:n]
        yield rows, _rotate(x[0][:, rows], c, s), _rotate(x[1][:, rows], c, s), x[2][:, rows], c, s


def _probs(q, k, scale, window):
    n = q.shape[1]
    s = scale * q @ np.swapaxes(k, -1, -2)
    if window is not None:
        i = np.arange(n)
        s = np.where(np.abs(i[:, None] - i[None, :]) <= window, s, -np.inf)
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    total = e.sum(-1, keepdims=True)
    return e / total, (m + np.log(total))[..., 0]


def reference(qkv, lengths, cos, sin, heads, scale, window):
    """`(out [T, H·D], lse [H, T])` in float64."""
    t, width = qkv.shape
    d = width // (3 * heads)
    out = np.zeros((heads, t, d))
    lse = np.zeros((heads, t))
    for rows, q, k, v, _, _ in _sequences(qkv, lengths, cos, sin, heads):
        p, lse[:, rows] = _probs(q, k, scale, window)
        out[:, rows] = p @ v
    return out.transpose(1, 0, 2).reshape(t, heads * d), lse


def reference_grad(qkv, lengths, cos, sin, heads, scale, window, dout, dlse=None):
    """The cotangent of qkv of `sum(out · dout) + sum(lse · dlse)` in float64."""
    t, width = qkv.shape
    d = width // (3 * heads)
    g = np.zeros((t, 3, heads, d))
    do_all = np.asarray(dout, np.float64).reshape(t, heads, d).transpose(1, 0, 2)
    for rows, q, k, v, c, s in _sequences(qkv, lengths, cos, sin, heads):
        p, _ = _probs(q, k, scale, window)
        do = do_all[:, rows]
        dp = do @ np.swapaxes(v, -1, -2)
        ds = p * (dp - np.sum(p * dp, -1, keepdims=True))
        if dlse is not None:
            ds = ds + p * np.asarray(dlse, np.float64)[:, rows, None]
        dq = scale * ds @ k
        dk = scale * np.swapaxes(ds, -1, -2) @ q
        g[rows, 0] = _rotate_back(dq, c, s).transpose(1, 0, 2)
        g[rows, 1] = _rotate_back(dk, c, s).transpose(1, 0, 2)
        g[rows, 2] = (np.swapaxes(p, -1, -2) @ do).transpose(1, 0, 2)
    return g.reshape(t, width)
