"""The BLAS binding (`nuvec.backends.numpy.blas`): `axpy` and `axpby` against float64, and
every layout they must refuse left untouched."""

from __future__ import annotations

import numpy as np
import pytest

from nuvec.backends.numpy import blas

pytestmark = pytest.mark.skipif(not blas.available(), reason="no OpenBLAS with known names")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 7, 10001, 70000])
def test_axpy_is_the_exact_value_rounded_at_most_twice(dtype, n):
    """Fused multiply-adds round once, a loop without them rounds the product and then the sum
    (OpenBLAS's Haswell kernels on an AMD Zen 3 for short vectors and loop tails): either way
    within half an ulp of the product and half an ulp of the result."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(dtype)
    y = rng.standard_normal(n).astype(dtype)
    alpha = dtype(-0.37)
    wide = np.longdouble  # 64-bit significands on x86: exact float32 products, near float64's
    exact = wide(alpha) * x.astype(wide) + y.astype(wide)
    product = np.abs(wide(alpha) * x.astype(wide))
    assert blas.axpy(float(alpha), x, y)
    # what the reference itself may miss, beyond the two roundings
    slack = (np.spacing(np.abs(y)).astype(wide) / 2 + np.spacing(np.abs(alpha * x)) / 2
             + product * wide(2.0) ** -62)
    assert np.all(np.abs(y.astype(wide) - exact) <= slack)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 7, 10001])
def test_axpby_is_the_exact_value_rounded_at_most_thrice(dtype, n):
    """`alpha x + beta y`: each product and the sum rounded at most once."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(dtype)
    y = rng.standard_normal(n).astype(dtype)
    alpha, beta = dtype(1.25), dtype(-0.37)
    wide = np.longdouble
    exact = wide(alpha) * x.astype(wide) + wide(beta) * y.astype(wide)
    slack = (np.spacing(np.abs(exact.astype(dtype))).astype(wide) / 2
             + np.spacing(np.abs(alpha * x)) / 2 + np.spacing(np.abs(beta * y)) / 2
             + (np.abs(x) + np.abs(y)).astype(wide) * wide(2.0) ** -60)
    assert blas.axpby(float(alpha), x, float(beta), y)
    assert np.all(np.abs(y.astype(wide) - exact) <= slack)


def test_axpby_refuses_what_axpy_refuses():
    x = np.arange(8, dtype=np.float32)
    for y in (np.ones(8, np.float64), np.ones(9, np.float32), np.ones(16, np.float32)[::2]):
        before = y.copy()
        assert not blas.axpby(1.0, x, 2.0, y)  # dtypes or sizes differ, strided
        np.testing.assert_array_equal(y, before)
    before = x.copy()
    assert not blas.axpby(1.0, x[:7], 2.0, x[1:])  # overlapping
    np.testing.assert_array_equal(x, before)


def test_axpy_takes_nd_arrays_in_place():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.ones((3, 4), np.float32)
    assert blas.axpy(2.0, x, y)
    np.testing.assert_array_equal(y, 2 * np.arange(12, dtype=np.float32).reshape(3, 4) + 1)


def _refused(x, y):
    before = y.copy()
    assert not blas.axpy(2.0, x, y)
    np.testing.assert_array_equal(y, before)


def test_axpy_refuses_what_it_cannot_compute_in_place():
    x = np.arange(8, dtype=np.float32)
    _refused(x, np.ones(8, np.float64))  # dtypes differ
    _refused(x.astype(np.float16), np.ones(8, np.float16))  # no half-type BLAS
    _refused(x.astype(np.int32), np.ones(8, np.int32))
    _refused(x, np.ones(9, np.float32))  # sizes differ
    _refused(x[::2], np.ones(4, np.float32))  # strided
    read_only = np.ones(8, np.float32)
    read_only.flags.writeable = False
    _refused(x, read_only)
    _refused(x, x)  # overlapping
    _refused(x[:7], x[1:])  # overlapping, shifted


def test_axpy_refuses_fortran_order_output():
    x = np.ones((3, 4), np.float32)
    _refused(x, np.ones((3, 4), np.float32, order="F"))
