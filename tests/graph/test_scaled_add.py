"""Small chains the CPU fuses: `c ± s * x` with `s` one value (an optimizer's update) runs as
one BLAS `axpy`, from `SMALL_CHAIN_ELEMENTS` elements, into the old value's buffer where the
evaluator may give it up. Values are within an ulp of the exact result (the BLAS rounds most
elements once, some twice: see `nuvec.backends.numpy.blas`); anything else stays on the per-node
path."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
import nuvec.nn as nn
import nuvec.optimizers as optim
from nuvec.backends.numpy import blas
from nuvec.backends.numpy import mkl
from nuvec.graph import eager
from nuvec.graph.memory import counters

pytestmark = pytest.mark.skipif(not blas.available(), reason="no OpenBLAS with known names")

N = eager.SMALL_CHAIN_ELEMENTS
SHAPE = (N // 256, 256)


def _data(dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(SHAPE).astype(dtype), rng.standard_normal(SHAPE).astype(dtype))


def _rounded_once(c, s, x, sign):
    wide = np.longdouble
    return (c.astype(wide) + sign * wide(s) * x.astype(wide)).astype(c.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("form", ["c - s*x", "c + s*x", "s*x + c", "x*s + c"])
def test_scaled_adds_are_one_rounding_of_the_exact_value(plans, dtype, form):
    c_np, x_np = _data(dtype)
    s = dtype(0.013)
    kind = mx.float64 if dtype == np.float64 else mx.float32
    c, x = mx.array(c_np, dtype=kind), mx.array(x_np, dtype=kind)
    y = {"c - s*x": lambda: c - s * x, "c + s*x": lambda: c + s * x,
         "s*x + c": lambda: s * x + c, "x*s + c": lambda: x * s + c}[form]()
    mx.eval(y)
    sign = -1.0 if form.startswith("c -") else 1.0
    got, once = np.asarray(y), _rounded_once(c_np, s, x_np, sign)
    if mkl.available():  # MKL's axpy may round twice (seen on an AVX2 AMD machine), as NumPy
        twice = c_np + np.asarray(sign, dtype) * (s * x_np)
        near = lambda ref: np.abs(got - ref) <= np.spacing(np.abs(ref))  # noqa: E731
        assert (near(once) | near(twice)).all()
    else:
        np.testing.assert_array_max_ulp(got, once, maxulp=1)
    assert plans == [1]


def test_the_old_value_is_updated_in_its_own_buffer(plans):
    c_np, x_np = _data()
    c, x = mx.array(c_np), mx.array(x_np)
    c = c + 1  # a buffer the evaluator owns
    mx.eval(c)
    active = counters.active
    y = c - 0.5 * x
    del c
    mx.eval(y)
    assert counters.active - active < 64  # no new buffer (the constant's few bytes aside)
    np.testing.assert_array_max_ulp(np.asarray(y), _rounded_once(c_np + 1, 0.5, x_np, -1.0),
                                    maxulp=1)


def test_a_given_up_gradient_takes_the_update(monkeypatch):
    """When the buffer given up is the other factor's (an optimizer's gradient, made by a
    product in a compiled step), the update is written there in one `axpby` pass:
    `g = c - s * g`. (The gradient here is a sort's: a matrix product read by the update
    alone is absorbed, see tests/test_compile_fusion.py's `ProductUpdate` tests.)"""
    calls = []
    axpby = blas.axpby
    monkeypatch.setattr(blas, "axpby", lambda *args: calls.append(1) or axpby(*args))
    c_np, x_np = _data()
    c, x = mx.array(c_np), mx.array(x_np)
    mx.eval(c, x)
    step = mx.compile(lambda c, x: c - 0.5 * mx.sort(x, axis=-1))
    y = step(c, x)
    mx.eval(y)
    assert calls == [1]
    np.testing.assert_array_max_ulp(np.asarray(y), _rounded_once(c_np, 0.5, np.sort(x_np), -1.0),
                                    maxulp=1)
    np.testing.assert_array_equal(np.asarray(c), c_np)  # the old value is left as it was


def test_when_both_buffers_are_given_up_the_old_value_takes_the_update(monkeypatch):
    """A compiled step whose old value is dropped after the call (a training step's weights):
    the evaluator gives up the old value's buffer rather than the gradient's, and the update
    runs as `axpy` in place (OpenBLAS's `axpby` is slower)."""
    calls = []
    for name in ("axpy", "axpby"):
        original = getattr(blas, name)
        monkeypatch.setattr(blas, name, lambda *args, name=name, original=original:
                            calls.append(name) or original(*args))
    c_np, x_np = _data()
    x = mx.array(x_np)
    c = mx.array(c_np) + 1  # a buffer the evaluator owns
    mx.eval(c, x)
    step = mx.compile(lambda c, x: c - 0.5 * mx.sort(x, axis=-1))  # (a sort's gradient, as above)
    y = step(c, x)
    del c
    mx.eval(y)
    assert calls == ["axpy"]
    np.testing.assert_array_max_ulp(np.asarray(y),
                                    _rounded_once(c_np + 1, 0.5, np.sort(x_np), -1.0), maxulp=1)


def test_a_held_old_value_is_left_as_it_was(plans):
    c_np, x_np = _data()
    c, x = mx.array(c_np) + 1, mx.array(x_np)
    mx.eval(c)
    y = c - 0.5 * x
    mx.eval(y)
    np.testing.assert_array_equal(np.asarray(c), c_np + np.float32(1))
    assert plans == [1]


def test_a_held_product_is_computed_and_not_fused(plans):
    c_np, x_np = _data()
    c, x = mx.array(c_np), mx.array(x_np)
    p = 0.5 * x
    y = c - p
    mx.eval(y)
    np.testing.assert_array_equal(np.asarray(p), np.float32(0.5) * x_np)
    np.testing.assert_array_equal(np.asarray(y), c_np - np.float32(0.5) * x_np)  # per node
    assert plans == [0]


@pytest.mark.parametrize("build", [
    lambda c, x: x * 0.5 - c,  # the product first: not the form axpy computes
    lambda c, x: c - x * c,  # no factor is one value
    lambda c, x: c - 0.5 * x * x,  # a product of three
])
def test_other_small_chains_stay_on_the_per_node_path(plans, build):
    c_np, x_np = _data()
    c, x = mx.array(c_np), mx.array(x_np)
    y = build(c, x)
    mx.eval(y)
    with eager_off():
        expected = np.asarray(build(mx.array(c_np), mx.array(x_np)))
    np.testing.assert_array_equal(np.asarray(y), expected)
    assert sum(plans) == 0


def test_half_types_and_small_arrays_are_not_fused(plans):
    for shape, dtype in ((SHAPE, np.float16), ((N // 2,), np.float32)):
        c, x = mx.array(np.ones(shape, dtype)), mx.array(np.ones(shape, dtype))
        mx.eval(c - 0.5 * x)
    assert sum(plans) == 0


def test_a_blas_that_cannot_compute_falls_back_to_numpy(monkeypatch, plans):
    monkeypatch.setattr(blas, "axpy", lambda alpha, x, y: False)
    c_np, x_np = _data()
    y = mx.array(c_np) - 0.5 * mx.array(x_np)
    mx.eval(y)
    np.testing.assert_array_equal(np.asarray(y), c_np - np.float32(0.5) * x_np)  # two roundings


def test_sgd_steps_match_numpy(plans):
    rng = np.random.default_rng(3)
    w_np = rng.standard_normal((256, 512)).astype(np.float32) * 0.05
    x_np = rng.standard_normal((64, 512)).astype(np.float32)
    layer = nn.Linear(512, 256)
    layer.weight = mx.array(w_np)
    layer.bias = mx.zeros((256,))
    optimizer = optim.SGD(learning_rate=0.1)
    loss_and_grad = nn.value_and_grad(layer, lambda m, x: mx.mean(m(x) ** 2))
    x = mx.array(x_np)
    w = w_np.astype(np.float64)
    for _ in range(3):
        _, grads = loss_and_grad(layer, x)
        optimizer.update(layer, grads)
        mx.eval(layer.parameters())
        out = x_np.astype(np.float64) @ w.T
        w = w - 0.1 * (2 * out.T @ x_np.astype(np.float64)) / out.size
    np.testing.assert_allclose(np.asarray(layer.weight), w, rtol=1e-4, atol=1e-5)
    assert plans and all(n == 1 for n in plans)  # each step's weight update, fused


class eager_off:
    """Eager fusion's small chains off (the per-node path) inside the block."""

    def __enter__(self):
        self.saved = tuple(eager._small)
        eager.set_small_chains((), None, None)

    def __exit__(self, *exc):
        eager.set_small_chains(*self.saved)


def test_the_kernel_takes_the_blas_path_only_for_its_form():
    mul, sub = mx.multiply(mx.ones(1), 1).primitive, mx.subtract(mx.ones(1), 1).primitive
    add = mx.add(mx.ones(1), 1).primitive
    f32 = mx.float32
    from nuvec.fast.fused import FusedElementwise, is_scaled_add

    assert is_scaled_add(FusedElementwise(((mul, (0, 1), f32), (add, (3, 2), f32)), (4,)))
    assert not is_scaled_add(FusedElementwise(((mul, (0, 1), f32), (sub, (3, 2), f32)),
                                                        (4,)))
    assert not is_scaled_add(FusedElementwise(((mul, (0, 0), f32), (add, (1, 2), f32)),
                                                        (4,)))
    assert not is_scaled_add(FusedElementwise(((mul, (0, 1), mx.float16),
                                                         (add, (2, 3), mx.float16)), (4,)))
