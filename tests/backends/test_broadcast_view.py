"""The CPU's broadcast view (`nuvec.backends.numpy.broadcast`) against `np.broadcast_to`, and
the fused kernel's small scaled adds, which stay NumPy's two calls (`MIN_AXPY`)."""

from __future__ import annotations

import numpy as np

import nuvec as mx
from nuvec.backends.numpy import blas
from nuvec.backends.numpy import fused as cpu_fused
from nuvec.backends.numpy.broadcast import broadcast
from nuvec.fast.fused import FusedElementwise


def _layouts(rng, shape):
    a = rng.standard_normal(shape).astype(np.float32)
    stacked = rng.standard_normal((3, *shape))
    found = [a, a.T, a > 0, stacked[1], np.asfortranarray(a)]
    if a.ndim:
        found += [a[..., ::-1], stacked[:, ..., :1][0]]
    return found


def test_views_equal_numpys_broadcast_for_every_layout():
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(400):
        target = tuple(int(n) for n in rng.integers(1, 4, rng.integers(0, 4)))
        start = int(rng.integers(0, len(target) + 1))
        source = tuple(n if rng.random() < 0.6 else 1 for n in target[start:])
        for x in _layouts(rng, source):
            try:
                shape = np.broadcast_shapes(x.shape, target)
            except ValueError:
                continue
            got, want = broadcast(x, shape), np.broadcast_to(x, shape)
            assert got.shape == want.shape and got.dtype == x.dtype
            np.testing.assert_array_equal(got, want)
            assert not got.flags.writeable
            checked += 1
    assert checked > 1000


def test_one_value_of_a_larger_array_repeats_that_value():
    x = np.arange(10.0)[::3][2:3]  # the 6, a strided view of size 1
    np.testing.assert_array_equal(broadcast(x, (2, 2)), np.full((2, 2), 6.0))
    np.testing.assert_array_equal(broadcast(np.zeros((0, 3)), (2, 0, 3)), np.zeros((2, 0, 3)))


def test_the_broadcast_node_gives_the_view():
    x = mx.array(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(mx.broadcast_to(x, (2, 3))), [[0, 1, 2]] * 2)
    np.testing.assert_array_equal(np.asarray(mx.broadcast_to(mx.array(2.5), (2,))), [2.5, 2.5])


def test_small_scaled_adds_are_numpys_two_calls(monkeypatch):
    calls = []
    monkeypatch.setattr(blas, "axpy", lambda *a: calls.append("axpy") or False)
    mul, sub = mx.multiply(mx.ones(1), 1).primitive, mx.subtract(mx.ones(1), 1).primitive
    rng = np.random.default_rng(1)
    for n in (10, cpu_fused.MIN_AXPY - 1, cpu_fused.MIN_AXPY):
        p = FusedElementwise(((mul, (0, 1), mx.float32), (sub, (2, 3), mx.float32)), (n,))
        s = np.float32(0.013).reshape(())
        g, w = rng.standard_normal((2, n)).astype(np.float32)
        got = cpu_fused.fused_elementwise(p, s, g, w)
        if n < cpu_fused.MIN_AXPY:
            np.testing.assert_array_equal(got, w - s * g)  # rounded twice, as unfused
    assert calls == (["axpy"] if blas.available() else [])
