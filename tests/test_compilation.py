"""`compile`, `disable_compile`, `enable_compile`: compiled functions return what the function
returns, compose with the transforms, and update captured state as MLX's do."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest

import nuvec as mx
from nuvec.testing import assert_allclose


def test_compile_returns_the_function_outputs():
    def f(x, y):
        """Doc of f."""
        return mx.exp(x) * y, {"s": mx.sum(x)}

    g = mx.compile(f)
    x = np.array([0.0, 1.0, 2.0], dtype=np.float32)
    out, tree = g(mx.array(x), y=mx.array(2.0))
    assert_allclose(out, np.exp(x) * 2, dtype=mx.float32)
    assert_allclose(tree["s"], x.sum(), dtype=mx.float32)
    assert g.__name__ == "f" and g.__doc__ == "Doc of f."


def test_compile_as_decorator_with_shapeless():
    @partial(mx.compile, shapeless=True)
    def gelu(x):
        return x * (1 + mx.erf(x / np.sqrt(2))) / 2

    for n in (1, 5):
        x = np.linspace(-2, 2, n).astype(np.float32)
        want = x * (1 + np.vectorize(math.erf)(x / np.sqrt(2))) / 2
        assert_allclose(gelu(mx.array(x)), want, dtype=mx.float32)


def test_compiled_function_composes_with_grad_and_vmap():
    f = mx.compile(lambda x: mx.sum(mx.sin(x) ** 2))
    x = np.array([0.1, 0.7, -1.3], dtype=np.float32)
    assert_allclose(mx.grad(f)(mx.array(x)), 2 * np.sin(x) * np.cos(x), dtype=mx.float32)
    g = mx.vmap(mx.compile(lambda r: r * 2))
    assert_allclose(g(mx.array(x.reshape(3, 1))), x.reshape(3, 1) * 2, dtype=mx.float32)


def test_compile_with_captured_state_updates_it():
    state = [mx.array(0.0)]

    @partial(mx.compile, inputs=state, outputs=state)
    def step(x):
        state[0] = state[0] + x
        return state[0] * 2

    assert step(mx.array(1.0)).item() == 2.0
    assert step(mx.array(2.0)).item() == 6.0
    assert state[0].item() == 3.0


def test_compile_with_the_random_state_draws_fresh_numbers():
    f = mx.compile(lambda: mx.random.uniform(shape=(4,)), inputs=mx.random.state,
                   outputs=mx.random.state)
    mx.random.seed(7)
    a, b = f().tolist(), f().tolist()
    mx.random.seed(7)
    assert a != b and f().tolist() == a


def test_disable_and_enable_compile_keep_results():
    f = mx.compile(lambda x: x + 1)
    mx.disable_compile()
    try:
        assert f(mx.array(1)).item() == 2
    finally:
        mx.enable_compile()
    assert f(mx.array(1)).item() == 2


@pytest.mark.parametrize(
    "args, message",
    [((3,), "^compile: fun must be callable, got int"),
     ((lambda x: x, None, None, "yes"), "^compile: shapeless must be a bool, got str")],
    ids=["not-callable", "shapeless-str"],
)
def test_compile_rejects(args, message):
    with pytest.raises(TypeError, match=message):
        mx.compile(*args)
