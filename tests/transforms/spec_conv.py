"""Rule rows for convolutions (`nuvec.ops.conv`): every row records `Convolution`."""

from __future__ import annotations

import nuvec as mx
from nuvec.ops.conv import Convolution
from nuvec.testing import OpSpec


def _shapes(*shapes):
    return lambda rng: [rng.standard_normal(s) for s in shapes]


SPECS = [
    OpSpec("conv1d", lambda x, w: mx.conv1d(x, w, stride=2, padding=1, dilation=2),
           _shapes((2, 9, 3), (4, 3, 3)), covers=[Convolution]),
    OpSpec("conv2d_groups", lambda x, w: mx.conv2d(x, w, stride=(2, 1), padding=1, groups=2),
           _shapes((1, 6, 5, 4), (4, 3, 2, 2)), covers=[Convolution]),
    OpSpec("conv3d", lambda x, w: mx.conv3d(x, w, padding=(1, 0, 0)),
           _shapes((1, 3, 4, 3, 2), (2, 2, 2, 2, 2)), covers=[Convolution]),
    OpSpec("conv_general_all",
           lambda x, w: mx.conv_general(x, w, stride=(2, 1), padding=([1, 0], [2, -1]),
                                        kernel_dilation=(1, 2), input_dilation=(2, 1),
                                        groups=2, flip=True),
           _shapes((2, 5, 6, 4), (6, 3, 2, 2)), covers=[Convolution]),
    OpSpec("conv_transpose1d",
           lambda x, w: mx.conv_transpose1d(x, w, stride=2, padding=1, output_padding=1),
           _shapes((2, 4, 3), (2, 3, 3)), covers=[Convolution]),
    OpSpec("conv_transpose2d_groups",
           lambda x, w: mx.conv_transpose2d(x, w, stride=2, dilation=(1, 2), groups=2),
           _shapes((1, 3, 3, 4), (4, 2, 2, 2)), covers=[Convolution]),
]
