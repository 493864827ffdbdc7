"""The depthwise conv1d and paged_write kernels in the emulator against their fallbacks."""

import numpy as np
import pytest
from kernel_checks import DTYPES, check, random

from nuvec.fast.conv import DepthwiseConv1d
from nuvec.fast.paged import PagedWrite

DT = list(DTYPES)


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("stride,padding,dilation", [(1, 0, 1), (2, 3, 1), (1, 2, 3)])
def test_depthwise_conv1d(dtype, stride, padding, dilation):
    x, w = random((2, 19, 7), dtype), random((7, 4, 1), dtype, 1)
    check(DepthwiseConv1d(stride, padding, dilation), x, w)


def test_depthwise_conv1d_one_tap_many_channels():
    check(DepthwiseConv1d(1, 0, 1), random((1, 3, 300), "float32"), random((300, 1, 1),
                                                                           "float32", 1))


@pytest.mark.parametrize("dtype", DT)
def test_paged_write(dtype):
    cache, new = random((4, 3, 8, 5), dtype), random((6, 3, 5), dtype, 1)
    # Distinct slots, with some out of range (dropped).
    slots = np.array([0, 31, 9, -1, 32, 17], np.int32)
    check(PagedWrite(), cache, new, slots, tol=(0.0, 0.0))
