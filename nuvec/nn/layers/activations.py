"""Activation functions, as `mlx.nn`'s: elementwise unless an `axis` is named, results of the
input's shape. Each has a layer form in `activation_layers.py`."""

from __future__ import annotations

import math


import nuvec as mx
from nuvec.nn.layers.base import check_even_axis, input_array, real_or_array

__all__ = [
    "sigmoid", "relu", "relu2", "relu6", "leaky_relu", "log_softmax", "elu", "softmax",
    "softplus", "softsign", "softshrink", "celu", "silu", "log_sigmoid", "gelu", "gelu_approx",
    "gelu_fast_approx", "glu", "step", "selu", "prelu", "mish", "hardswish", "hard_tanh",
    "hard_shrink", "softmin", "tanh",
]


def sigmoid(x: mx.array) -> mx.array:
    """The logistic sigmoid `1 / (1 + exp(-x))`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.sigmoid(mx.array([0.0])).tolist()
        [0.5]
    """
    x = input_array(x, "sigmoid")
    return mx.sigmoid(x)


def relu(x: mx.array) -> mx.array:
    """The rectified linear unit `max(x, 0)`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.relu(mx.array([-1.0, 2.0])).tolist()
        [0.0, 2.0]
    """
    x = input_array(x, "relu")
    return mx.maximum(x, 0)


def relu2(x: mx.array) -> mx.array:
    """The squared ReLU `max(x, 0) ** 2`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.relu2(mx.array([-1.0, 2.0])).tolist()
        [0.0, 4.0]
    """
    x = input_array(x, "relu2")
    return mx.square(mx.maximum(x, 0))


def relu6(x: mx.array) -> mx.array:
    """ReLU capped at 6: `min(max(x, 0), 6)`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.relu6(mx.array([-1.0, 7.0])).tolist()
        [0.0, 6.0]
    """
    x = input_array(x, "relu6")
    return mx.minimum(mx.maximum(x, 0), 6.0)


def leaky_relu(x: mx.array, negative_slope: float = 0.01) -> mx.array:
    """The leaky ReLU `max(negative_slope * x, x)`.

    Args:
        x: the input array.
        negative_slope: as in the formula above (a number or an array).

    Returns:
        An array of the input's shape.

    Raises:
        TypeError: if `negative_slope` is not a real number or an array.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.leaky_relu(mx.array([-2.0, 1.0]), 0.5).tolist()
        [-1.0, 1.0]
    """
    x = input_array(x, "leaky_relu")
    negative_slope = real_or_array(negative_slope, "leaky_relu", "negative_slope")
    return mx.maximum(negative_slope * x, x)


def log_softmax(x: mx.array, axis: int = -1) -> mx.array:
    """The log of the softmax along `axis`: `x - logsumexp(x)`.

    Args:
        x: the input array.
        axis: as in the formula above.

    Returns:
        An array of the input's shape.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.log_softmax(mx.array([0.0, 0.0])).tolist()
        [-0.6931..., -0.6931...]
    """
    x = input_array(x, "log_softmax")
    return x - mx.logsumexp(x, axis=axis, keepdims=True)


def elu(x: mx.array, alpha: float = 1.0) -> mx.array:
    """The exponential linear unit: `x` if `x > 0` else `alpha * (exp(x) - 1)`.

    Args:
        x: the input array.
        alpha: as in the formula above.

    Returns:
        An array of the input's shape.

    Raises:
        TypeError: if `alpha` is not a real number or an array.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.elu(mx.array([0.0, 1.0])).tolist()
        [0.0, 1.0]
    """
    x = input_array(x, "elu")
    alpha = real_or_array(alpha, "elu", "alpha")
    return mx.where(x > 0, x, alpha * (mx.exp(x) - 1))


def softmax(x: mx.array, axis: int = -1) -> mx.array:
    """The softmax along `axis`.

    Args:
        x: the input array.
        axis: as in the formula above.

    Returns:
        An array of the input's shape.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.softmax(mx.array([0.0, 0.0])).tolist()
        [0.5, 0.5]
    """
    x = input_array(x, "softmax")
    return mx.softmax(x, axis=axis)


def softplus(x: mx.array) -> mx.array:
    """The softplus `log(1 + exp(x))`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.softplus(mx.array([0.0])).tolist()
        [0.6931...]
    """
    x = input_array(x, "softplus")
    return mx.logaddexp(x, 0)


def softsign(x: mx.array) -> mx.array:
    """The softsign `x / (1 + |x|)`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.softsign(mx.array([1.0])).tolist()
        [0.5]
    """
    x = input_array(x, "softsign")
    return mx.divide(x, 1 + mx.abs(x))


def softshrink(x: mx.array, lambd: float = 0.5) -> mx.array:
    """Soft shrinkage: `x - sign(x) * lambd` where `|x| > lambd`, else 0.

    Args:
        x: the input array.
        lambd: as in the formula above.

    Returns:
        An array of the input's shape.

    Raises:
        TypeError: if `lambd` is not a real number or an array.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.softshrink(mx.array([1.0, 0.2])).tolist()
        [0.5, 0.0]
    """
    x = input_array(x, "softshrink")
    lambd = real_or_array(lambd, "softshrink", "lambd")
    return mx.where(mx.abs(x) > lambd, x - mx.sign(x) * lambd, 0)


def celu(x: mx.array, alpha: float = 1.0) -> mx.array:
    """The continuously differentiable ELU `max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1)`.

    Args:
        x: the input array.
        alpha: as in the formula above.

    Returns:
        An array of the input's shape.

    Raises:
        TypeError: if `alpha` is not a real number or an array.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.celu(mx.array([0.0, 1.0])).tolist()
        [0.0, 1.0]
    """
    x = input_array(x, "celu")
    alpha = real_or_array(alpha, "celu", "alpha")
    return mx.maximum(x, 0.0) + alpha * (mx.exp(mx.minimum(x, 0.0) / alpha) - 1)


def silu(x: mx.array) -> mx.array:
    """The sigmoid linear unit (swish) `x * sigmoid(x)`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.silu(mx.array([0.0])).tolist()
        [0.0]
    """
    x = input_array(x, "silu")
    return x * mx.sigmoid(x)


def log_sigmoid(x: mx.array) -> mx.array:
    """The log of the sigmoid: `-softplus(-x)`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.log_sigmoid(mx.array([0.0])).tolist()
        [-0.6931...]
    """
    x = input_array(x, "log_sigmoid")
    return -softplus(-x)


def gelu(x: mx.array) -> mx.array:
    """The Gaussian error linear unit `x * Phi(x)` (exact, with `erf`).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.gelu(mx.array([0.0])).tolist()
        [0.0]
    """
    x = input_array(x, "gelu")
    return x * (1 + mx.erf(x / math.sqrt(2))) / 2


def gelu_approx(x: mx.array) -> mx.array:
    """GELU's tanh approximation `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.gelu_approx(mx.array([0.0])).tolist()
        [0.0]
    """
    x = input_array(x, "gelu_approx")
    return 0.5 * x * (1 + mx.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def gelu_fast_approx(x: mx.array) -> mx.array:
    """GELU's sigmoid approximation `x * sigmoid(1.702 x)`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.gelu_fast_approx(mx.array([0.0])).tolist()
        [0.0]
    """
    x = input_array(x, "gelu_fast_approx")
    return x * mx.sigmoid(1.702 * x)


def glu(x: mx.array, axis: int = -1) -> mx.array:
    """The gated linear unit: `a * sigmoid(b)` for the two halves `a, b` of `x` along `axis`.

    Args:
        x: the input array.
        axis: as in the formula above.

    Returns:
        An array of the input's shape (halved along `axis`).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.glu(mx.array([2.0, 0.0])).tolist()
        [1.0]
    """
    x = input_array(x, "glu")
    check_even_axis(x, axis, "glu")
    a, b = mx.split(x, 2, axis=axis)
    return a * mx.sigmoid(b)


def step(x: mx.array, threshold: float = 0.0) -> mx.array:
    """The binary step: 1 where `x >= threshold`, else 0.

    Args:
        x: the input array.
        threshold: as in the formula above.

    Returns:
        An array of the input's shape.

    Raises:
        TypeError: if `threshold` is not a real number or an array.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.step(mx.array([-1.0, 1.0])).tolist()
        [0, 1]
    """
    x = input_array(x, "step")
    threshold = real_or_array(threshold, "step", "threshold")
    return mx.where(x >= threshold, 1, 0)


def selu(x: mx.array) -> mx.array:
    """The scaled ELU `1.0507 * elu(x, 1.67326)`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.selu(mx.array([0.0])).tolist()
        [0.0]
    """
    x = input_array(x, "selu")
    return elu(x, 1.67326) * 1.0507


def prelu(x: mx.array, alpha) -> mx.array:
    """The parametric ReLU `max(x, 0) + alpha * min(x, 0)`.

    Args:
        x: the input array.
        alpha: the slope(s) of the negative part (broadcast against `x`).

    Returns:
        An array of the input's shape.

    Raises:
        TypeError: if `alpha` is not a real number or an array.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.prelu(mx.array([-2.0, 1.0]), mx.array([0.25])).tolist()
        [-0.5, 1.0]
    """
    x = input_array(x, "prelu")
    alpha = real_or_array(alpha, "prelu", "alpha")
    return mx.maximum(0, x) + alpha * mx.minimum(0, x)


def mish(x: mx.array) -> mx.array:
    """Mish: `x * tanh(softplus(x))`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.mish(mx.array([0.0])).tolist()
        [0.0]
    """
    x = input_array(x, "mish")
    return x * mx.tanh(softplus(x))


def hardswish(x: mx.array) -> mx.array:
    """The hard swish `x * min(max(x + 3, 0), 6) / 6`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.hardswish(mx.array([3.0])).tolist()
        [3.0]
    """
    x = input_array(x, "hardswish")
    return x * mx.minimum(mx.maximum(x + 3, 0), 6) / 6


def hard_tanh(x: mx.array, min_val: float = -1.0, max_val: float = 1.0) -> mx.array:
    """The hard tanh: `x` clipped to [`min_val`, `max_val`].

    Args:
        x: the input array.
        min_val: as in the formula above.
        max_val: as in the formula above.

    Returns:
        An array of the input's shape.

    Raises:
        TypeError: if `min_val` or `max_val` is not a real number or an array.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.hard_tanh(mx.array([-2.0, 0.5])).tolist()
        [-1.0, 0.5]
    """
    x = input_array(x, "hard_tanh")
    min_val = real_or_array(min_val, "hard_tanh", "min_val")
    max_val = real_or_array(max_val, "hard_tanh", "max_val")
    return mx.minimum(mx.maximum(x, min_val), max_val)


def hard_shrink(x: mx.array, lambd: float = 0.5) -> mx.array:
    """Hard shrinkage: `x` where `|x| > lambd`, else 0.

    Args:
        x: the input array.
        lambd: as in the formula above.

    Returns:
        An array of the input's shape.

    Raises:
        TypeError: if `lambd` is not a real number or an array.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.hard_shrink(mx.array([1.0, 0.2])).tolist()
        [1.0, 0.0]
    """
    x = input_array(x, "hard_shrink")
    lambd = real_or_array(lambd, "hard_shrink", "lambd")
    return mx.where(mx.abs(x) > lambd, x, 0)


def softmin(x: mx.array, axis: int = -1) -> mx.array:
    """The softmin `softmax(-x)` along `axis`.

    Args:
        x: the input array.
        axis: as in the formula above.

    Returns:
        An array of the input's shape.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.softmin(mx.array([0.0, 0.0])).tolist()
        [0.5, 0.5]
    """
    x = input_array(x, "softmin")
    return mx.softmax(-x, axis=axis)


def tanh(x: mx.array) -> mx.array:
    """The hyperbolic tangent.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.tanh(mx.array([0.0])).tolist()
        [0.0]
    """
    x = input_array(x, "tanh")
    return mx.tanh(x)
