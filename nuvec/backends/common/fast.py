"""Shared bodies of `nuvec.fast`'s row-wise fused ops, written against `xp` (the fused ops
without one compute through their fallback graph: `nuvec/backends/numpy/fast.py`).

Half types compute in float32, float64 in float64; the evaluator casts results to the
node's dtypes and runs every kernel under `xp.errstate(all="ignore")` (an infinite row maximum
makes `x - max` NaN, which `_lse` replaces by that maximum), so kernels open no error state.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nuvec.backends.common.registry import body
from nuvec.fast.cross_entropy import CrossEntropy, CrossEntropyVjp
from nuvec.fast.norms import AddRmsNorm, LayerNorm, LayerNormVjp, RmsNorm, RmsNormVjp
from nuvec.fast.rope import Rope
from nuvec.fast.softmax import LogSumExp, Softmax


def _wide(x: Any) -> Any:
    return x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)


def _row_dot(xp, a: Any, b: Any) -> Any:
    """`sum(a * b, -1, keepdims=True)` without a temporary of `a`'s size."""
    return xp.einsum("...i,...i->...", a, b)[..., None]


def _inv_rms(xp, xf: Any, eps: float) -> Any:
    ms = _row_dot(xp, xf, xf)
    ms /= xf.shape[-1]
    ms += eps
    return 1.0 / xp.sqrt(ms, out=ms)


def _sum_rows(xp, g: Any) -> Any:
    return g.reshape(-1, g.shape[-1]).sum(axis=0)


def _as(p: Any, like: Any) -> Any:
    return p.astype(like.dtype, copy=False)


# Row-wise kernels work through blocks of rows small enough that a block and its temporaries
# stay in cache, so each pass over a block reads cache rather than memory.
_BLOCK = 1 << 16


def _row_blocks(rows: int, row_size: int):
    step = max(1, _BLOCK // max(row_size, 1))
    return (slice(i, min(rows, i + step)) for i in range(0, rows, step))


def _rows(xp, x: Any) -> tuple[Any, Any]:
    """`x` as `[rows, D]` and an empty output of that shape (float32 for half types)."""
    x2 = x.reshape(-1, x.shape[-1])
    return x2, xp.empty(x2.shape, np.float64 if x.dtype == np.float64 else np.float32)


@body(RmsNorm)
def rms_norm(xp, p, x, w):
    x2, out = _rows(xp, x)
    wf = _as(w, out) if w.ndim else None
    for rows in _row_blocks(*x2.shape):
        xb, ob = _wide(x2[rows]), out[rows]
        xp.multiply(xb, _inv_rms(xp, xb, p.eps), out=ob)
        if wf is not None:
            ob *= wf
    return out.reshape(x.shape)


@body(AddRmsNorm)
def add_rms_norm(xp, p, x, r, w):
    h = x + r
    return h, rms_norm(xp, p, h, w)


@body(RmsNormVjp)
def rms_norm_vjp(xp, p, x, w, g):
    xf, gf = _wide(x), _wide(g)
    d = x.shape[-1]
    n = _inv_rms(xp, xf, p.eps)
    gw = gf * _as(w, gf)
    t = _row_dot(xp, gw, xf) / d
    dx = gw * n
    dx -= xf * (t * n**3)
    dw = xp.zeros((), xf.dtype) if w.ndim == 0 else _sum_rows(xp, gf * (xf * n))
    return dx, dw


def _centered(xp, x: Any, eps: float) -> tuple[Any, Any]:
    xf = _wide(x)
    xc = xf - xf.mean(axis=-1, keepdims=True)
    var = _row_dot(xp, xc, xc)
    var /= x.shape[-1]
    var += eps
    return xc, 1.0 / xp.sqrt(var, out=var)


@body(LayerNorm)
def layer_norm(xp, p, x, w, b):
    x2, out = _rows(xp, x)
    wf = _as(w, out) if w.ndim else None
    bf = _as(b, out) if b.ndim else None
    d = x2.shape[-1]
    for rows in _row_blocks(*x2.shape):
        xb, ob = _wide(x2[rows]), out[rows]
        xp.subtract(xb, xb.mean(axis=-1, keepdims=True), out=ob)
        var = _row_dot(xp, ob, ob)
        var /= d
        var += p.eps
        ob *= 1.0 / xp.sqrt(var, out=var)
        if wf is not None:
            ob *= wf
        if bf is not None:
            ob += bf
    return out.reshape(x.shape)


@body(LayerNormVjp)
def layer_norm_vjp(xp, p, x, w, b, g):
    xc, n = _centered(xp, x, p.eps)
    gf = _wide(g)
    d = x.shape[-1]
    wg = gf * _as(w, gf)
    mwgxc = _row_dot(xp, wg, xc) / d
    dx = wg - wg.mean(axis=-1, keepdims=True)
    dx *= n
    dx -= xc * (mwgxc * n**3)
    dw = xp.zeros((), xc.dtype) if w.ndim == 0 else _sum_rows(xp, gf * (xc * n))
    db = xp.zeros((), xc.dtype) if b.ndim == 0 else _sum_rows(xp, gf)
    return dx, dw, db


def _exp_shifted(xp, xb: Any, eb: Any) -> Any:
    """Writes `exp(x - max)` of the rows `xb` into `eb`; returns the max (kept)."""
    m = xb.max(axis=-1, keepdims=True)
    xp.subtract(xb, m, out=eb)
    xp.exp(eb, out=eb)
    return m


@body(Softmax)
def softmax_kernel(xp, p, x):
    x2, out = _rows(xp, x)
    for rows in _row_blocks(*x2.shape):
        ob = out[rows]
        _exp_shifted(xp, _wide(x2[rows]), ob)
        ob *= 1.0 / ob.sum(axis=-1, keepdims=True)
    return out.reshape(x.shape)


def _lse(xp, x: Any) -> Any:
    """`log(sum(exp(x)))` over the last axis, kept as size 1; infinite maxima pass through."""
    dtype = np.float64 if x.dtype == np.float64 else np.float32
    x2 = x.reshape(-1, x.shape[-1])
    out = xp.empty((x2.shape[0], 1), dtype)
    scratch = None
    for rows in _row_blocks(*x2.shape):
        xb = _wide(x2[rows])
        if scratch is None:
            scratch = xp.empty_like(xb)
        eb = scratch[: xb.shape[0]]
        m = _exp_shifted(xp, xb, eb)
        ob = xp.log(eb.sum(axis=-1, keepdims=True))
        ob += m
        out[rows] = xp.where(xp.isinf(m), m, ob)
    return out.reshape(*x.shape[:-1], 1)


@body(LogSumExp)
def logsumexp(xp, p, x):
    return _lse(xp, x)


@body(Rope)
def rope_kernel(xp, p, x, offset, *freqs):
    shape = x.shape
    t, d = shape[-2], shape[-1]
    xv = x.reshape(shape[0], -1, t, d)
    half = p.dims // 2
    ang = np.float64 if x.dtype == np.float64 else np.float32
    off = offset.astype(ang).reshape((-1, 1, 1) if offset.size > 1 else ())
    positions = (xp.arange(t, dtype=ang) + off) * ang(p.scale)
    if freqs:
        inv = 1.0 / freqs[0].astype(ang)
    else:
        inv = xp.exp(xp.arange(0, -half, -1, dtype=ang) * ang(math.log(p.base) / half))
    theta = positions[..., None] * inv
    c, s = xp.cos(theta), xp.sin(theta)
    if not p.forward:
        s = -s
    out = xp.empty(xv.shape, ang)
    step = max(1, _BLOCK // (t * d))
    scratch = xp.empty((xv.shape[0], min(step, xv.shape[1]), t, half), ang)
    for start in range(0, xv.shape[1], step):
        heads = slice(start, start + step)
        xb, ob = _wide(xv[:, heads]), out[:, heads]
        tmp = scratch[:, : xb.shape[1]]
        if p.traditional:
            x1, x2 = xb[..., 0:p.dims:2], xb[..., 1:p.dims:2]
            o1, o2 = ob[..., 0:p.dims:2], ob[..., 1:p.dims:2]
        else:
            x1, x2 = xb[..., :half], xb[..., half:p.dims]
            o1, o2 = ob[..., :half], ob[..., half:p.dims]
        xp.multiply(x1, c, out=o1)
        o1 -= xp.multiply(x2, s, out=tmp)
        xp.multiply(x1, s, out=o2)
        o2 += xp.multiply(x2, c, out=tmp)
        if p.dims < d:
            ob[..., p.dims:] = xb[..., p.dims:]
    return out.reshape(shape)


def _targets(xp, x: Any, targets: Any) -> tuple[Any, Any]:
    """Wrapped class indices (clipped into range) and whether each was in range (a target
    out of range gives a NaN loss and gradient row)."""
    classes = x.shape[-1]
    y = xp.where(targets < 0, targets + classes, targets)
    hit = (y >= 0) & (y < classes)
    return xp.clip(y, 0, classes - 1)[..., None], hit


@body(CrossEntropy)
def cross_entropy(xp, p, x, targets):
    y, hit = _targets(xp, x, targets)
    xf = _wide(x)
    score = xp.where(hit, xp.take_along_axis(xf, y, -1)[..., 0], np.nan)
    return _lse(xp, x)[..., 0] - score


@body(CrossEntropyVjp)
def cross_entropy_vjp(xp, p, x, targets, loss, g):
    y, hit = _targets(xp, x, targets)
    xf = _wide(x)
    score = xp.where(hit, xp.take_along_axis(xf, y, -1)[..., 0], np.nan)
    lse = loss.astype(xf.dtype) + score
    grad = xp.subtract(xf, lse[..., None])
    xp.exp(grad, out=grad)
    picked = xp.take_along_axis(grad, y, -1)
    xp.put_along_axis(grad, y, picked - hit[..., None], -1)
    grad *= g[..., None].astype(xf.dtype)
    return grad
