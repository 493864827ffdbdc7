"""Max and average pooling layers, as `mlx.nn` (`MaxPool1d/2d/3d`, `AvgPool1d/2d/3d`):
channels last, the window reduced over each spatial axis.

The windows are read as strided slices, one per kernel offset: max pooling stacks them and
takes one `max` over the stack (so the gradient is split evenly among tied maxima, as MLX's),
average pooling adds them. The pooling differentiates and batches like any composition of
nuvec ops.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any

import nuvec as mx
from nuvec.nn.layers.base import input_array, ntuple, own_methods
from nuvec.nn.module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d"]


def _lowest(dtype: mx.Dtype) -> Any:
    """The padding of max pooling: the smallest value of `dtype` (-inf for floats)."""
    if mx.issubdtype(dtype, mx.inexact):
        return -float("inf")
    return False if dtype == mx.bool_ else mx.iinfo(dtype).min


class _Pool(Module):
    _n = 1
    _max = True

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        name = type(self).__name__
        self.kernel_size = ntuple(kernel_size, self._n, name, "kernel_size")
        self.stride = ntuple(stride if stride is not None else kernel_size, self._n, name,
                             "stride")
        self.padding = ntuple(padding, self._n, name, "padding")
        if min(self.kernel_size + self.stride) <= 0 or min(self.padding) < 0:
            raise ValueError(f"{name}: kernel_size and stride must be positive and padding "
                             f"non-negative, got kernel_size={self.kernel_size}, "
                             f"stride={self.stride}, padding={self.padding}")

    def _extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")

    def __call__(self, x: mx.array) -> mx.array:
        name = type(self).__name__
        x = input_array(x, name)
        if x.ndim not in (self._n + 1, self._n + 2):
            raise ValueError(f"{name}: expected an input of {self._n + 2} (or {self._n + 1}) "
                             f"dimensions, got shape {x.shape}")
        if x.ndim == self._n + 1:
            return self(x[None])[0]
        if any(self.padding):
            fill = _lowest(x.dtype) if self._max else 0.0
            widths = [(0, 0)] + [(p, p) for p in self.padding] + [(0, 0)]
            x = mx.pad(x, widths, constant_values=fill)
        spatial = x.shape[1:-1]
        out = [(size - k) // s + 1 for size, k, s in zip(spatial, self.kernel_size, self.stride)]
        if min(out) < 1:
            raise ValueError(f"{name}: kernel {self.kernel_size} larger than the padded input "
                             f"{tuple(spatial)}")
        windows = [x[(slice(None),) + tuple(slice(o, o + s * (m - 1) + 1, s)
                                            for o, s, m in zip(offsets, self.stride, out))]
                   for offsets in itertools.product(*(range(k) for k in self.kernel_size))]
        if self._max:
            # one reduction over the stacked windows: its gradient splits ties evenly
            return mx.stack(windows).max(0)
        return functools.reduce(mx.add, windows) / float(math.prod(self.kernel_size))


def _pool_class(name: str, n: int, is_max: bool, example: str, shape: str) -> type:
    kind = "Maximum" if is_max else "Average"
    axes = "axis" if n == 1 else "axes"
    fill = "-inf, the lowest value of an integer dtype" if is_max else "zeros"
    doc = (f"{kind} pooling over the {n} spatial {axes} of `(N, *spatial, C)` inputs.\n\n"
           "    The batch axis may be left out.\n\n"
           "    Args:\n"
           "        kernel_size: the window (an int or one per axis).\n"
           "        stride: the step between windows (default: the kernel size).\n"
           f"        padding: added on both sides ({fill}).\n\n"
           "    Raises:\n"
           "        ValueError: for a bad input rank or a window larger than the input.\n\n"
           "    Example:\n"
           "        >>> import nuvec.nn as nn\n"
           f"        >>> {example}.shape\n"
           f"        {shape}\n    ")
    cls = type(name, (_Pool,), {"_n": n, "_max": is_max, "__doc__": doc,
                                "__module__": __name__})
    return own_methods(cls, "__init__", "__call__")


MaxPool1d = _pool_class("MaxPool1d", 1, True, "nn.MaxPool1d(2)(mx.ones((1, 8, 3)))", "(1, 4, 3)")
MaxPool2d = _pool_class("MaxPool2d", 2, True, "nn.MaxPool2d(2, 1)(mx.ones((1, 4, 4, 3)))",
                        "(1, 3, 3, 3)")
MaxPool3d = _pool_class("MaxPool3d", 3, True, "nn.MaxPool3d(2)(mx.ones((1, 4, 4, 4, 1)))",
                        "(1, 2, 2, 2, 1)")
AvgPool1d = _pool_class("AvgPool1d", 1, False, "nn.AvgPool1d(2)(mx.ones((1, 8, 3)))",
                        "(1, 4, 3)")
AvgPool2d = _pool_class("AvgPool2d", 2, False,
                        "nn.AvgPool2d(3, 2, padding=1)(mx.ones((1, 4, 4, 3)))", "(1, 2, 2, 3)")
AvgPool3d = _pool_class("AvgPool3d", 3, False, "nn.AvgPool3d(2)(mx.ones((1, 4, 4, 4, 1)))",
                        "(1, 2, 2, 2, 1)")
