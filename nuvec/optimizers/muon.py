"""Muon (MomentUm Orthogonalized by Newton-Schulz), as `mlx.optimizers.Muon`.

The update of a matrix is its Nesterov momentum with the singular values pushed towards 1 by
five steps of a quintic Newton-Schulz iteration (K. Jordan et al., "Muon: An optimizer for
hidden layers in neural networks", 2024: coefficients 3.4445, -4.7750, 2.0315), scaled by
`sqrt(max(1, rows / cols))`. Parameters of fewer than two dimensions take the momentum
itself; those of more are flattened to `(shape[0], -1)` for the iteration.
"""

from __future__ import annotations

from typing import Any

import nuvec as mx
from nuvec.ops.arguments import index_int
from nuvec.optimizers.base import Optimizer, check_real
from nuvec.optimizers.optimizers import LearningRate

__all__ = ["Muon"]

_QUINTIC = (3.4445, -4.7750, 2.0315)


def orthogonalized(x: mx.array, steps: int) -> mx.array:
    """`x` (2-D) with its singular values pushed towards 1 by `steps` Newton-Schulz steps of
    `X <- a X + (b A + c A^2) X`, `A = X X^T`, from `X = x / (|x|_F + 1e-7)` (on the wide
    orientation, so `A` is the smaller Gram matrix)."""
    a, b, c = _QUINTIC
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.T
    x = x / (mx.linalg.norm(x, keepdims=True) + 1e-7)
    for _ in range(steps):
        gram = x @ x.T
        x = mx.addmm(a * x, mx.addmm(b * gram, gram, gram, alpha=c), x)
    return x.T if tall else x


class Muon(Optimizer):
    """The Muon optimizer, for the hidden layers' matrices (use AdamW for embeddings, the
    output layer and vectors, as MLX advises).

    `g' = g + weight_decay * p`, `v = momentum * v + (1 - momentum) * g'`, the update
    `u = (1 - momentum) * g' + momentum * v` with `nesterov` (else `v`); a parameter of two or
    more dimensions takes `orthogonalized(u)` (flattened to `(shape[0], -1)` and back) and a
    rate scaled by `sqrt(max(1, shape[-2] / shape[-1]))`; then `p = p - lr * u`.

    Args:
        learning_rate: the rate, or a schedule.
        momentum: the momentum's decay.
        weight_decay: the L2 penalty added to the gradient.
        nesterov: whether to use Nesterov momentum.
        ns_steps: Newton-Schulz steps.

    Example:
        >>> import nuvec.optimizers as optim
        >>> opt = optim.Muon(0.1, weight_decay=0.0)
        >>> out = opt.apply_gradients({"w": mx.eye(2)}, {"w": mx.zeros((2, 2))})["w"]
        >>> [round(v, 2) for v in out.reshape(-1).tolist()]  # -0.1 times about the identity
        [-0.11, 0.0, 0.0, -0.11]
    """

    def __init__(self, learning_rate: LearningRate, momentum: float = 0.95,
                 weight_decay: float = 0.01, nesterov: bool = True, ns_steps: int = 5) -> None:
        super().__init__()
        ns_steps = index_int(ns_steps, "Muon", "ns_steps", low=0)
        check_real("Muon", "momentum", momentum)
        check_real("Muon", "weight_decay", weight_decay)
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum, self.weight_decay = momentum, weight_decay
        self.nesterov, self.ns_steps = nesterov, ns_steps

    def init_single(self, parameter: mx.array, state: dict[str, Any]) -> None:
        """Zero momentum `v`."""
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array,
                     state: dict[str, Any]) -> mx.array:
        """One Muon step."""
        if self.weight_decay:
            gradient = gradient + self.weight_decay * parameter
        mu = self.momentum
        v = mu * state["v"] + (1 - mu) * gradient
        state["v"] = v
        update = (1 - mu) * gradient + mu * v if self.nesterov else v
        lr = self.learning_rate.astype(gradient.dtype)
        if update.ndim >= 2:
            shape = update.shape
            update = orthogonalized(update.reshape(shape[0], -1), self.ns_steps).reshape(shape)
            lr = lr * max(1.0, shape[-2] / shape[-1]) ** 0.5
        return parameter - lr * update
