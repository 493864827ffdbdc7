"""The namespace's `conv1d`, and the depthwise 1-D convolution as a fused op.

`conv1d` with `groups` equal to the channels records `DepthwiseConv1d` through
`depthwise_conv1d` once it has validated its arguments (the fallback is the general grouped
convolution); any other `conv1d` is `nuvec.ops.conv`'s general convolution.
"""

from __future__ import annotations

from typing import Any

from nuvec.fast.base import FastOp, mx, one
from nuvec.graph.array import Array
from nuvec.graph.device import stream as stream_context, to_stream
from nuvec.ops.conv import conv_inputs, conv_nd, int_params

__all__ = ["conv1d"]


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


def conv1d(input: Any, weight: Any, /, stride: int = 1, padding: int = 0, dilation: int = 1,
           groups: int = 1, *, stream: Any = None) -> Array:
    """1-D convolution (a correlation, as in MLX) over `[N, L, C_in]` with `[C_out, K, C_in /
    groups]` weights; returns `[N, L_out, C_out]`.

    Args:
        input: `[N, L, C_in]` floating-point input.
        weight: `[C_out, K, C_in / groups]` filters.
        stride, padding, dilation: the output step, the zeros added on each side and
            the tap spacing, each an int.
        groups: the number of channel groups.
        stream: the stream (or device) to record on.

    Raises:
        ValueError: for wrong ranks, channels, groups or parameters.
        TypeError: for non-floating inputs.

    Example:
        >>> import nuvec as mx
        >>> mx.conv1d(mx.ones((1, 5, 2)), mx.ones((3, 3, 2)), padding=1).shape
        (1, 5, 3)
    """
    if (isinstance(groups, int) and groups > 1 and isinstance(input, Array)
            and groups == input.shape[-1]):
        return _depthwise(input, weight, stride, padding, dilation, groups, stream)
    return conv_nd("conv1d", 1, input, weight, stride, padding, dilation, groups, stream)


def _depthwise(input, weight, stride, padding, dilation, groups, stream) -> Array:
    """One filter per channel: recorded as the fused `DepthwiseConv1d` (issue 5); its fallback
    is `conv_general`, never `conv1d`, so the two never call each other in a loop."""
    s = to_stream(stream)
    x, w, _ = conv_inputs("conv1d", input, weight, 1, groups, s)
    stride, padding, dilation = (
        int_params("conv1d", name, value, 1, low)[0]
        for name, value, low in (("stride", stride, 1), ("padding", padding, 0),
                                 ("dilation", dilation, 1))
    )
    if w.shape[0] != x.shape[-1]:  # several filters per channel: the general grouped form
        return conv_nd("conv1d", 1, x, w, stride, padding, dilation, groups, s)
    if x.shape[1] + 2 * padding < dilation * (w.shape[1] - 1) + 1 or w.shape[1] == 0:
        raise ValueError(f"conv1d: the padded input ({x.shape[1] + 2 * padding},) is smaller "
                         f"than the dilated kernel ({w.shape[1]},)")
    with stream_context(s):
        return depthwise_conv1d(x, w, stride, padding, dilation)
