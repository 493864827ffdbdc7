"""`value_and_grad` and `checkpoint` over a module's trainable parameters, and the distributed
gradient helpers (`average_gradients`, `clip_grad_norm_sharded`), as `mlx.nn.utils`."""

from __future__ import annotations

from functools import wraps
from typing import Any, Callable

import nuvec as mx
from nuvec.nn.distributed import average_gradients, clip_grad_norm_sharded
from nuvec.nn.module import Module

__all__ = ["value_and_grad", "checkpoint", "average_gradients", "clip_grad_norm_sharded"]


def value_and_grad(model: Module, fn: Callable[..., Any]) -> Callable[..., tuple[Any, Any]]:
    """`fn`'s value and its gradient with respect to `model.trainable_parameters()`.

    `fn(*args, **kwargs)` calls the model; the returned function computes
    `(fn(*args, **kwargs), grads)`, `grads` a tree shaped like the trainable parameters. The
    model keeps its parameters (the traced copies are swapped out again afterwards).

    Args:
        model: the module whose trainable parameters are differentiated.
        fn: the scalar function to differentiate (it may return `(loss, aux)` as
            `mx.value_and_grad` allows).

    Returns:
        The function computing the value and the gradients.

    Example:
        >>> import nuvec.nn as nn
        >>> model = nn.Linear(2, 1)
        >>> loss, grads = nn.value_and_grad(model, lambda x: model(x).sum())(mx.ones((3, 2)))
        >>> grads["weight"].tolist()
        [[3.0, 3.0]]
    """
    def inner(params: Any, *args: Any, **kwargs: Any) -> Any:
        model.update(params)
        return fn(*args, **kwargs)

    value_grad = mx.value_and_grad(inner)

    @wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        params = model.trainable_parameters()
        try:
            return value_grad(params, *args, **kwargs)
        finally:
            model.update(params)

    return wrapped


def checkpoint(module: Module, fn: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """A module's function recomputed in the backward pass (`mx.checkpoint`).

    `fn` (default: the module's `__call__`) recomputed in the backward pass instead of
    keeping its intermediates (`mx.checkpoint` over the module's trainable parameters).

    Args:
        module: the module whose parameters `fn` uses.
        fn: the function to checkpoint.

    Returns:
        The checkpointed function, called with `fn`'s arguments.

    Example:
        >>> import nuvec.nn as nn
        >>> layer = nn.Linear(2, 2)
        >>> nn.utils.checkpoint(layer)(mx.ones((1, 2))).shape
        (1, 2)
    """
    fn = fn or module.__call__

    def inner(params: Any, *args: Any, **kwargs: Any) -> Any:
        module.update(params)
        return fn(*args, **kwargs)

    checkpointed = mx.checkpoint(inner)

    @wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return checkpointed(module.trainable_parameters(), *args, **kwargs)

    return wrapped
