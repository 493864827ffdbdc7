"""Every activation of `nuvec.nn` (function and layer) against its float64 formula, with
finite-difference gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy_free import erf

import nuvec as mx
import nuvec.nn as nn
from nuvec.testing import check_grads


def _softplus(x):
    return np.logaddexp(x, 0)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _elu(x, a=1.0):
    return np.where(x > 0, x, a * (np.exp(x) - 1))


# name, reference, kwargs, layer class, layer kwargs
CASES = [
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), {}, nn.Sigmoid, {}),
    ("relu", lambda x: np.maximum(x, 0), {}, nn.ReLU, {}),
    ("relu2", lambda x: np.maximum(x, 0) ** 2, {}, nn.ReLU2, {}),
    ("relu6", lambda x: np.clip(x, 0, 6), {}, nn.ReLU6, {}),
    ("leaky_relu", lambda x: np.where(x > 0, x, 0.2 * x), {"negative_slope": 0.2},
     nn.LeakyReLU, {"negative_slope": 0.2}),
    ("log_softmax", lambda x: np.log(_softmax(x)), {}, nn.LogSoftmax, {}),
    ("elu", lambda x: _elu(x, 0.5), {"alpha": 0.5}, nn.ELU, {"alpha": 0.5}),
    ("softmax", _softmax, {}, nn.Softmax, {}),
    ("softplus", _softplus, {}, nn.Softplus, {}),
    ("softsign", lambda x: x / (1 + np.abs(x)), {}, nn.Softsign, {}),
    ("softshrink", lambda x: np.where(np.abs(x) > 0.3, x - np.sign(x) * 0.3, 0),
     {"lambd": 0.3}, nn.Softshrink, {"lambd": 0.3}),
    ("celu", lambda x: np.maximum(x, 0) + 0.7 * (np.exp(np.minimum(x, 0) / 0.7) - 1),
     {"alpha": 0.7}, nn.CELU, {"alpha": 0.7}),
    ("silu", lambda x: x / (1 + np.exp(-x)), {}, nn.SiLU, {}),
    ("log_sigmoid", lambda x: -_softplus(-x), {}, nn.LogSigmoid, {}),
    ("gelu", lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))), {}, nn.GELU, {}),
    ("gelu_approx",
     lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))), {},
     nn.GELU, {"approx": "tanh"}),
    ("gelu_fast_approx", lambda x: x / (1 + np.exp(-1.702 * x)), {}, nn.GELU, {"approx": "fast"}),
    ("glu", lambda x: x[..., :3] / (1 + np.exp(-x[..., 3:])), {}, nn.GLU, {}),
    ("step", lambda x: (x >= 0.1).astype(np.int64), {"threshold": 0.1}, nn.Step,
     {"threshold": 0.1}),
    ("selu", lambda x: 1.0507 * _elu(x, 1.67326), {}, nn.SELU, {}),
    ("mish", lambda x: x * np.tanh(_softplus(x)), {}, nn.Mish, {}),
    ("hardswish", lambda x: x * np.clip(x + 3, 0, 6) / 6, {}, nn.Hardswish, {}),
    ("hard_tanh", lambda x: np.clip(x, -1, 1), {}, nn.HardTanh, {}),
    ("hard_shrink", lambda x: np.where(np.abs(x) > 1.0, x, 0), {"lambd": 1.0}, nn.HardShrink,
     {"lambd": 1.0}),
    ("softmin", lambda x: _softmax(-x), {}, nn.Softmin, {}),
    ("tanh", np.tanh, {}, nn.Tanh, {}),
]


def _data() -> np.ndarray:
    # away from the kinks (0, +-0.3, +-0.5, +-1, +-3, 6) so finite differences are smooth
    x = np.random.default_rng(0).uniform(-4, 7, size=(4, 6))
    for kink in (0, 0.1, 0.3, 0.5, 1, 3, 6):
        for sign in (1, -1):
            near = np.abs(x - sign * kink) < 0.05
            x[near] += 0.1
    return x


@pytest.mark.parametrize("name,ref,kwargs,cls,cls_kwargs", CASES, ids=[c[0] for c in CASES])
def test_activation(name, ref, kwargs, cls, cls_kwargs) -> None:
    xs = _data()
    x = mx.array(xs, mx.float64)
    fn = getattr(nn, name)
    expected = ref(xs)
    np.testing.assert_allclose(np.asarray(fn(x, **kwargs)), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(cls(**cls_kwargs)(x)), expected, rtol=1e-10,
                               atol=1e-12)
    if name != "step":
        check_grads(lambda a: fn(a, **kwargs), [x], rtol=1e-6, atol=1e-8)
    f32 = np.asarray(fn(mx.array(xs, mx.float32), **kwargs))
    np.testing.assert_allclose(f32, expected, rtol=1e-5, atol=1e-5)


def test_prelu_layer_and_function() -> None:
    xs = _data()
    alpha = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    x = mx.array(xs, mx.float64)
    expected = np.maximum(xs, 0) + alpha * np.minimum(xs, 0)
    np.testing.assert_allclose(np.asarray(nn.prelu(x, mx.array(alpha, mx.float64))), expected,
                               rtol=1e-12)
    layer = nn.PReLU(6, init=0.5)
    assert layer.weight.tolist() == [0.5] * 6
    layer.weight = mx.array(alpha, mx.float64)
    np.testing.assert_allclose(np.asarray(layer(x)), expected, rtol=1e-12)
    check_grads(lambda a, w: nn.prelu(a, w), [x, mx.array(alpha, mx.float64)], rtol=1e-6, atol=1e-8)


def test_step_is_one_at_the_threshold() -> None:
    assert nn.step(mx.array([-1.0, 0.0, 1.0])).tolist() == [0, 1, 1]  # x >= threshold, as MLX
    assert nn.Step(0.5)(mx.array([0.25, 0.5, 1.0])).tolist() == [0, 1, 1]


def test_gelu_rejects_unknown_approximation() -> None:
    with pytest.raises(ValueError, match="GELU: the approximation should be in "
                                         r"\['none', 'precise', 'tanh', 'fast'\] but 'erf'"):
        nn.GELU(approx="erf")


def test_axis_arguments() -> None:
    xs = _data()
    x = mx.array(xs, mx.float64)
    np.testing.assert_allclose(np.asarray(nn.softmax(x, axis=0)), _softmax(xs, 0), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(nn.log_softmax(x, axis=0)), np.log(_softmax(xs, 0)),
                               rtol=1e-10)
    np.testing.assert_allclose(np.asarray(nn.glu(x, axis=0)),
                               xs[:2] / (1 + np.exp(-xs[2:])), rtol=1e-12)


NON_ARRAYS = [None, "x", np.array(["a", "b"])]
CHECKED_FUNCTIONS = ["elu", "selu", "gelu", "gelu_approx", "leaky_relu", "hardswish", "step",
                     "log_sigmoid", "softmin", "relu", "celu", "mish", "glu"]


@pytest.mark.parametrize("value", NON_ARRAYS, ids=["None", "str", "numpy-str"])
@pytest.mark.parametrize("name", CHECKED_FUNCTIONS)
def test_activation_rejects_non_arrays(name, value) -> None:
    with pytest.raises(TypeError, match=f"^{name}: cannot convert "):
        getattr(nn, name)(value)


PARAMETERS = [  # (function, layer or None, parameter)
    ("leaky_relu", "LeakyReLU", "negative_slope"), ("elu", "ELU", "alpha"),
    ("celu", "CELU", "alpha"), ("softshrink", "Softshrink", "lambd"),
    ("hard_shrink", "HardShrink", "lambd"), ("step", "Step", "threshold"),
    ("hard_tanh", None, "min_val"), ("hard_tanh", None, "max_val"), ("prelu", None, "alpha"),
]


@pytest.mark.parametrize("value", ["a", None, [0.1]], ids=["str", "None", "list"])
@pytest.mark.parametrize("name, layer, parameter", PARAMETERS)
def test_activation_parameters_are_checked_at_the_call(name, layer, parameter, value) -> None:
    x = mx.array([-1.0, 0.5, 2.0])
    with pytest.raises(TypeError, match=f"^{name}: {parameter} must be a real number, got "):
        getattr(nn, name)(x, **{parameter: value})
    if layer is not None:
        with pytest.raises(TypeError, match=f"^{layer}: {parameter} must be a real number"):
            getattr(nn, layer)(value)


@pytest.mark.parametrize("name, layer, parameter", PARAMETERS)
def test_activation_parameters_may_be_arrays(name, layer, parameter) -> None:
    """As in MLX: an array parameter broadcasts against the input, elementwise."""
    x = mx.array([-1.0, 0.5, 2.0])
    values = [0.1, 0.2, 0.3] if parameter != "max_val" else [1.5, 2.5, 3.5]
    out = getattr(nn, name)(x, **{parameter: mx.array(values)})
    rows = [getattr(nn, name)(x[i:i + 1], **{parameter: v}) for i, v in enumerate(values)]
    assert out.tolist() == mx.concatenate(rows).tolist()
    if layer is not None:
        assert getattr(nn, layer)(mx.array(values))(x).tolist() == out.tolist()


def test_prelu_layer_checks_its_arguments() -> None:
    with pytest.raises(TypeError, match="^PReLU: init must be a real number, got 'a'"):
        nn.PReLU(init="a")
    with pytest.raises(TypeError, match="^PReLU: num_parameters must be an int, got 'a'"):
        nn.PReLU(num_parameters="a")
    assert nn.PReLU(init=mx.array(0.5))(mx.array([-2.0])).tolist() == [-1.0]


@pytest.mark.parametrize("name", ["elu", "selu", "gelu", "leaky_relu", "hardswish", "step",
                                  "log_sigmoid", "softmin"])
def test_activation_converts_lists(name) -> None:
    expected = getattr(nn, name)(mx.array([1.0, -2.0])).tolist()
    assert getattr(nn, name)([1.0, -2.0]).tolist() == expected


def test_glu_rejects_an_odd_axis() -> None:
    with pytest.raises(ValueError, match=r"^glu: the size of axis -1 must be even, got shape "
                                         r"\(2, 3\)"):
        nn.glu(mx.ones((2, 3)))
