"""CPU kernels of `nuvec.fast`: direct NumPy bodies for the row-wise fused ops, and the
fallback graph (`run_on_cpu`) for every other fused op.

Half types compute in float32, float64 in float64; the evaluator casts results to the
node's dtypes and runs every kernel under `np.errstate(all="ignore")` (an infinite row maximum
makes `x - max` NaN, which `_lse` replaces by that maximum), so kernels open no error state.
"""

from __future__ import annotations

import math

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.fast.base import cpu_fallback_kernel
from nuvec.fast.conv import DepthwiseConv1d
from nuvec.fast.cross_entropy import CrossEntropy, CrossEntropyVjp
from nuvec.fast.gated_delta import GatedDelta, GatedDeltaSlots
from nuvec.fast.gather import GatherMm, GatherQmm
from nuvec.fast.norms import AddRmsNorm, LayerNorm, LayerNormVjp, RmsNorm, RmsNormVjp
from nuvec.fast.rope import NormRope, Rope
from nuvec.fast.softmax import LogSumExp, Softmax


def _wide(x: np.ndarray) -> np.ndarray:
    return x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)


def _row_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`sum(a * b, -1, keepdims=True)` without a temporary of `a`'s size."""
    return np.einsum("...i,...i->...", a, b)[..., None]


def _inv_rms(xf: np.ndarray, eps: float) -> np.ndarray:
    ms = _row_dot(xf, xf)
    ms /= xf.shape[-1]
    ms += eps
    return 1.0 / np.sqrt(ms, out=ms)


def _sum_rows(g: np.ndarray) -> np.ndarray:
    return g.reshape(-1, g.shape[-1]).sum(axis=0)


def _as(p: np.ndarray, like: np.ndarray) -> np.ndarray:
    return p.astype(like.dtype, copy=False)


# Row-wise kernels work through blocks of rows small enough that a block and its temporaries
# stay in cache, so each pass over a block reads cache rather than memory.
_BLOCK = 1 << 16


def _row_blocks(rows: int, row_size: int):
    step = max(1, _BLOCK // max(row_size, 1))
    return (slice(i, min(rows, i + step)) for i in range(0, rows, step))


def _rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`x` as `[rows, D]` and an empty output of that shape (float32 for half types)."""
    x2 = x.reshape(-1, x.shape[-1])
    return x2, np.empty(x2.shape, np.float64 if x.dtype == np.float64 else np.float32)


@kernel(RmsNorm)
def rms_norm(p, x, w):
    x2, out = _rows(x)
    wf = _as(w, out) if w.ndim else None
    for rows in _row_blocks(*x2.shape):
        xb, ob = _wide(x2[rows]), out[rows]
        np.multiply(xb, _inv_rms(xb, p.eps), out=ob)
        if wf is not None:
            ob *= wf
    return out.reshape(x.shape)


@kernel(AddRmsNorm)
def add_rms_norm(p, x, r, w):
    h = x + r
    return h, rms_norm(p, h, w)


@kernel(RmsNormVjp)
def rms_norm_vjp(p, x, w, g):
    xf, gf = _wide(x), _wide(g)
    d = x.shape[-1]
    n = _inv_rms(xf, p.eps)
    gw = gf * _as(w, gf)
    t = _row_dot(gw, xf) / d
    dx = gw * n
    dx -= xf * (t * n**3)
    dw = np.zeros((), xf.dtype) if w.ndim == 0 else _sum_rows(gf * (xf * n))
    return dx, dw


def _centered(x: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    xf = _wide(x)
    xc = xf - xf.mean(axis=-1, keepdims=True)
    var = _row_dot(xc, xc)
    var /= x.shape[-1]
    var += eps
    return xc, 1.0 / np.sqrt(var, out=var)


@kernel(LayerNorm)
def layer_norm(p, x, w, b):
    x2, out = _rows(x)
    wf = _as(w, out) if w.ndim else None
    bf = _as(b, out) if b.ndim else None
    d = x2.shape[-1]
    for rows in _row_blocks(*x2.shape):
        xb, ob = _wide(x2[rows]), out[rows]
        np.subtract(xb, xb.mean(axis=-1, keepdims=True), out=ob)
        var = _row_dot(ob, ob)
        var /= d
        var += p.eps
        ob *= 1.0 / np.sqrt(var, out=var)
        if wf is not None:
            ob *= wf
        if bf is not None:
            ob += bf
    return out.reshape(x.shape)


@kernel(LayerNormVjp)
def layer_norm_vjp(p, x, w, b, g):
    xc, n = _centered(x, p.eps)
    gf = _wide(g)
    d = x.shape[-1]
    wg = gf * _as(w, gf)
    mwgxc = _row_dot(wg, xc) / d
    dx = wg - wg.mean(axis=-1, keepdims=True)
    dx *= n
    dx -= xc * (mwgxc * n**3)
    dw = np.zeros((), xc.dtype) if w.ndim == 0 else _sum_rows(gf * (xc * n))
    db = np.zeros((), xc.dtype) if b.ndim == 0 else _sum_rows(gf)
    return dx, dw, db


def _exp_shifted(xb: np.ndarray, eb: np.ndarray) -> np.ndarray:
    """Writes `exp(x - max)` of the rows `xb` into `eb`; returns the max (kept)."""
    m = xb.max(axis=-1, keepdims=True)
    np.subtract(xb, m, out=eb)
    np.exp(eb, out=eb)
    return m


@kernel(Softmax)
def softmax_kernel(p, x):
    x2, out = _rows(x)
    for rows in _row_blocks(*x2.shape):
        ob = out[rows]
        _exp_shifted(_wide(x2[rows]), ob)
        ob *= 1.0 / ob.sum(axis=-1, keepdims=True)
    return out.reshape(x.shape)


def _lse(x: np.ndarray) -> np.ndarray:
    """`log(sum(exp(x)))` over the last axis, kept as size 1; infinite maxima pass through."""
    dtype = np.float64 if x.dtype == np.float64 else np.float32
    x2 = x.reshape(-1, x.shape[-1])
    out = np.empty((x2.shape[0], 1), dtype)
    scratch = None
    for rows in _row_blocks(*x2.shape):
        xb = _wide(x2[rows])
        if scratch is None:
            scratch = np.empty_like(xb)
        eb = scratch[: xb.shape[0]]
        m = _exp_shifted(xb, eb)
        ob = np.log(eb.sum(axis=-1, keepdims=True))
        ob += m
        out[rows] = np.where(np.isinf(m), m, ob)
    return out.reshape(*x.shape[:-1], 1)


@kernel(LogSumExp)
def logsumexp(p, x):
    return _lse(x)


@kernel(Rope)
def rope_kernel(p, x, offset, *freqs):
    shape = x.shape
    t, d = shape[-2], shape[-1]
    xv = x.reshape(shape[0], -1, t, d)
    half = p.dims // 2
    ang = np.float64 if x.dtype == np.float64 else np.float32
    off = offset.astype(ang).reshape((-1, 1, 1) if offset.size > 1 else ())
    positions = (np.arange(t, dtype=ang) + off) * ang(p.scale)
    if freqs:
        inv = 1.0 / freqs[0].astype(ang)
    else:
        inv = np.exp(np.arange(0, -half, -1, dtype=ang) * ang(math.log(p.base) / half))
    theta = positions[..., None] * inv
    c, s = np.cos(theta), np.sin(theta)
    if not p.forward:
        s = -s
    out = np.empty(xv.shape, ang)
    step = max(1, _BLOCK // (t * d))
    scratch = np.empty((xv.shape[0], min(step, xv.shape[1]), t, half), ang)
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
        np.multiply(x1, c, out=o1)
        o1 -= np.multiply(x2, s, out=tmp)
        np.multiply(x1, s, out=o2)
        o2 += np.multiply(x2, c, out=tmp)
        if p.dims < d:
            ob[..., p.dims:] = xb[..., p.dims:]
    return out.reshape(shape)


def _targets(x: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wrapped class indices (clipped into range) and whether each was in range."""
    classes = x.shape[-1]
    y = np.where(targets < 0, targets + classes, targets)
    hit = (y >= 0) & (y < classes)
    return np.clip(y, 0, classes - 1)[..., None], hit


@kernel(CrossEntropy)
def cross_entropy(p, x, targets):
    y, hit = _targets(x, targets)
    xf = _wide(x)
    score = np.where(hit, np.take_along_axis(xf, y, -1)[..., 0], 0)
    return _lse(x)[..., 0] - score


@kernel(CrossEntropyVjp)
def cross_entropy_vjp(p, x, targets, loss, g):
    y, hit = _targets(x, targets)
    xf = _wide(x)
    score = np.where(hit, np.take_along_axis(xf, y, -1)[..., 0], 0)
    lse = loss.astype(xf.dtype) + score
    grad = np.subtract(xf, lse[..., None])
    np.exp(grad, out=grad)
    picked = np.take_along_axis(grad, y, -1)
    np.put_along_axis(grad, y, picked - hit[..., None], -1)
    grad *= g[..., None].astype(xf.dtype)
    return grad


kernel(
    NormRope,
    DepthwiseConv1d,
    GatherMm,
    GatherQmm,
    GatedDelta,
    GatedDeltaSlots,
)(cpu_fallback_kernel)
