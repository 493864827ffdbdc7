"""The depthwise 1-D convolution (`conv1d` with `groups` equal to the channels) as a fused op.

`nuvec.ops.conv.conv1d` records it through `depthwise_conv1d` once it has validated its
arguments; the fallback is the general grouped convolution.
"""

from __future__ import annotations

from nuvec.graph.array import Array
from nuvec.fast.base import FastOp, mx, one

__all__: list[str] = []


class DepthwiseConv1d(FastOp):
    """`(x, w)`: `x [N, L, C]` convolved with `w [C, K, 1]`, one filter per channel."""

    __slots__ = ("stride", "padding", "dilation")
    op = "conv1d"

    def __init__(self, stride: int, padding: int, dilation: int):
        self.stride, self.padding, self.dilation = int(stride), int(padding), int(dilation)

    def params(self):
        return (self.stride, self.padding, self.dilation)

    def arity(self, inputs):
        return 2

    def valid(self, inputs):
        x, w = inputs
        if x.ndim != 3 or w.ndim != 3:
            return False
        span = self.dilation * (w.shape[1] - 1) + 1
        return (
            w.dtype is x.dtype
            and w.shape[0] == x.shape[2]
            and w.shape[2] == 1
            and w.shape[1] >= 1
            and self.stride > 0
            and self.dilation > 0
            and x.shape[1] + 2 * self.padding >= span
        )

    def specs(self, inputs):
        x, w = inputs
        length = (x.shape[1] + 2 * self.padding - self.dilation * (w.shape[1] - 1) - 1)
        return [((x.shape[0], length // self.stride + 1, x.shape[2]), x.dtype)]

    def fallback(self, inputs):
        x, w = inputs
        return [mx().conv_general(x, w, stride=self.stride, padding=self.padding,
                                  kernel_dilation=self.dilation, groups=x.shape[2])]


def depthwise_conv1d(x: Array, weight: Array, stride: int, padding: int,
                     dilation: int) -> Array:
    """Records a validated depthwise `conv1d` (`x [N, L, C]`, `weight [C, K, 1]`).

    Args:
        x: input `[N, L, C]`.
        weight: one filter per channel, `[C, K, 1]`, of `x`'s dtype.
        stride, padding, dilation: as `conv1d`'s.

    Returns:
        `[N, L_out, C]` in `x`'s dtype.
    """
    return one(DepthwiseConv1d(stride, padding, dilation), [x, weight])
