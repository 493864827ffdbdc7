"""`RNN`, `GRU` and `LSTM`, as `mlx.nn`: inputs `(N, L, D)` or `(L, D)`, the hidden state of
every step returned. Weights are drawn from U(-k, k), k = 1/sqrt(hidden_size)."""

from __future__ import annotations

import math
from typing import Callable

import nuvec as mx
from nuvec.nn.layers.base import check_ndim, check_parameter_bytes, input_array, size_arg
from nuvec.nn.module import Module

__all__ = ["RNN", "GRU", "LSTM"]


def _uniform(scale: float, *shape: int) -> mx.array:
    return mx.random.uniform(-scale, scale, shape)


def _sizes(layer: Module, input_size: int, hidden_size: int, gates: int) -> tuple[int, int]:
    """The checked sizes: `input_size >= 0`, `hidden_size >= 1` (`gates` weights' rows)."""
    name = type(layer).__name__
    input_size = size_arg(input_size, name, "input_size", low=0)
    hidden_size = size_arg(hidden_size, name, "hidden_size")
    check_parameter_bytes(name, (gates * hidden_size, input_size + hidden_size))
    return input_size, hidden_size


def _check_input(layer: Module, x: mx.array, input_size: int, *states: mx.array | None
                 ) -> mx.array:
    """`x` as an array of shape `(N, L, input_size)` or `(L, input_size)`; `states` (the
    initial hidden or cell state, or None) of the hidden size."""
    name = type(layer).__name__
    x = input_array(x, name)
    if not 2 <= x.ndim <= 3 or x.shape[-1] != input_size:
        raise ValueError(f"{name}: expected inputs of shape (N, L, {input_size}) or "
                         f"(L, {input_size}) (input_size={input_size}), got shape {x.shape}")
    for state in states:
        if state is not None:
            state = input_array(state, name)
            check_ndim(state, 1, 2, name, "for the initial state")
            if state.shape[-1] != layer.hidden_size:
                raise ValueError(f"{name}: expected an initial state whose last dimension is "
                                 f"hidden_size={layer.hidden_size}, got shape {state.shape}")
    return x


def _project(x: mx.array, weight: mx.array, bias: mx.array | None) -> mx.array:
    return mx.addmm(bias, x, weight.T) if bias is not None else x @ weight.T


class RNN(Module):
    """An Elman recurrent layer: `h_t = nonlinearity(x_t Wxh^T + b + h_{t-1} Whh^T)`.

    Args:
        input_size: input features.
        hidden_size: hidden features.
        bias: whether to learn a bias.
        nonlinearity: the activation (default `tanh`).

    Raises:
        ValueError: if `nonlinearity` is not callable.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.RNN(3, 5)(mx.ones((2, 4, 3))).shape
        (2, 4, 5)
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: Callable[[mx.array], mx.array] | None = None) -> None:
        super().__init__()
        self.nonlinearity = nonlinearity or mx.tanh
        if not callable(self.nonlinearity):
            raise ValueError(f"RNN: nonlinearity must be callable. Current value: "
                             f"{nonlinearity}.")
        input_size, hidden_size = _sizes(self, input_size, hidden_size, 1)
        scale = 1.0 / math.sqrt(hidden_size)
        self.hidden_size = hidden_size
        self.Wxh = _uniform(scale, hidden_size, input_size)
        self.Whh = _uniform(scale, hidden_size, hidden_size)
        if bias:
            self.bias = _uniform(scale, hidden_size)

    def _extra_repr(self) -> str:
        return (f"input_dims={self.Wxh.shape[1]}, hidden_size={self.hidden_size}, "
                f"nonlinearity={self.nonlinearity}, bias={'bias' in self}")

    def __call__(self, x: mx.array, hidden: mx.array | None = None) -> mx.array:
        x = _check_input(self, x, self.Wxh.shape[1], hidden)
        x = _project(x, self.Wxh, self.get("bias"))
        states = []
        for t in range(x.shape[-2]):
            h = x[..., t, :] if hidden is None else mx.addmm(x[..., t, :], hidden, self.Whh.T)
            hidden = self.nonlinearity(h)
            states.append(hidden)
        return mx.stack(states, axis=-2)


class GRU(Module):
    """A gated recurrent unit layer.

    A gated recurrent unit layer (PyTorch's and MLX's gate layout `r, z, n`):
    `r, z = sigmoid(...)`, `n = tanh(x_n + r * (h Wh_n^T + b_hn))`, `h = (1 - z) n + z h`.

    Args:
        input_size: input features.
        hidden_size: hidden features.
        bias: whether to learn biases (`b` of the input projection and `bhn`).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.GRU(3, 5)(mx.ones((2, 4, 3))).shape
        (2, 4, 5)
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True) -> None:
        super().__init__()
        input_size, hidden_size = _sizes(self, input_size, hidden_size, 3)
        self.hidden_size = hidden_size
        scale = 1.0 / math.sqrt(hidden_size)
        self.Wx = _uniform(scale, 3 * hidden_size, input_size)
        self.Wh = _uniform(scale, 3 * hidden_size, hidden_size)
        if bias:
            self.b = _uniform(scale, 3 * hidden_size)
            self.bhn = _uniform(scale, hidden_size)

    def _extra_repr(self) -> str:
        return (f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, "
                f"bias={'b' in self}")

    def __call__(self, x: mx.array, hidden: mx.array | None = None) -> mx.array:
        h_size = self.hidden_size
        x = _check_input(self, x, self.Wx.shape[1], hidden)
        x = _project(x, self.Wx, self.get("b"))
        x_rz, x_n = x[..., :-h_size], x[..., -h_size:]
        states = []
        for t in range(x.shape[-2]):
            rz = x_rz[..., t, :]
            if hidden is not None:
                h_proj = hidden @ self.Wh.T
                h_rz, h_n = h_proj[..., :-h_size], h_proj[..., -h_size:]
                if "bhn" in self:
                    h_n = h_n + self.bhn
                rz = rz + h_rz
            r, z = mx.split(mx.sigmoid(rz), 2, axis=-1)
            n = x_n[..., t, :]
            if hidden is not None:
                n = n + r * h_n
            elif "bhn" in self:  # a zero hidden state: its projection is the bias alone
                n = n + r * self.bhn
            n = mx.tanh(n)
            hidden = (1 - z) * n if hidden is None else (1 - z) * n + z * hidden
            states.append(hidden)
        return mx.stack(states, axis=-2)


class LSTM(Module):
    """A long short-term memory layer.

    A long short-term memory layer (gates `i, f, g, o`); returns the hidden and the cell
    states of every step.

    Args:
        input_size: input features.
        hidden_size: hidden features.
        bias: whether to learn a bias.

    Example:
        >>> import nuvec.nn as nn
        >>> h, c = nn.LSTM(3, 5)(mx.ones((2, 4, 3)))
        >>> h.shape, c.shape
        ((2, 4, 5), (2, 4, 5))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True) -> None:
        super().__init__()
        input_size, hidden_size = _sizes(self, input_size, hidden_size, 4)
        self.hidden_size = hidden_size
        scale = 1.0 / math.sqrt(hidden_size)
        self.Wx = _uniform(scale, 4 * hidden_size, input_size)
        self.Wh = _uniform(scale, 4 * hidden_size, hidden_size)
        if bias:
            self.bias = _uniform(scale, 4 * hidden_size)

    def _extra_repr(self) -> str:
        return (f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, "
                f"bias={'bias' in self}")

    def __call__(self, x: mx.array, hidden: mx.array | None = None,
                 cell: mx.array | None = None) -> tuple[mx.array, mx.array]:
        x = _check_input(self, x, self.Wx.shape[1], hidden, cell)
        x = _project(x, self.Wx, self.get("bias"))
        hiddens, cells = [], []
        for t in range(x.shape[-2]):
            ifgo = x[..., t, :]
            if hidden is not None:
                ifgo = mx.addmm(ifgo, hidden, self.Wh.T)
            i, f, g, o = mx.split(ifgo, 4, axis=-1)
            i, f, g, o = mx.sigmoid(i), mx.sigmoid(f), mx.tanh(g), mx.sigmoid(o)
            cell = i * g if cell is None else f * cell + i * g
            hidden = o * mx.tanh(cell)
            hiddens.append(hidden)
            cells.append(cell)
        return mx.stack(hiddens, axis=-2), mx.stack(cells, axis=-2)


