"""`Adafactor`, as `mlx.optimizers.Adafactor`: second moments factored into row and column
averages for parameters of two or more dimensions, relative step sizes, update clipping."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import nuvec as mx
from nuvec.optimizers.base import Optimizer, check_pair, check_real

__all__ = ["Adafactor"]


def _rms(x: mx.array) -> mx.array:
    return mx.sqrt(mx.mean(mx.square(x)))


class Adafactor(Optimizer):
    """Adafactor (Shazeer and Stern, 2018), with MLX's defaults.

    At step `t`: `beta2 = 1 - t**decay_rate`; `u = g**2 + eps[0]`; for a matrix the row and
    column means of `u` are averaged by `beta2` and `v ~ row * col / mean(row)`, otherwise `v`
    averages `u`; the update `g / sqrt(v)` is divided by `max(1, rms(update) /
    clip_threshold)` and multiplied by the step size: `min(1e-2, 1/sqrt(t))` (or
    `min(1e-6 t, 1/sqrt(t))` with `warmup_init`) when `relative_step`, else `learning_rate`,
    times `max(eps[1], rms(p))` when `scale_parameter`. With `beta_1` the update is averaged.

    Args:
        learning_rate: the step size when `relative_step` is False (a number or schedule).
        eps: `(eps added to g**2, the smallest parameter scale)`.
        clip_threshold: the update RMS clipping threshold.
        decay_rate: the exponent of `t` in `beta2`.
        beta_1: the first-moment rate (None: no first moment).
        weight_decay: the decoupled weight decay.
        scale_parameter: scale the step by the parameter's RMS.
        relative_step: use the relative (time-dependent) step size.
        warmup_init: warm the relative step size up linearly.

    Example:
        >>> import nuvec.optimizers as optim
        >>> opt = optim.Adafactor()
        >>> opt.apply_gradients({"w": mx.ones((2, 2))}, {"w": mx.ones((2, 2))})["w"].shape
        (2, 2)
    """

    def __init__(self, learning_rate: float | Callable[[mx.array], mx.array] | None = None,
                 eps: Sequence[float] = (1e-30, 1e-3), clip_threshold: float = 1.0,
                 decay_rate: float = -0.8, beta_1: float | None = None,
                 weight_decay: float = 0.0, scale_parameter: bool = True,
                 relative_step: bool = True, warmup_init: bool = False) -> None:
        super().__init__()
        eps = check_pair("Adafactor", "eps", eps, low=0)
        check_real("Adafactor", "clip_threshold", clip_threshold)
        if not clip_threshold > 0:
            raise ValueError(f"Adafactor: clip_threshold should be > 0, {clip_threshold} was "
                             "provided instead")
        check_real("Adafactor", "decay_rate", decay_rate)
        check_real("Adafactor", "weight_decay", weight_decay)
        if beta_1 is not None:
            check_real("Adafactor", "beta_1", beta_1, low=0, high=1)
        if learning_rate is not None:
            self._maybe_schedule("learning_rate", learning_rate)
        elif not relative_step:
            raise ValueError("Adafactor: learning_rate is needed when relative_step is False")
        self.eps, self.clip_threshold, self.decay_rate = tuple(eps), clip_threshold, decay_rate
        self.beta_1, self.weight_decay = beta_1, weight_decay
        self.scale_parameter, self.relative_step = scale_parameter, relative_step
        self.warmup_init = warmup_init

    def init_single(self, parameter: mx.array, state: dict[str, Any]) -> None:
        """Row and column averages (matrices) or a full average `exp_avg_sq`; `exp_avg` with
        `beta_1`."""
        if parameter.ndim >= 2:
            shape, dtype = parameter.shape, parameter.dtype
            state["exp_avg_sq_row"] = mx.zeros(shape[:-1], dtype=dtype)
            state["exp_avg_sq_col"] = mx.zeros(shape[:-2] + shape[-1:], dtype=dtype)
        else:
            state["exp_avg_sq"] = mx.zeros_like(parameter)
        if self.beta_1 is not None:
            state["exp_avg"] = mx.zeros_like(parameter)

    def _step_size(self, step: mx.array, parameter_rms: mx.array) -> mx.array:
        if self.relative_step:
            low = 1e-6 * step if self.warmup_init else 1e-2
            size = mx.minimum(low, mx.rsqrt(step))
        else:
            size = self.learning_rate
        size = size.astype(parameter_rms.dtype)
        if self.scale_parameter:
            return mx.maximum(self.eps[1], parameter_rms) * size
        return size

    def _second_moment(self, update: mx.array, beta_2: mx.array,
                       state: dict[str, Any]) -> mx.array:
        """Updates the averages of `update` (g**2 + eps) in `state`; returns `1 / sqrt(v)`."""
        if update.ndim < 2:
            state["exp_avg_sq"] = beta_2 * state["exp_avg_sq"] + (1 - beta_2) * update
            return mx.rsqrt(state["exp_avg_sq"])
        row = beta_2 * state["exp_avg_sq_row"] + (1 - beta_2) * mx.mean(update, axis=-1)
        col = beta_2 * state["exp_avg_sq_col"] + (1 - beta_2) * mx.mean(update, axis=-2)
        state["exp_avg_sq_row"], state["exp_avg_sq_col"] = row, col
        r_factor = mx.rsqrt(row / mx.mean(row, axis=-1, keepdims=True))
        return r_factor[..., :, None] * mx.rsqrt(col)[..., None, :]

    def apply_single(self, gradient: mx.array, parameter: mx.array,
                     state: dict[str, Any]) -> mx.array:
        """One Adafactor step."""
        step = self.step.astype(gradient.dtype)
        parameter_rms = _rms(parameter)
        step_size = self._step_size(step, parameter_rms)
        beta_2 = 1.0 - step**self.decay_rate
        update = self._second_moment(mx.square(gradient) + self.eps[0], beta_2, state)
        update = update * gradient
        update = update / mx.maximum(1.0, _rms(update) / self.clip_threshold)
        update = step_size * update
        if self.beta_1 is not None:
            update = self.beta_1 * state["exp_avg"] + (1 - self.beta_1) * update
            state["exp_avg"] = update
        if self.weight_decay != 0:
            parameter = parameter + parameter * (-self.weight_decay * step_size)
        return parameter - update
