"""Optimizers and learning-rate schedules, as `mlx.optimizers`
(`import nuvec.optimizers as optim`).

An optimizer updates a model in place (`optimizer.update(model, grads)`) or returns updated
parameters (`apply_gradients`); its `state` is a tree of arrays that saves and restores.
"""

from nuvec.optimizers.adafactor import Adafactor
from nuvec.optimizers.base import MultiOptimizer, Optimizer, clip_grad_norm
from nuvec.optimizers.muon import Muon
from nuvec.optimizers.optimizers import (
    SGD, AdaDelta, Adagrad, Adam, Adamax, AdamW, Lion, RMSprop,
)
from nuvec.optimizers.schedulers import (
    cosine_decay, exponential_decay, join_schedules, linear_schedule, step_decay,
)

__all__ = [
    "Optimizer", "MultiOptimizer", "SGD", "RMSprop", "Adagrad", "AdaDelta", "Adam", "AdamW",
    "Adamax", "Adafactor", "Lion", "Muon", "clip_grad_norm", "exponential_decay", "step_decay",
    "cosine_decay", "linear_schedule", "join_schedules",
]
