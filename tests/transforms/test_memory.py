"""Memory under transformations: graphs released after a transform, checkpoint lowering the
peak of a gradient, and a long training loop holding its memory flat."""

from __future__ import annotations

import gc

import numpy as np

import nuvec as mx
from nuvec.graph.array import Node

N = 20_000  # float64 elements per activation: 160 kB
ACTIVATION = N * 8


def _layer(x, w):
    return mx.exp(x * w) * 0.5


def _deep(x, ws):
    for w in ws:
        x = _layer(x, w)
    return x


def _inputs(depth: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = mx.array(rng.standard_normal(N) * 0.1, mx.float64)
    ws = [mx.array(rng.standard_normal() * 0.1, mx.float64) for _ in range(depth)]
    mx.eval(x, ws)
    return x, ws


def test_a_kept_value_does_not_keep_the_traced_graph() -> None:
    x, ws = _inputs(12)
    mx.eval(x, ws)
    base = mx.get_active_memory()
    loss, grads = mx.value_and_grad(lambda a: _deep(a, ws).sum())(x)
    mx.eval(loss, grads)
    del grads
    gc.collect()
    # `loss` is still referenced; its 12 float64 intermediates (and products) must be gone.
    assert mx.get_active_memory() - base < 2 * ACTIVATION
    assert loss.item() > 0


def _gradient_and_peak(loss_fn, *args, argnums=0):
    """The evaluated gradient and the peak memory above what was live before it."""
    gc.collect()
    mx.reset_peak_memory()
    base = mx.get_active_memory()
    g = mx.grad(loss_fn, argnums=argnums)(*args)
    mx.eval(g)
    return g, mx.get_peak_memory() - base


def _peak_of_gradient(loss_fn, x, ws) -> int:
    return _gradient_and_peak(loss_fn, x, ws, argnums=1)[1]


def test_checkpoint_lowers_the_peak_of_a_gradient() -> None:
    depth, segment = 24, 4
    x, ws = _inputs(depth)

    def plain(a, w):
        return _deep(a, w).sum()

    block = mx.checkpoint(_deep)

    def checkpointed(a, w):
        for i in range(0, depth, segment):
            a = block(a, w[i:i + segment])
        return a.sum()

    gp = mx.grad(plain, argnums=1)(x, ws)
    gc_ = mx.grad(checkpointed, argnums=1)(x, ws)
    for a, b in zip(gp, gc_):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-13)
    del gp, gc_
    plain_peak = _peak_of_gradient(plain, x, ws)
    ckpt_peak = _peak_of_gradient(checkpointed, x, ws)
    # Without checkpoint every layer's activations wait for the backward pass.
    assert plain_peak > depth * ACTIVATION
    assert ckpt_peak < 0.5 * plain_peak, (plain_peak, ckpt_peak)


def _live_nodes() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is Node)


def test_a_thousand_training_steps_hold_memory_flat() -> None:
    rng = np.random.default_rng(1)
    xs = mx.array(rng.standard_normal((16, 4)) * 0.5, mx.float64)
    ys = mx.array(rng.standard_normal((16, 4)), mx.float64)
    params = {"w": mx.zeros((4,), mx.float64), "b": mx.zeros((), mx.float64)}

    def loss_fn(p):
        err = mx.exp(xs * p["w"] + p["b"]) - ys
        return (err * err).sum() * (1.0 / 64), err

    step = mx.value_and_grad(loss_fn)
    figures = {}
    losses = []
    for i in range(1, 1001):
        (loss, err), grads = step(params)
        params = {k: params[k] - 0.05 * grads[k] for k in params}
        mx.eval(params, loss, err)
        losses.append(loss.item())
        if i in (100, 1000):
            figures[i] = (_live_nodes(), mx.get_active_memory())
    assert losses[-1] < losses[0]
    assert figures[1000][0] <= figures[100][0]
    assert figures[1000][1] <= figures[100][1]


def test_backward_frees_each_activation_with_its_weight_gradient() -> None:
    depth, batch, width = 12, 4096, 8
    rng = np.random.default_rng(3)
    x = mx.array(rng.standard_normal((batch, width)), mx.float64)
    ws = [mx.array(rng.standard_normal((width, width)) / width**0.5, mx.float64)
          for _ in range(depth)]
    mx.eval(x, ws)

    def loss(params):
        h = x
        for w in params:
            h = mx.tanh(mx.matmul(h, w))
        return mx.sum(h)

    _, peak = _gradient_and_peak(loss, ws)
    activation = batch * width * 8
    # Each layer's activation is needed until its weight gradient is computed; computing that
    # gradient with the layer's input cotangent keeps about one activation per layer alive,
    # not an activation and a cotangent.
    assert peak < 1.5 * depth * activation, peak / activation


def test_cotangents_of_windows_sum_into_one_buffer() -> None:
    # Sixteen row blocks of x each get a cotangent that is zeros but for its window; summed as
    # whole arrays they would hold sixteen of x's size. Each block's window is added into one
    # buffer in place instead (which also needs the evaluator to keep no stray reference to
    # that buffer after running a view of it).
    rows, width, blocks = 2048, 256, 16
    rng = np.random.default_rng(4)
    x = mx.array(rng.standard_normal((rows, width)).astype(np.float32))
    ws = [mx.array(rng.standard_normal((rows // blocks, width)).astype(np.float32))
          for _ in range(blocks)]
    mx.eval(x, ws)
    step = rows // blocks

    def loss(a):
        return sum(mx.sum(a[i * step:(i + 1) * step] * w) for i, w in enumerate(ws))

    g, peak = _gradient_and_peak(loss, x)
    np.testing.assert_array_equal(np.asarray(g), np.concatenate([np.asarray(w) for w in ws]))
    assert peak < 1.5 * x.nbytes, peak / x.nbytes
