"""`Conv1d`, `Conv2d`, `Conv3d` and their transposes, as `mlx.nn`: channels last, weights
`(out_channels, *kernel, in_channels)`, initialized from U(-k, k), k = 1/sqrt(fan_in)."""

from __future__ import annotations

import math
from typing import Any, Callable

import nuvec as mx
from nuvec.nn.layers.base import check_parameter_bytes, input_array, ntuple, size_arg
from nuvec.nn.module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]


class _Conv(Module):
    """The shared body: `n` spatial dimensions, the op computing the convolution."""

    _n: int = 1
    _op: Callable[..., mx.array]
    _transpose = False

    def _setup(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any,
               padding: Any, dilation: Any, groups: int, bias: bool,
               output_padding: Any = 0) -> None:
        name = type(self).__name__
        in_channels = size_arg(in_channels, name, "in_channels")
        out_channels = size_arg(out_channels, name, "out_channels", low=0)
        groups = size_arg(groups, name, "groups")
        if in_channels % groups != 0:
            raise ValueError(f"{name}: the number of input channels ({in_channels}) must be "
                             f"divisible by the number of groups ({groups})")
        n = self._n
        kernel = ntuple(kernel_size, n, name, "kernel_size", low=1)
        check_parameter_bytes(name, (out_channels, *kernel, in_channels // groups))
        scale = math.sqrt(1.0 / (in_channels * math.prod(kernel)))
        self.weight = mx.random.uniform(-scale, scale,
                                        (out_channels, *kernel, in_channels // groups))
        if bias:
            self.bias = mx.zeros((out_channels,))
        self.stride = ntuple(stride, n, name, "stride", low=1)
        self.padding = ntuple(padding, n, name, "padding", low=0)
        self.dilation, self.groups = ntuple(dilation, n, name, "dilation", low=1), groups
        self.output_padding = ntuple(output_padding, n, name, "output_padding", low=0)

    def _extra_repr(self) -> str:
        out, *kernel, inp = self.weight.shape
        return (f"{inp * self.groups}, {out}, kernel_size={tuple(kernel)}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, groups={self.groups}, "
                f"bias={'bias' in self}")

    def __call__(self, x: mx.array) -> mx.array:
        name = type(self).__name__
        x = input_array(x, name)
        channels = self.weight.shape[-1] * self.groups
        if x.ndim != self._n + 2 or x.shape[-1] != channels:
            spatial = ("L", "H, W", "D, H, W")[self._n - 1]
            raise ValueError(f"{name}: expected inputs of shape (N, {spatial}, in_channels="
                             f"{channels}), got shape {x.shape}")
        unpack = (lambda t: t[0]) if self._n == 1 else (lambda t: t)
        args = [unpack(self.stride), unpack(self.padding), unpack(self.dilation)]
        if self._transpose:
            args.append(unpack(self.output_padding))
        y = type(self)._op(x, self.weight, *args, groups=self.groups)
        return y + self.bias if "bias" in self else y


class Conv1d(_Conv):
    """1-D convolution over `(N, L, C_in)` inputs.

    Args:
        in_channels: input channels.
        out_channels: output channels.
        kernel_size: the kernel length.
        stride: the stride.
        padding: zeros added on both sides.
        dilation: the kernel dilation.
        groups: channel groups.
        bias: whether to add a bias (zeros).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Conv1d(3, 8, 3, padding=1)(mx.ones((2, 10, 3))).shape
        (2, 10, 8)
    """

    _n, _op = 1, staticmethod(mx.conv1d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, dilation: int = 1, groups: int = 1,
                 bias: bool = True) -> None:
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                    bias)


class Conv2d(_Conv):
    """2-D convolution over `(N, H, W, C_in)` inputs; sizes are ints or pairs (as `Conv1d`).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Conv2d(3, 8, (3, 3), stride=2)(mx.ones((1, 9, 9, 3))).shape
        (1, 4, 4, 8)
    """

    _n, _op = 2, staticmethod(mx.conv2d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1,
                 bias: bool = True) -> None:
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                    bias)


class Conv3d(_Conv):
    """3-D convolution over `(N, D, H, W, C_in)` inputs; sizes are ints or triples.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Conv3d(2, 4, 3)(mx.ones((1, 5, 5, 5, 2))).shape
        (1, 3, 3, 3, 4)
    """

    _n, _op = 3, staticmethod(mx.conv3d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, bias: bool = True) -> None:
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, 1, bias)


class ConvTranspose1d(_Conv):
    """1-D transposed convolution over `(N, L, C_in)` inputs.

    Args:
        in_channels: input channels.
        out_channels: output channels.
        kernel_size: the kernel length.
        stride: the stride.
        padding: the padding of the equivalent convolution.
        dilation: the kernel dilation.
        output_padding: extra size added to one side of the output.
        bias: whether to add a bias (zeros).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.ConvTranspose1d(3, 2, 3, stride=2)(mx.ones((1, 4, 3))).shape
        (1, 9, 2)
    """

    _n, _op, _transpose = 1, staticmethod(mx.conv_transpose1d), True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, dilation: int = 1, output_padding: int = 0,
                 bias: bool = True) -> None:
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, 1, bias,
                    output_padding)


class ConvTranspose2d(_Conv):
    """2-D transposed convolution over `(N, H, W, C_in)` inputs.

    2-D transposed convolution over `(N, H, W, C_in)` inputs (arguments as
    `ConvTranspose1d`, ints or pairs).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.ConvTranspose2d(3, 2, 2, stride=2)(mx.ones((1, 4, 4, 3))).shape
        (1, 8, 8, 2)
    """

    _n, _op, _transpose = 2, staticmethod(mx.conv_transpose2d), True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, output_padding: Any = 0,
                 bias: bool = True) -> None:
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, 1, bias,
                    output_padding)


class ConvTranspose3d(_Conv):
    """3-D transposed convolution over `(N, D, H, W, C_in)` inputs.

    3-D transposed convolution over `(N, D, H, W, C_in)` inputs (arguments as
    `ConvTranspose1d`, ints or triples).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.ConvTranspose3d(2, 2, 2, stride=2)(mx.ones((1, 2, 2, 2, 2))).shape
        (1, 4, 4, 4, 2)
    """

    _n, _op, _transpose = 3, staticmethod(mx.conv_transpose3d), True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, output_padding: Any = 0,
                 bias: bool = True) -> None:
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, 1, bias,
                    output_padding)
