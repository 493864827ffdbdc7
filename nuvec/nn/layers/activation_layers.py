"""Activation layers, as `mlx.nn`: each calls the function of `activations.py`."""

from __future__ import annotations


from typing import Callable

import nuvec as mx
from nuvec.nn.layers.activations import (
    celu, elu, gelu, gelu_approx, gelu_fast_approx, glu, hard_shrink, hard_tanh, hardswish,
    leaky_relu, log_sigmoid, log_softmax, mish, prelu, relu, relu2, relu6, selu,
    sigmoid, silu, softmax, softmin, softplus, softshrink, softsign, step, tanh,
)
from nuvec.nn.layers.base import check_even_axis, input_array, own_methods, real_or_array
from nuvec.nn.module import Module
from nuvec.ops.arguments import index_int

__all__ = [
    "CELU", "ELU", "GELU", "GLU", "HardShrink", "HardTanh", "Hardswish", "LeakyReLU",
    "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "ReLU", "ReLU2", "ReLU6", "SELU", "SiLU",
    "Sigmoid", "Softmax", "Softmin", "Softplus", "Softshrink", "Softsign", "Step", "Tanh",
]


class LeakyReLU(Module):
    """The layer form of `leaky_relu` (`negative_slope` as there).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.LeakyReLU()(mx.zeros((2,))).shape
        (2,)
    """

    def __init__(self, negative_slope: float = 1e-2) -> None:
        super().__init__()
        self._negative_slope = real_or_array(negative_slope, "LeakyReLU", "negative_slope")

    def __call__(self, x: mx.array) -> mx.array:
        return leaky_relu(x, self._negative_slope)


class ELU(Module):
    """The layer form of `elu` (`alpha` as there).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.ELU()(mx.zeros((2,))).shape
        (2,)
    """

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self._alpha = real_or_array(alpha, "ELU", "alpha")

    def __call__(self, x: mx.array) -> mx.array:
        return elu(x, self._alpha)


class Softshrink(Module):
    """The layer form of `softshrink` (`lambd` as there).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Softshrink()(mx.zeros((2,))).shape
        (2,)
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self._lambd = real_or_array(lambd, "Softshrink", "lambd")

    def __call__(self, x: mx.array) -> mx.array:
        return softshrink(x, self._lambd)


class HardShrink(Module):
    """The layer form of `hard_shrink` (`lambd` as there).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.HardShrink(lambd=1.0)(mx.array([2.0, 0.5])).tolist()
        [2.0, 0.0]
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self._lambd = real_or_array(lambd, "HardShrink", "lambd")

    def __call__(self, x: mx.array) -> mx.array:
        return hard_shrink(x, self._lambd)


class CELU(Module):
    """The layer form of `celu` (`alpha` as there).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.CELU()(mx.zeros((2,))).shape
        (2,)
    """

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self._alpha = real_or_array(alpha, "CELU", "alpha")

    def __call__(self, x: mx.array) -> mx.array:
        return celu(x, self._alpha)


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
        x = input_array(x, "GLU")
        check_even_axis(x, self._axis, "GLU")
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
        self._threshold = real_or_array(threshold, "Step", "threshold")

    def __call__(self, x: mx.array) -> mx.array:
        return step(x, self._threshold)


class GELU(Module):
    """The layer form of `gelu` and its approximations.

    The layer form of `gelu`; `approx` chooses `"none"` (exact), `"precise"` or `"tanh"`
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

    Raises:
        TypeError: if `num_parameters` is not an int, or `init` not a real number or an array.
        ValueError: if `num_parameters` is negative.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.PReLU()(mx.array([-4.0])).tolist()
        [-1.0]
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25) -> None:
        super().__init__()
        num_parameters = index_int(num_parameters, "PReLU", "num_parameters", low=0)
        self.weight = mx.full((num_parameters,), real_or_array(init, "PReLU", "init"))

    def __call__(self, x: mx.array) -> mx.array:
        return prelu(x, self.weight)


def _activation_layer(name: str, fn: Callable[[mx.array], mx.array]) -> type:
    """A parameterless layer class `name` whose `__call__` is `fn`."""
    doc = (f"The layer form of `{fn.__name__}`.\n\n    Example:\n"
           "        >>> import nuvec.nn as nn\n"
           f"        >>> nn.{name}()(mx.zeros((2,))).shape\n        (2,)\n    ")

    def __call__(self: Module, x: mx.array) -> mx.array:
        return fn(x)

    cls = type(name, (Module,), {"__call__": __call__, "__doc__": doc, "__module__": __name__,
                                 "__init__": Module.__init__})
    return own_methods(cls, "__init__", "__call__")


Sigmoid = _activation_layer("Sigmoid", sigmoid)
ReLU = _activation_layer("ReLU", relu)
ReLU2 = _activation_layer("ReLU2", relu2)
ReLU6 = _activation_layer("ReLU6", relu6)
LogSoftmax = _activation_layer("LogSoftmax", log_softmax)
Softmax = _activation_layer("Softmax", softmax)
Softplus = _activation_layer("Softplus", softplus)
Softsign = _activation_layer("Softsign", softsign)
SiLU = _activation_layer("SiLU", silu)
LogSigmoid = _activation_layer("LogSigmoid", log_sigmoid)
SELU = _activation_layer("SELU", selu)
Mish = _activation_layer("Mish", mish)
Hardswish = _activation_layer("Hardswish", hardswish)
HardTanh = _activation_layer("HardTanh", hard_tanh)
Softmin = _activation_layer("Softmin", softmin)
Tanh = _activation_layer("Tanh", tanh)
