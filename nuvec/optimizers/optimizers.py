"""The first-order update rules of `mlx.optimizers`: SGD, RMSprop, Adagrad, AdaDelta, Adam,
AdamW, Adamax and Lion. Hyperparameters may be numbers or schedules where MLX allows it
(`learning_rate`); formulas are in each class's docstring.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, Union

import nuvec as mx
from nuvec.optimizers.base import Optimizer, check_pair, check_real

__all__ = ["SGD", "RMSprop", "Adagrad", "AdaDelta", "Adam", "AdamW", "Adamax", "Lion"]

# A learning rate: a number, or a schedule (a function of the step count returning an array).
LearningRate = Union[float, Callable[[mx.array], mx.array]]



def _check_non_negative(name: str, what: str, value: float) -> None:
    check_real(name, what, value, low=0)


def _zeros(state: dict[str, Any], parameter: mx.array, *names: str) -> None:
    for name in names:
        state[name] = mx.zeros_like(parameter)


def _rate(lr: mx.array, dtype: mx.Dtype) -> Any:
    """A learning rate that only multiplies arrays of `dtype`: as a Python number when it is
    computed already in host memory (a weak scalar, which is `dtype` in the product, as the
    cast array is, and records no broadcast node), else cast to `dtype` (a schedule's value, a
    traced state, a GPU array: reading it would wait for the stream)."""
    if lr.ndim == 0 and lr.is_evaluated and lr.stream.device.type == mx.DeviceType.cpu:
        return lr.item()
    return lr.astype(dtype)


class SGD(Optimizer):
    """Stochastic gradient descent, with momentum, dampening, Nesterov and weight decay.

    Stochastic gradient descent with momentum:
    `v = momentum * v + (1 - dampening) * g`, `p = p - lr * (g + momentum * v if nesterov
    else v)`, with `g = grad + weight_decay * p`.

    Args:
        learning_rate: the step size (or a schedule).
        momentum: the momentum (0 disables it).
        weight_decay: the L2 penalty.
        dampening: the momentum dampening.
        nesterov: use Nesterov momentum.

    Raises:
        ValueError: for Nesterov momentum without momentum or with dampening.

    Example:
        >>> import nuvec.optimizers as optim
        >>> optim.SGD(0.5).apply_gradients({"w": mx.array([1.0])}, {"w": mx.array([1.0])})
        {'w': array([0.5], dtype=float32)}
    """

    def __init__(self, learning_rate: LearningRate, momentum: float = 0.0,
                 weight_decay: float = 0.0, dampening: float = 0.0, nesterov: bool = False) -> None:
        for what, value in (("momentum", momentum), ("weight_decay", weight_decay),
                            ("dampening", dampening)):
            check_real("SGD", what, value)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum requires a momentum and zero dampening, "
                             f"got momentum={momentum}, dampening={dampening}")
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum, self.weight_decay = momentum, weight_decay
        self.dampening, self.nesterov = dampening, nesterov

    def init_single(self, parameter: mx.array, state: dict[str, Any]) -> None:
        """Zero velocity `v`."""
        _zeros(state, parameter, "v")

    def apply_single(self, gradient: mx.array, parameter: mx.array,
                     state: dict[str, Any]) -> mx.array:
        """One SGD step."""
        if self.weight_decay != 0:
            gradient = gradient + self.weight_decay * parameter
        lr = _rate(self.learning_rate, gradient.dtype)
        if self.momentum <= 0:
            return parameter - lr * gradient
        v = self.momentum * state["v"]
        v = v + (1 - self.dampening) * gradient if self.dampening > 0 else v + gradient
        state["v"] = v
        update = gradient + self.momentum * v if self.nesterov else v
        return parameter - lr * update


class RMSprop(Optimizer):
    """RMSprop: `v = alpha * v + (1 - alpha) * g**2`, `p = p - lr * g / (sqrt(v) + eps)`.

    Example:
        >>> import nuvec.optimizers as optim
        >>> opt = optim.RMSprop(0.1)
        >>> opt.apply_gradients({"w": mx.array([1.0])}, {"w": mx.array([0.0])})["w"].tolist()
        [-0.99999...]
    """

    def __init__(self, learning_rate: LearningRate, alpha: float = 0.99, eps: float = 1e-8) -> None:
        super().__init__()
        _check_non_negative("RMSprop", "alpha", alpha)
        _check_non_negative("RMSprop", "epsilon", eps)
        self._maybe_schedule("learning_rate", learning_rate)
        self.alpha, self.eps = alpha, eps

    def init_single(self, parameter: mx.array, state: dict[str, Any]) -> None:
        """Zero mean square `v`."""
        _zeros(state, parameter, "v")

    def apply_single(self, gradient: mx.array, parameter: mx.array,
                     state: dict[str, Any]) -> mx.array:
        """One RMSprop step."""
        lr = self.learning_rate.astype(gradient.dtype)
        v = self.alpha * state["v"] + (1 - self.alpha) * mx.square(gradient)
        state["v"] = v
        return parameter - lr * gradient / (mx.sqrt(v) + self.eps)


class Adagrad(Optimizer):
    """Adagrad: `v = v + g**2`, `p = p - lr * g / (sqrt(v) + eps)`.

    Example:
        >>> import nuvec.optimizers as optim
        >>> opt = optim.Adagrad(0.1)
        >>> opt.apply_gradients({"w": mx.array([2.0])}, {"w": mx.array([0.0])})["w"].item()
        -0.1000...
    """

    def __init__(self, learning_rate: LearningRate, eps: float = 1e-8) -> None:
        super().__init__()
        _check_non_negative("Adagrad", "epsilon", eps)
        self._maybe_schedule("learning_rate", learning_rate)
        self.eps = eps

    def init_single(self, parameter: mx.array, state: dict[str, Any]) -> None:
        """Zero sum of squares `v`."""
        _zeros(state, parameter, "v")

    def apply_single(self, gradient: mx.array, parameter: mx.array,
                     state: dict[str, Any]) -> mx.array:
        """One Adagrad step."""
        lr = self.learning_rate.astype(gradient.dtype)
        v = state["v"] + mx.square(gradient)
        state["v"] = v
        return parameter - lr * gradient / (mx.sqrt(v) + self.eps)


class AdaDelta(Optimizer):
    """The AdaDelta optimizer.

    AdaDelta: `v = rho v + (1 - rho) g**2`, `d = sqrt(u + eps) / sqrt(v + eps) * g`,
    `u = rho u + (1 - rho) d**2`, `p = p - lr * d`.

    Example:
        >>> import nuvec.optimizers as optim
        >>> opt = optim.AdaDelta(1.0)
        >>> opt.apply_gradients({"w": mx.array([1.0])}, {"w": mx.array([0.0])})["w"].shape
        (1,)
    """

    def __init__(self, learning_rate: LearningRate, rho: float = 0.9, eps: float = 1e-6) -> None:
        super().__init__()
        _check_non_negative("AdaDelta", "rho", rho)
        _check_non_negative("AdaDelta", "epsilon", eps)
        self._maybe_schedule("learning_rate", learning_rate)
        self.rho, self.eps = rho, eps

    def init_single(self, parameter: mx.array, state: dict[str, Any]) -> None:
        """Zero averages `v` (of squared gradients) and `u` (of squared updates)."""
        _zeros(state, parameter, "v", "u")

    def apply_single(self, gradient: mx.array, parameter: mx.array,
                     state: dict[str, Any]) -> mx.array:
        """One AdaDelta step."""
        lr = self.learning_rate.astype(gradient.dtype)
        rho, eps = self.rho, self.eps
        v = rho * state["v"] + (1 - rho) * mx.square(gradient)
        d = mx.sqrt(state["u"] + eps) / mx.sqrt(v + eps) * gradient
        state["v"], state["u"] = v, rho * state["u"] + (1 - rho) * mx.square(d)
        return parameter - lr * d


class Adam(Optimizer):
    """The Adam optimizer.

    Adam: `m = b1 m + (1 - b1) g`, `v = b2 v + (1 - b2) g**2`,
    `p = p - lr * m / (sqrt(v) + eps)`; with `bias_correction`, `m` and `v` are divided by
    `1 - b1**t` and `1 - b2**t` (MLX's default leaves them uncorrected).

    Args:
        learning_rate: the step size (or a schedule).
        betas: `(b1, b2)`.
        eps: added to the denominator.
        bias_correction: correct the moments' bias.

    Example:
        >>> import nuvec.optimizers as optim
        >>> opt = optim.Adam(0.1, bias_correction=True)
        >>> opt.apply_gradients({"w": mx.array([3.0])}, {"w": mx.array([0.0])})["w"].item()
        -0.0999...
    """

    def __init__(self, learning_rate: LearningRate, betas: Sequence[float] = (0.9, 0.999),
                 eps: float = 1e-8, bias_correction: bool = False) -> None:
        super().__init__()
        name = type(self).__name__
        betas = check_pair(name, "betas", betas, low=0, high=1)
        _check_non_negative(name, "epsilon", eps)
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas, self.eps, self.bias_correction = betas, eps, bias_correction

    def init_single(self, parameter: mx.array, state: dict[str, Any]) -> None:
        """Zero moments `m` and `v`."""
        _zeros(state, parameter, "m", "v")

    def apply_single(self, gradient: mx.array, parameter: mx.array,
                     state: dict[str, Any]) -> mx.array:
        """One Adam step."""
        lr = self.learning_rate.astype(gradient.dtype)
        b1, b2 = self.betas
        m = b1 * state["m"] + (1 - b1) * gradient
        v = b2 * state["v"] + (1 - b2) * mx.square(gradient)
        state["m"], state["v"] = m, v
        if not self.bias_correction:
            return parameter - lr * m / (mx.sqrt(v) + self.eps)
        step = self.step.astype(gradient.dtype)
        c1 = lr / (1 - b1**step)
        c2 = mx.rsqrt(1 - b2**step)
        return parameter - c1 * m / (mx.sqrt(v) * c2 + self.eps)


class AdamW(Adam):
    """The AdamW optimizer: Adam with decoupled weight decay.

    Adam with decoupled weight decay: `p = p * (1 - lr * weight_decay)` before the Adam
    step.

    Example:
        >>> import nuvec.optimizers as optim
        >>> opt = optim.AdamW(0.1, weight_decay=0.5)
        >>> opt.apply_gradients({"w": mx.array([0.0])}, {"w": mx.array([1.0])})["w"].tolist()
        [0.949999...]
    """

    def __init__(self, learning_rate: LearningRate, betas: Sequence[float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01,
                 bias_correction: bool = False) -> None:
        super().__init__(learning_rate, betas, eps, bias_correction)
        self.weight_decay = check_real("AdamW", "weight_decay", weight_decay)

    def apply_single(self, gradient: mx.array, parameter: mx.array,
                     state: dict[str, Any]) -> mx.array:
        """One AdamW step."""
        lr = self.learning_rate.astype(gradient.dtype)
        return super().apply_single(gradient, parameter * (1 - lr * self.weight_decay), state)


class Adamax(Adam):
    """Adamax: `m = b1 m + (1 - b1) g`, `v = max(b2 v, |g|)`, `p = p - lr * m / (v + eps)`.

    Example:
        >>> import nuvec.optimizers as optim
        >>> opt = optim.Adamax(0.1)
        >>> opt.apply_gradients({"w": mx.array([2.0])}, {"w": mx.array([0.0])})["w"].item()
        -0.0100...
    """

    def __init__(self, learning_rate: LearningRate, betas: Sequence[float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        super().__init__(learning_rate, betas, eps)
        _check_non_negative("Adamax", "epsilon", eps)

    def apply_single(self, gradient: mx.array, parameter: mx.array,
                     state: dict[str, Any]) -> mx.array:
        """One Adamax step."""
        lr = self.learning_rate.astype(gradient.dtype)
        b1, b2 = self.betas
        m = b1 * state["m"] + (1 - b1) * gradient
        v = mx.maximum(b2 * state["v"], mx.abs(gradient))
        state["m"], state["v"] = m, v
        return parameter - lr * m / (v + self.eps)


class Lion(Optimizer):
    """The Lion optimizer.

    Lion: `c = b1 m + (1 - b1) g`, `m = b2 m + (1 - b2) g`,
    `p = p * (1 - lr * weight_decay) - lr * sign(c)`.

    Example:
        >>> import nuvec.optimizers as optim
        >>> opt = optim.Lion(0.1)
        >>> opt.apply_gradients({"w": mx.array([-3.0])}, {"w": mx.array([0.0])})["w"].tolist()
        [0.100000...]
    """

    def __init__(self, learning_rate: LearningRate, betas: Sequence[float] = (0.9, 0.99),
                 weight_decay: float = 0.0) -> None:
        super().__init__()
        betas = check_pair("Lion", "betas", betas, low=0, high=1)
        check_real("Lion", "weight_decay", weight_decay)
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas, self.weight_decay = betas, weight_decay

    def init_single(self, parameter: mx.array, state: dict[str, Any]) -> None:
        """Zero momentum `m`."""
        _zeros(state, parameter, "m")

    def apply_single(self, gradient: mx.array, parameter: mx.array,
                     state: dict[str, Any]) -> mx.array:
        """One Lion step."""
        lr = self.learning_rate.astype(gradient.dtype)
        b1, b2 = self.betas
        m = state["m"]
        c = b1 * m + (1 - b1) * gradient
        state["m"] = b2 * m + (1 - b2) * gradient
        if self.weight_decay > 0:
            parameter = (1 - lr * self.weight_decay) * parameter
        return parameter - lr * mx.sign(c)
