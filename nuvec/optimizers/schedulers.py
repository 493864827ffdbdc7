"""Learning-rate schedules, as `mlx.optimizers`: functions of the step count (an array)
returning the rate. Pass one as an optimizer's `learning_rate`."""

from __future__ import annotations

import math
from typing import Callable, Sequence

import nuvec as mx

__all__ = ["exponential_decay", "step_decay", "cosine_decay", "linear_schedule",
           "join_schedules"]

Schedule = Callable[[mx.array], mx.array]


def exponential_decay(init: float, decay_rate: float) -> Schedule:
    """`init * decay_rate ** step`.

    Example:
        >>> import nuvec.optimizers as optim
        >>> optim.exponential_decay(0.1, 0.5)(mx.array(2)).item()
        0.025...
    """
    return lambda step: init * decay_rate**step


def step_decay(init: float, decay_rate: float, step_size: int) -> Schedule:
    """`init * decay_rate ** (step // step_size)`.

    Example:
        >>> import nuvec.optimizers as optim
        >>> optim.step_decay(0.1, 0.5, 10)(mx.array(25)).item()
        0.025...
    """
    if step_size <= 0:
        raise ValueError(f"step_decay: step_size must be greater than 0, but got {step_size}.")
    return lambda step: init * decay_rate ** (step // step_size)


def cosine_decay(init: float, decay_steps: int, end: float = 0.0) -> Schedule:
    """Half a cosine from `init` at step 0 to `end` at `decay_steps`, then `end`.

    Example:
        >>> import nuvec.optimizers as optim
        >>> round(optim.cosine_decay(1.0, 100)(mx.array(50)).item(), 4)
        0.5
    """
    if decay_steps <= 0:
        raise ValueError(f"cosine_decay: decay_steps must be greater than 0, but got "
                         f"{decay_steps}.")

    def schedule(step: mx.array) -> mx.array:
        s = mx.minimum(step, decay_steps)
        decay = 0.5 * (1.0 + mx.cos((math.pi / decay_steps) * s))
        return end + decay * (init - end)
    return schedule


def linear_schedule(init: float, end: float, steps: int) -> Schedule:
    """A straight line from `init` at step 0 to `end` at `steps`, then `end`.

    Raises:
        ValueError: if `steps < 1`.

    Example:
        >>> import nuvec.optimizers as optim
        >>> optim.linear_schedule(0.0, 1.0, 10)(mx.array(5)).item()
        0.5
    """
    if steps < 1:
        raise ValueError(f"linear_schedule: steps must be greater than 0, but got {steps}.")

    def schedule(step: mx.array) -> mx.array:
        step = mx.minimum(step, steps)
        return step * ((end - init) / steps) + init
    return schedule


def join_schedules(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """Schedule `i + 1` (called with `step - boundaries[i]`) from step `boundaries[i]` on.

    Raises:
        ValueError: without schedules, or unless there is one boundary fewer than schedules.

    Example:
        >>> import nuvec.optimizers as optim
        >>> warmup = optim.linear_schedule(0.0, 1.0, 10)
        >>> lr = optim.join_schedules([warmup, optim.cosine_decay(1.0, 100)], [10])
        >>> lr(mx.array(5)).item(), lr(mx.array(10)).item()
        (0.5, 1.0)
    """
    if len(schedules) == 0:
        raise ValueError("join_schedules: must provide at least 1 schedule to join.")
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(f"join_schedules: received {len(boundaries)} boundaries but expected "
                         f"{len(schedules) - 1}.")

    def schedule(step: mx.array) -> mx.array:
        output = schedules[0](step)
        for boundary, later in zip(boundaries, schedules[1:]):
            output = mx.where(step < boundary, output, later(step - boundary))
        return output
    return schedule
