"""Float64 NumPy references of the fused ops (written from their formulas) and test helpers."""

from __future__ import annotations

import numpy as np

import nuvec as mx
from nuvec.testing import assert_allclose

DTYPES = [mx.float32, mx.float16, mx.bfloat16, mx.float64]
DTYPE_IDS = [d.name for d in DTYPES]
# The attention tests' tolerance per dtype, relative to the float64 reference.
TOL = {"float32": 1e-5, "float64": 1e-12, "float16": 3e-3, "bfloat16": 2e-2}


def sample(rng: np.random.Generator, shape, dtype, scale: float = 1.0):
    """A random nuvec array of `dtype` and its exact values in float64."""
    a = mx.array(rng.standard_normal(shape) * scale, dtype)
    return a, np.asarray(a).astype(np.float64)


def normal64(rng: np.random.Generator, shape) -> mx.array:
    """A float64 nuvec array of standard normal values (for gradient checks)."""
    return mx.array(rng.standard_normal(shape), mx.float64)


def close(y, want, dtype, tolerances: dict) -> None:
    """`assert_allclose` with the `(rtol, atol)` that `tolerances` gives `dtype`'s name, the
    per-dtype defaults for the others."""
    rtol, atol = tolerances.get(dtype.name, (None, None))
    assert_allclose(y, want, dtype=dtype, rtol=rtol, atol=atol)


def rms_norm(x, w, eps):
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y if w is None else y * w


def layer_norm(x, w, b, eps):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    if w is not None:
        y = y * w
    return y if b is None else y + b


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def logsumexp(x):
    m = np.max(x, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True)) + m
    return np.where(np.isinf(m), m, out)


def cross_entropy(x, t):
    c = x.shape[-1]
    t = np.where(t < 0, t + c, t)
    return logsumexp(x)[..., 0] - np.take_along_axis(x, t[..., None], -1)[..., 0]


def rope(x, dims, traditional, base, scale, offset, freqs=None, inverse=False):
    """Rotates pair i of row l (position (offset + l) * scale) by angle pos / base**(2i/dims)."""
    out = x.copy()
    t = x.shape[-2]
    half = dims // 2
    offset = np.asarray(offset, np.float64).reshape(-1)
    pos = (offset[:, None] + np.arange(t)[None, :]) * scale  # [1 or B, L]
    inv = 1.0 / np.asarray(freqs, np.float64) if freqs is not None else \
        base ** (-2.0 * np.arange(half) / dims)
    theta = pos[..., None] * inv  # [1 or B, L, half]
    theta = theta.reshape(theta.shape[0], *([1] * (x.ndim - 3)), t, half)
    if inverse:
        theta = -theta
    c, s = np.cos(theta), np.sin(theta)
    if traditional:
        i1, i2 = np.arange(0, dims, 2), np.arange(1, dims, 2)
    else:
        i1, i2 = np.arange(half), np.arange(half, dims)
    x1, x2 = x[..., i1], x[..., i2]
    out[..., i1] = x1 * c - x2 * s
    out[..., i2] = x1 * s + x2 * c
    return out


def gated_delta(q, k, v, g, beta, state, steps=False):
    """The rule step by step: S = g S; S += k (beta (v - S k))^T; y = S q."""
    b, t, hk, dk = q.shape
    hv = v.shape[2]
    rep = hv // hk
    q, k = np.repeat(q, rep, axis=2), np.repeat(k, rep, axis=2)
    s = state.copy()
    ys, states = [], []
    for i in range(t):
        s = s * g[:, i, :, None, None]
        mem = np.einsum("bhvk,bhk->bhv", s, k[:, i])
        delta = (v[:, i] - mem) * beta[:, i, :, None]
        s = s + np.einsum("bhv,bhk->bhvk", delta, k[:, i])
        ys.append(np.einsum("bhvk,bhk->bhv", s, q[:, i]))
        states.append(s)
    y = np.stack(ys, 1) if ys else np.zeros((b, 0, hv, v.shape[3]))
    if steps:
        return y, (np.stack(states, 1) if states else np.zeros((b, 0, *state.shape[1:])))
    return y, s


def nodes(out, cls) -> int:
    """How many nodes of primitive class `cls` the graph of `out` holds."""
    seen, stack, count = set(), [out], 0
    while stack:
        a = stack.pop()
        node = a._node
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node.primitive, cls):
            count += 1
        stack.extend(node.inputs)
    return count


def reference(q, k, v, scale, mask=None, sinks=None, window=None):
    """Float64 attention from the formula: a query that sees no key averages every key
    (without sinks); sinks join each softmax's denominator."""
    scale = float(np.float32(scale))
    rep = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    s = q @ np.swapaxes(k, -1, -2) * scale
    lq, lk = s.shape[-2:]
    seen = np.ones(s.shape, bool)
    if isinstance(mask, str):
        p = np.arange(lq)[:, None] + lk - lq
        j = np.arange(lk)[None, :]
        seen = np.broadcast_to(j <= p if window is None else (j <= p) & (j > p - window),
                               s.shape)
    elif mask is not None and mask.dtype == bool:
        seen = np.broadcast_to(mask, s.shape)
    elif mask is not None:
        s = s + mask
    s = np.where(seen, s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True) if lk else np.zeros((*s.shape[:-1], 1))
    if sinks is not None:
        m = np.maximum(m, sinks.reshape(1, -1, 1, 1))
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    denom = e.sum(-1, keepdims=True)
    if sinks is not None:
        denom = denom + np.exp(sinks.reshape(1, -1, 1, 1) - m)
    with np.errstate(invalid="ignore"):
        p = e / denom
    if sinks is None and lk:
        p = np.where(seen.any(-1, keepdims=True), p, 1.0 / lk)
    return p @ v
