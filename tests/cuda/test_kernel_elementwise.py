"""The depthwise conv1d and paged_write kernels in the emulator against their fallbacks."""

import numpy as np
import pytest
from kernel_checks import DTYPES, RUNNER, check, random
from nuvec.backends.cuda.launchers import elementwise
from nuvec.fast.base import run_on_cpu

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


def test_paged_write_in_place_into_a_given_up_cache():
    cache, new = random((4, 3, 8, 5), "float32"), random((2, 3, 5), "float32", 1)
    slots = np.array([3, 20], np.int32)
    want = run_on_cpu([cache, new, slots], PagedWrite().fallback)[0]
    given = cache.copy()
    got = elementwise.paged_write(RUNNER, PagedWrite(), given, new, slots, out=given)
    assert got is given
    np.testing.assert_array_equal(got, want)
    other = np.zeros_like(cache)  # not the cache: ignored, the cache is copied
    got = elementwise.paged_write(RUNNER, PagedWrite(), cache, new, slots, out=other)
    assert got is not other and not other.any()
    np.testing.assert_array_equal(got, want)
