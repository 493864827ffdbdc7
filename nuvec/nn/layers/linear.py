"""`Identity`, `Linear` and `Bilinear`, as `mlx.nn`."""

from __future__ import annotations

import math
from typing import Any

import nuvec as mx
from nuvec.nn.layers.base import check_last_dim, check_parameter_bytes, input_array, size_arg
from nuvec.nn.layers.quantized import QQLinear, QuantizedLinear
from nuvec.nn.module import Module

__all__ = ["Identity", "Linear", "Bilinear"]


class Identity(Module):
    """A placeholder layer returning its input; arguments are accepted and ignored.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Identity()(mx.array([1, 2])).tolist()
        [1, 2]
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def __call__(self, x: mx.array) -> mx.array:
        return x


class Linear(Module):
    """An affine map `y = x @ weight.T + bias`.

    Weight `(output_dims, input_dims)` and bias `(output_dims,)` are drawn from
    U(-k, k), k = 1 / sqrt(input_dims), as MLX does.

    Args:
        input_dims: the size of the input features.
        output_dims: the size of the output features.
        bias: whether to add a bias.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Linear(3, 2)(mx.ones((4, 3))).shape
        (4, 2)
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True) -> None:
        super().__init__()
        name = type(self).__name__
        input_dims = size_arg(input_dims, name, "input_dims")
        output_dims = size_arg(output_dims, name, "output_dims", low=0)
        check_parameter_bytes(name, (output_dims, input_dims))
        scale = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(-scale, scale, (output_dims, input_dims))
        if bias:
            self.bias = mx.random.uniform(-scale, scale, (output_dims,))

    def _extra_repr(self) -> str:
        out, inp = self.weight.shape
        return f"input_dims={inp}, output_dims={out}, bias={'bias' in self}"

    def __call__(self, x: mx.array) -> mx.array:
        x = input_array(x, type(self).__name__)
        weight = self["weight"]
        if not x.shape or x.shape[-1] != weight.shape[1]:
            check_last_dim(x, weight.shape[1], type(self).__name__, "input_dims")
        # Leading axes folded into one: a single 2-D product (and a 2-D weight gradient) runs
        # far faster on the CPU than a batch of them.
        lead = x.shape[:-1]
        if len(lead) > 1:
            x = x.reshape(-1, x.shape[-1])
        if "bias" in self:
            y = mx.addmm(self["bias"], x, weight.T)
        else:
            y = x @ weight.T
        return y.reshape(*lead, y.shape[-1]) if len(lead) > 1 else y

    def to_quantized(self, group_size: int | None = None, bits: int | None = None,
                     mode: str = "affine", quantize_input: bool = False) -> Module:
        """This layer as a `QuantizedLinear` (its weight quantized), or with `quantize_input`
        as a `QQLinear` (its input quantized too; "nvfp4" and "mxfp8" only, no bias).

        Raises:
            ValueError: with `quantize_input`, for another mode or a layer with a bias.
        """
        if not quantize_input:
            return QuantizedLinear.from_linear(self, group_size, bits, mode)
        if mode not in ("nvfp4", "mxfp8"):
            raise ValueError(f"Linear.to_quantized: quantized inputs need mode 'nvfp4' or "
                             f"'mxfp8', got {mode!r}")
        return QQLinear.from_linear(self, group_size, bits, mode)


class Bilinear(Module):
    """A bilinear map `y[i] = x1 @ weight[i] @ x2 + bias[i]`.

    Weight `(output_dims, input2_dims, input1_dims)` and bias `(output_dims,)` are drawn from
    U(-k, k), k = 1 / sqrt(input1_dims).

    Args:
        input1_dims: features of the first input.
        input2_dims: features of the second input.
        output_dims: output features.
        bias: whether to add a bias.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Bilinear(2, 3, 4)(mx.ones((5, 2)), mx.ones((5, 3))).shape
        (5, 4)
    """

    def __init__(self, input1_dims: int, input2_dims: int, output_dims: int,
                 bias: bool = True) -> None:
        super().__init__()
        name = type(self).__name__
        input1_dims = size_arg(input1_dims, name, "input1_dims")
        input2_dims = size_arg(input2_dims, name, "input2_dims", low=0)
        output_dims = size_arg(output_dims, name, "output_dims", low=0)
        check_parameter_bytes(name, (output_dims, input2_dims, input1_dims))
        scale = math.sqrt(1.0 / input1_dims)
        self.weight = mx.random.uniform(-scale, scale, (output_dims, input2_dims, input1_dims))
        if bias:
            self.bias = mx.random.uniform(-scale, scale, (output_dims,))

    def _extra_repr(self) -> str:
        out, in2, in1 = self.weight.shape
        return (f"input1_dims={in1}, input2_dims={in2}, output_dims={out}, "
                f"bias={'bias' in self}")

    def __call__(self, x1: mx.array, x2: mx.array) -> mx.array:
        name = type(self).__name__
        x1, x2 = input_array(x1, name), input_array(x2, name)
        out, in2, in1 = self.weight.shape
        check_last_dim(x1, in1, name, "input1_dims")
        check_last_dim(x2, in2, name, "input2_dims")
        rows1, rows2 = math.prod(x1.shape[:-1]), math.prod(x2.shape[:-1])
        if rows2 not in (1, rows1):
            raise ValueError(f"{name}: the inputs' leading shapes must match, got shapes "
                             f"{x1.shape} and {x2.shape}")
        lead = x1.shape[:-1]
        x1 = x1.reshape(-1, in1)
        x2 = x2.reshape(-1, 1, in2)
        y = x1 @ self.weight.reshape(out * in2, in1).T          # (n, out * in2)
        y = y.reshape(-1, out, in2).swapaxes(-2, -1)            # (n, in2, out)
        y = (x2 @ y).squeeze(1)                                 # (n, out)
        if "bias" in self:
            y = y + self.bias
        return y.reshape(*lead, out)
