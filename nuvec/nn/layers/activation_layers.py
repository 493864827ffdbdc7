"""Activation layers, as `mlx.nn`: each calls the function of `activations.py`."""

from __future__ import annotations



import nuvec as mx
from nuvec.nn.layers.activations import (
    celu, elu, gelu, gelu_approx, gelu_fast_approx, glu, hard_shrink, hard_tanh, hardswish,
    leaky_relu, log_sigmoid, log_softmax, mish, prelu, relu, relu2, relu6, selu, sigmoid, silu,
    softmax, softmin, softplus, softshrink, softsign, step, tanh,
)
from nuvec.nn.module import Module

__all__ = [
    "CELU", "ELU", "GELU", "GLU", "HardShrink", "HardTanh", "Hardswish", "LeakyReLU",
    "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "ReLU", "ReLU2", "ReLU6", "SELU", "SiLU",
    "Sigmoid", "Softmax", "Softmin", "Softplus", "Softshrink", "Softsign", "Step", "Tanh",
]


class Sigmoid(Module):
    """The layer form of `sigmoid`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Sigmoid()(mx.zeros((2,))).shape
        (2,)
    """

    def __call__(self, x: mx.array) -> mx.array:
        return sigmoid(x)


class ReLU(Module):
    """The layer form of `relu`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.ReLU()(mx.zeros((2,))).shape
        (2,)
    """

    def __call__(self, x: mx.array) -> mx.array:
        return relu(x)


class ReLU2(Module):
    """The layer form of `relu2`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.ReLU2()(mx.zeros((2,))).shape
        (2,)
    """

    def __call__(self, x: mx.array) -> mx.array:
        return relu2(x)


class ReLU6(Module):
    """The layer form of `relu6`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.ReLU6()(mx.zeros((2,))).shape
        (2,)
    """

    def __call__(self, x: mx.array) -> mx.array:
        return relu6(x)


class LeakyReLU(Module):
    """The layer form of `leaky_relu` (`negative_slope` as there).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.LeakyReLU()(mx.zeros((2,))).shape
        (2,)
    """

    def __init__(self, negative_slope: float = 1e-2) -> None:
        super().__init__()
        self._negative_slope = negative_slope

    def __call__(self, x: mx.array) -> mx.array:
        return leaky_relu(x, self._negative_slope)


class LogSoftmax(Module):
    """The layer form of `log_softmax`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.LogSoftmax()(mx.zeros((2,))).shape
        (2,)
    """

    def __call__(self, x: mx.array) -> mx.array:
        return log_softmax(x)


class ELU(Module):
    """The layer form of `elu` (`alpha` as there).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.ELU()(mx.zeros((2,))).shape
        (2,)
    """

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self._alpha = alpha

    def __call__(self, x: mx.array) -> mx.array:
        return elu(x, self._alpha)


class Softmax(Module):
    """The layer form of `softmax`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Softmax()(mx.zeros((2,))).shape
        (2,)
    """

    def __call__(self, x: mx.array) -> mx.array:
        return softmax(x)


class Softplus(Module):
    """The layer form of `softplus`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Softplus()(mx.zeros((2,))).shape
        (2,)
    """

    def __call__(self, x: mx.array) -> mx.array:
        return softplus(x)


class Softsign(Module):
    """The layer form of `softsign`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Softsign()(mx.zeros((2,))).shape
        (2,)
    """

    def __call__(self, x: mx.array) -> mx.array:
        return softsign(x)


class Softshrink(Module):
    """The layer form of `softshrink` (`lambd` as there).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Softshrink()(mx.zeros((2,))).shape
        (2,)
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self._lambd = lambd

    def __call__(self, x: mx.array) -> mx.array:
        return softshrink(x, self._lambd)


class CELU(Module):
    """The layer form of `celu` (`alpha` as there).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.CELU()(mx.zeros((2,))).shape
        (2,)
    """

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self._alpha = alpha

    def __call__(self, x: mx.array) -> mx.array:
        return celu(x, self._alpha)


class SiLU(Module):
    """The layer form of `silu`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.SiLU()(mx.zeros((2,))).shape
        (2,)
    """

    def __call__(self, x: mx.array) -> mx.array:
        return silu(x)


class LogSigmoid(Module):
    """The layer form of `log_sigmoid`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.LogSigmoid()(mx.zeros((2,))).shape
        (2,)
    """

    def __call__(self, x: mx.array) -> mx.array:
        return log_sigmoid(x)


class GLU(Module):
    """The layer form of `glu` (`axis` as there).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.GLU()(mx.zeros((2,))).shape
        (1,)
    """

    def __init__(self, axis: int = -1) -> None:
        super().__init__()
        self._axis = axis

    def __call__(self, x: mx.array) -> mx.array:
        return glu(x, self._axis)


class Step(Module):
    """The layer form of `step` (`threshold` as there).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Step()(mx.zeros((2,))).shape
        (2,)
    """

    def __init__(self, threshold: float = 0.0) -> None:
        super().__init__()
        self._threshold = threshold

    def __call__(self, x: mx.array) -> mx.array:
        return step(x, self._threshold)


class SELU(Module):
    """The layer form of `selu`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.SELU()(mx.zeros((2,))).shape
        (2,)
    """

    def __call__(self, x: mx.array) -> mx.array:
        return selu(x)


class Mish(Module):
    """The layer form of `mish`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Mish()(mx.zeros((2,))).shape
        (2,)
    """

    def __call__(self, x: mx.array) -> mx.array:
        return mish(x)


class Hardswish(Module):
    """The layer form of `hardswish`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Hardswish()(mx.zeros((2,))).shape
        (2,)
    """

    def __call__(self, x: mx.array) -> mx.array:
        return hardswish(x)


class HardTanh(Module):
    """The layer form of `hard_tanh`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.HardTanh()(mx.zeros((2,))).shape
        (2,)
    """

    def __call__(self, x: mx.array) -> mx.array:
        return hard_tanh(x)


class HardShrink(Module):
    """The layer form of `hard_shrink`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.HardShrink()(mx.zeros((2,))).shape
        (2,)
    """

    def __call__(self, x: mx.array) -> mx.array:
        return hard_shrink(x)


class Softmin(Module):
    """The layer form of `softmin`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Softmin()(mx.zeros((2,))).shape
        (2,)
    """

    def __call__(self, x: mx.array) -> mx.array:
        return softmin(x)


class Tanh(Module):
    """The layer form of `tanh`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Tanh()(mx.zeros((2,))).shape
        (2,)
    """

    def __call__(self, x: mx.array) -> mx.array:
        return tanh(x)

class GELU(Module):
    """The layer form of `gelu`; `approx` chooses `"none"` (exact), `"precise"` or `"tanh"`
    (`gelu_approx`), or `"fast"` (`gelu_fast_approx`).

    Raises:
        ValueError: for another `approx`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.GELU(approx="tanh")(mx.zeros((2,))).tolist()
        [0.0, 0.0]
    """

    def __init__(self, approx: str = "none") -> None:
        super().__init__()
        functions = {"none": gelu, "precise": gelu_approx, "tanh": gelu_approx,
                     "fast": gelu_fast_approx}
        if approx not in functions:
            raise ValueError(f"GELU: the approximation should be in ['none', 'precise', "
                             f"'tanh', 'fast'] but '{approx}' was given")
        self._act = functions[approx]

    def __call__(self, x: mx.array) -> mx.array:
        return self._act(x)


class PReLU(Module):
    """The layer form of `prelu` with a learned `weight` of `num_parameters` slopes (`init`).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.PReLU()(mx.array([-4.0])).tolist()
        [-1.0]
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25) -> None:
        super().__init__()
        self.weight = mx.full((num_parameters,), init)

    def __call__(self, x: mx.array) -> mx.array:
        return prelu(x, self.weight)


