"""Helpers of the `nuvec.nn` tests: float64 copies of layers and gradient checks through a
layer's parameters (references stay NumPy)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import nuvec as mx
from nuvec.testing import check_grads
from nuvec.utils import tree_flatten, tree_unflatten


def f64(layer: Any) -> Any:
    """`layer` with its floating parameters in float64 (returns the layer)."""
    layer.set_dtype(mx.float64)
    return layer


def params64(layer: Any) -> dict[str, np.ndarray]:
    """The layer's parameters as float64 NumPy arrays, by dotted path."""
    return {k: np.asarray(v, np.float64) for k, v in tree_flatten(layer.parameters())}


def check_layer_grads(layer: Any, *inputs: mx.array, call: Callable[..., Any] | None = None,
                      rtol: float = 1e-6) -> None:
    """Finite differences (float64) of `call(layer, *inputs)` with respect to the inputs and
    every trainable parameter."""
    call = call or (lambda m, *xs: m(*xs))
    names = [k for k, _ in tree_flatten(layer.trainable_parameters())]
    values = [v for _, v in tree_flatten(layer.trainable_parameters())]
    count = len(inputs)

    def fn(*args: mx.array) -> Any:
        layer.update(tree_unflatten(list(zip(names, args[count:]))))
        return call(layer, *args[:count])

    check_grads(fn, [*inputs, *values], rtol=rtol, atol=1e-8)
    layer.update(tree_unflatten(list(zip(names, values))))


def rand64(*shape: int, seed: int = 0) -> mx.array:
    return mx.array(np.random.default_rng(seed).standard_normal(shape), mx.float64)
