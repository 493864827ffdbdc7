"""The tiled attention node's fused backward on a GPU stream (the NumPy GPU double computes
the nodes through their fallback graphs): a tiled node recorded under a transform saves its
lse, its `vjp` records one `AttentionVjp` node, and the gradients (of q, k, v, the sinks and an
additive mask) equal the CPU's, which differentiates the composition as the seed does."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from nuvec.fast.attention import Attention
from nuvec.fast.attention_grad import AttentionVjp

# (q shape, k shape, options, inputs differentiated)
CASES = {
    "causal_gqa4_sinks": ((1, 4, 12, 64), (1, 1, 20, 64), dict(mask="causal", sinks=True),
                          (0, 1, 2, 3)),
    "window": ((2, 2, 16, 64), (2, 1, 16, 64), dict(mask="causal", window=5), (0, 1, 2)),
    "bool_mask": ((1, 2, 10, 80), (1, 2, 13, 80), dict(mask="bool"), (0, 1, 2)),
    "additive_mask": ((1, 2, 10, 64), (1, 1, 13, 64), dict(mask="add"), (0, 1, 2, 3)),
}


def _inputs(qs, ks, options, seed=0):
    rng = np.random.default_rng(seed)
    out = [rng.standard_normal(s).astype(np.float32) for s in (qs, ks, ks)]
    mask = options.get("mask")
    if mask == "bool":
        m = rng.random((qs[2], ks[2])) < 0.6
        m[3] = False  # a row that sees no key
        out.append(m)
    elif mask == "add":
        out.append(rng.standard_normal((qs[2], ks[2])).astype(np.float32))
    if options.get("sinks"):
        out.append(rng.standard_normal(qs[1]).astype(np.float32))
    return out


def _function(options):
    mask = options.get("mask")

    def f(q, k, v, *rest):
        m = "causal" if mask == "causal" else (rest[0] if mask else None)
        sinks = rest[-1] if options.get("sinks") else None
        return mx.fast.scaled_dot_product_attention(q, k, v, scale=0.2, mask=m, sinks=sinks,
                                                    window=options.get("window"))

    return f


def _grads(options, inputs, argnums, dout):
    f = _function(options)

    def loss(*xs):
        return mx.sum(f(*xs) * dout)

    grads = mx.grad(loss, argnums=argnums)(*[mx.array(a) for a in inputs])
    return [np.asarray(g) for g in grads]


def _recorded(out, cls):
    """The primitives of class `cls` in the graph of `out` (before evaluation)."""
    seen, stack, found = set(), [out], []
    while stack:
        node = stack.pop()._node
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node.primitive, cls):
            found.append(node.primitive)
        stack.extend(node.inputs)
    return found


@pytest.mark.parametrize("case", list(CASES), ids=str)
def test_gpu_gradient_equals_cpu(fake_gpu, case):
    qs, ks, options, argnums = CASES[case]
    inputs = _inputs(qs, ks, options)
    dout = np.random.default_rng(1).standard_normal(qs).astype(np.float32)
    with mx.stream(fake_gpu):
        got = _grads(options, inputs, argnums, mx.array(dout))
    with mx.stream(mx.cpu):
        want = _grads(options, inputs, argnums, mx.array(dout))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)


def test_vjp_records_the_fused_backward(fake_gpu):
    qs, ks, options, _ = CASES["causal_gqa4_sinks"]
    inputs = [mx.array(a) for a in _inputs(qs, ks, options)]
    with mx.stream(fake_gpu):
        outs, grads = mx.vjp(_function(options), inputs, [mx.ones(qs)])
        tiled = _recorded(outs[0], Attention)
        assert len(tiled) == 1 and tiled[0].lse and tiled[0].passes == 0
        assert len(_recorded(grads[0], AttentionVjp)) == 1
        plain = mx.fast.scaled_dot_product_attention(*inputs[:3], scale=0.2, mask="causal")
        assert not _recorded(plain, Attention)[0].lse  # nothing to save untraced


def test_grad_of_grad_on_gpu_equals_cpu(fake_gpu):
    qs, ks, options, _ = CASES["causal_gqa4_sinks"]
    inputs = _inputs(qs, ks, options)
    f = _function(options)

    def inner(q, k, v, s):
        return mx.sum(mx.grad(lambda q: mx.sum(f(q, k, v, s) ** 2))(q) ** 2)

    def both():
        return [np.asarray(g) for g in mx.grad(inner, argnums=(0, 1))(
            *[mx.array(a) for a in inputs])]

    with mx.stream(fake_gpu):
        got = both()
    with mx.stream(mx.cpu):
        want = both()
    for g, w in zip(got, want):  # float32 sums of magnitudes up to ~300
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5 * np.abs(w).max())
