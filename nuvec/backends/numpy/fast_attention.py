"""CPU kernels of `nuvec.fast`'s attention nodes: the CPU composition's row block
(`AttentionRows`) computed directly, and nodes built for a GPU kernel (`Attention`,
`AttentionVjp`, the paged ops) through their fallback graphs (`run_on_cpu`).
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


@kernel(AttentionRows)
def attention_rows(p, q, k, v, *rest):
    """Scores of the block in float32 (float64 for float64), masked with the dtype's lowest
    value as the fallback does; under the causal mask only the columns some row of the block
    cannot see are touched."""
    f = np.float64 if q.dtype == np.float64 else np.float32
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
