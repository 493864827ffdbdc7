"""`Sequential`, as `mlx.nn.Sequential`."""

from __future__ import annotations

from typing import Any, Callable

import nuvec as mx
from nuvec.nn.module import Module

__all__ = ["Sequential"]


class Sequential(Module):
    """Calls its layers (modules or plain callables) in order, each on the last's output.

    Example:
        >>> import nuvec.nn as nn
        >>> model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
        >>> model(mx.ones((4, 2))).shape
        (4, 1)
    """

    def __init__(self, *modules: Callable[[Any], Any]) -> None:
        super().__init__()
        self.layers = list(modules)

    def __call__(self, x: mx.array) -> mx.array:
        for layer in self.layers:
            x = layer(x)
        return x
