"""CPU kernels of `nuvec.fast`'s attention nodes: the CPU composition's row block
(`AttentionRows`) computed directly, and nodes built for a GPU kernel (`Attention`,
`AttentionVjp`, the paged ops) through their fallback graphs (`run_on_cpu`).

A row block without a mask array or sinks whose scores are bounded (`|scale·q·k| <=
|scale·q|·|k|` small enough that `exp` of every score, and their sums with the values, stay
finite and normal) is computed in tiles of `TILE_ROWS` query rows, each against only the keys
its rows see (fully masked keys skipped under the causal mask and the window), without the
row maximum: `exp(s)` through BLAS-shaped products, the row sums from a column of ones next
to the values (for blocks of more rows than the values have columns; a sum otherwise). Every other block takes the exact path, with the row maximum.
"""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.fast.attention import Attention, AttentionRows
from nuvec.fast.attention_grad import AttentionVjp
from nuvec.fast.base import cpu_fallback_kernel
from nuvec.fast.paged import PagedAttention, PagedWrite
from nuvec.graph import dtypes as dt

kernel(Attention, AttentionVjp, PagedAttention, PagedWrite)(cpu_fallback_kernel)


def _hide(s: np.ndarray, cols: slice, hidden: np.ndarray, fill: float) -> None:
    """Sets the scores of `s[..., cols]` where `hidden` (`[rows, width]`) to `fill`."""
    if hidden.size and hidden.any():
        part = s[..., cols]
        np.copyto(part, fill, where=hidden)


# Query rows per tile of the bounded path (picked by timing [1, 8, 1024, 64] causal).
TILE_ROWS = 64
# The largest score bound, and log of the largest sum of `exp(score)·value`, per dtype.
BOUNDS = {np.dtype(np.float32): (80.0, 85.0), np.dtype(np.float64): (700.0, 705.0)}


def bounded(p, q, k, v, f) -> np.ndarray | None:
    """The block by the bounded path (see the module docstring), or None when its scores
    are not bounded enough (or it has rows that see no key)."""
    b, hq, r, d = q.shape
    hkv, lk, dv = k.shape[1], k.shape[2], v.shape[3]
    if p.causal and p.offset < 0:
        return None
    rep = hq // hkv
    qf = (q.astype(f) * f(p.scale)).reshape(b, hkv, rep, r, d)
    kf = k.astype(f, copy=False)
    limit, total_limit = BOUNDS[np.dtype(f)]
    with np.errstate(over="ignore", invalid="ignore"):
        bound = float(np.sqrt(np.max(np.einsum("...i,...i->...", qf, qf)))
                      * np.sqrt(np.max(np.einsum("...i,...i->...", kf, kf))))
        top = float(np.log(lk * max(float(np.max(v)), -float(np.min(v)), 1.0)))
    if not (bound <= limit and bound + top <= total_limit):
        return None
    ones = r > dv  # the sums from a ones column when copying the values costs less than a pass
    values = v.astype(f, copy=False)
    if ones:
        values = np.empty((b, hkv, lk, dv + 1), f)
        values[..., :dv] = v
        values[..., dv] = 1
    out = np.empty((b, hkv, rep, r, dv), f)
    for r0 in range(0, r, TILE_ROWS):
        r1 = min(r, r0 + TILE_ROWS)
        k0, k1 = 0, lk
        if p.causal:
            k1 = min(lk, p.offset + r1)
            if p.window is not None:
                k0 = min(max(p.offset + r0 - p.window + 1, 0), k1 - 1)
        rows = qf[:, :, :, r0:r1].reshape(b, hkv, rep * (r1 - r0), d)
        s = np.matmul(rows, np.swapaxes(kf[:, :, k0:k1], -1, -2))
        if p.causal:
            hide_outside(s.reshape(b, hkv, rep, r1 - r0, k1 - k0), p, r0, r1, k0, k1)
        np.exp(s, out=s)
        o = np.matmul(s, values[:, :, k0:k1]).reshape(b, hkv, rep, r1 - r0, -1)
        total = o[..., dv:] if ones else s.sum(axis=-1).reshape(b, hkv, rep, r1 - r0, 1)
        np.divide(o[..., :dv], total, out=out[:, :, :, r0:r1])
    return out.reshape(b, hq, r, dv)


def hide_outside(s5: np.ndarray, p, r0: int, r1: int, k0: int, k1: int) -> None:
    """Sets to −inf the scores of a tile (rows `r0..r1`, keys `k0..k1`) outside each row's
    causal window."""
    pos = p.offset + np.arange(r0, r1)[:, None]
    lo = max(p.offset + r0 + 1, k0)  # keys every row of the tile sees end before this one
    _hide(s5, slice(lo - k0, k1 - k0), np.arange(lo, k1)[None, :] > pos, -np.inf)
    if p.window is not None:
        hi = min(max(p.offset + r1 - p.window, k0), k1)
        _hide(s5, slice(0, hi - k0), np.arange(k0, hi)[None, :] <= pos - p.window, -np.inf)


@kernel(AttentionRows)
def attention_rows(p, q, k, v, *rest):
    """The bounded path when it applies; else the scores of the block in float32 (float64
    for float64), masked with the dtype's lowest value as the fallback does; under the
    causal mask only the columns some row of the block cannot see are touched."""
    f = np.float64 if q.dtype == np.float64 else np.float32
    if not rest and q.size and k.shape[2]:
        out = bounded(p, q, k, v, f)
        if out is not None:
            return out
    fill = float(dt.finfo(dt.from_numpy_dtype(q.dtype)).min)
    b, hq, r, d = q.shape
    hkv, lk, dv = k.shape[1], k.shape[2], v.shape[3]
    rep = hq // hkv
    qf = (q.astype(f) * f(p.scale)).reshape(b, hkv, rep * r, d)
    s = np.matmul(qf, np.swapaxes(k.astype(f, copy=False), -1, -2))
    s5 = s.reshape(b, hkv, rep, r, lk)
    rest = list(rest)
    sinks = rest.pop().astype(f).reshape(1, hkv, rep, 1, 1) if p.sinks else None
    if p.causal:
        pos = p.offset + np.arange(r)[:, None]  # each row's position
        # Keys after the first row's position: hidden from the rows before theirs.
        lo = min(max(p.offset + 1, 0), lk)
        _hide(s5, slice(lo, lk), np.arange(lo, lk)[None, :] > pos, fill)
        if p.window is not None:
            # Keys up to the last row's window start: hidden from the rows after them.
            hi = min(max(p.offset + r - p.window, 0), lk)
            _hide(s5, slice(0, hi), np.arange(hi)[None, :] <= pos - p.window, fill)
    elif p.mask:
        m = rest[0].reshape(b, hkv, rep, r, lk)
        if m.dtype == np.bool_:
            np.copyto(s5, fill, where=~m)
        else:
            s5 += m
    mx_ = s5.max(axis=-1, keepdims=True)
    if sinks is not None:
        mx_ = np.maximum(mx_, sinks)
    s5 -= mx_
    np.exp(s5, out=s5)
    total = s5.sum(axis=-1, keepdims=True)
    if sinks is not None:
        total += np.exp(sinks - mx_)
    out = np.matmul(s, v.astype(f, copy=False)).reshape(b, hkv, rep, r, dv)
    out /= total
    return out.reshape(b, hq, r, dv)
