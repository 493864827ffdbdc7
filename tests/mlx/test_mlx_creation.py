"""Creation, shape and argument behaviours of mlx.core (issue 12, item 3), against NumPy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nuvec as mx


@pytest.mark.parametrize("args, dtype", [
    ((2**31, 2**31 + 3), mx.int64),
    ((-(2**31) - 2, -(2**31) + 1), mx.int64),
    ((0, 10, 2**40), mx.int64),
    ((5,), mx.int32),
    ((0.5, 3), mx.float32),
])
def test_arange_infers_int64_when_bounds_need_it(args, dtype):
    got = mx.arange(*args)
    assert got.dtype is dtype
    np.testing.assert_array_equal(np.asarray(got), np.arange(*args))


@pytest.mark.parametrize("call, error, message", [
    (lambda: mx.arange(), TypeError, "^arange: stop must be an int or a float, got NoneType"),
    (lambda: mx.arange("3"), TypeError, "^arange: stop must be an int or a float, got str"),
    (lambda: mx.arange(0, 3, 0), ValueError, "^arange: cannot compute the length"),
    (lambda: mx.arange(3, dtype=mx.bool_), ValueError, "^arange: bool is not supported"),
    # MLX's forms are arange(start, stop, step) and arange(stop, step): start= needs a stop
    (lambda: mx.arange(start=1), TypeError, "^arange: start=1 needs a stop"),
    (lambda: mx.arange(start=1, step=2), TypeError, "^arange: start=1 needs a stop"),
    (lambda: mx.arange(1, 4, start=0), TypeError, "^arange: the start is given twice"),
])
def test_arange_overload_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("num", [1, 4, 7])
def test_linspace_endpoint(num):
    for endpoint in (True, False):
        np.testing.assert_allclose(np.asarray(mx.linspace(-1, 2, num, endpoint=endpoint)),
                                   np.linspace(-1, 2, num, endpoint=endpoint), rtol=1e-6,
                                   atol=1e-6)


def test_eye_of_zero_rows():
    assert mx.eye(0).shape == (0, 0) and mx.eye(0, 3).shape == (0, 3)
    assert mx.identity(0).shape == (0, 0)


@pytest.mark.parametrize("mode", ["reflect", "symmetric", "edge", "constant"])
@pytest.mark.parametrize("width", [1, (2, 3), ((1, 0), (4, 2))])
def test_pad_modes(mode, width):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(np.asarray(mx.pad(mx.array(x), width, mode)),
                                  np.pad(x, width, mode=mode))


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
def test_pad_mirror_gradient(mode):
    x = np.arange(5, dtype=np.float32)
    w = np.arange(9, dtype=np.float32)
    g = mx.grad(lambda a: (mx.pad(a, 2, mode) * mx.array(w)).sum())(mx.array(x))
    # each input receives the weights of every output position that reads it
    index = np.pad(np.arange(5), 2, mode=mode)
    np.testing.assert_array_equal(np.asarray(g), np.bincount(index, weights=w, minlength=5))


def test_meshgrid_returns_a_tuple():
    grids = mx.meshgrid(mx.arange(3), mx.arange(2), indexing="ij")
    assert isinstance(grids, tuple) and len(grids) == 2
    ref = np.meshgrid(np.arange(3), np.arange(2), indexing="ij")
    for g, r in zip(grids, ref):
        np.testing.assert_array_equal(np.asarray(g), r)
    assert isinstance(mx.meshgrid(mx.arange(2), sparse=True), tuple)


def test_roll_with_per_axis_shifts():
    x = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(np.asarray(mx.roll(mx.array(x), (1, -2), axis=(0, 1))),
                                  np.roll(x, (1, -2), axis=(0, 1)))


def test_like_constructors_take_a_dtype():
    a = mx.array([1.5, 2.5])
    assert mx.zeros_like(a, mx.int32).tolist() == [0, 0]
    assert mx.zeros_like(a, mx.int32).dtype is mx.int32
    assert mx.ones_like(a, dtype=mx.bfloat16).dtype is mx.bfloat16
    assert mx.full_like(a, 7).tolist() == [7.0, 7.0] and mx.full_like(a, 7).dtype is mx.float32
    assert mx.full_like(a, mx.array([1, 2]), mx.int8).tolist() == [1, 2]
    with pytest.raises(ValueError, match="cannot be broadcast together"):
        mx.full_like(a, mx.array([1, 2, 3]))


@pytest.mark.parametrize("call, error, message", [
    (lambda: mx.put_along_axis(mx.zeros(4), mx.array([[0]]), mx.array([1.0]), axis=0),
     ValueError, "^put_along_axis: indices of shape"),
    (lambda: mx.take(mx.zeros(4), mx.array([0.5])), TypeError, "^take: indices must be integers"),
    (lambda: mx.take(mx.zeros(4), mx.array([0]), axis=2), ValueError, "^take: axis 2"),
    (lambda: mx.searchsorted(mx.ones((2, 2)), mx.array([1.0])), ValueError,
     "^searchsorted: a must be 1-D"),
])
def test_argument_checks(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_kron_of_different_ranks():
    a, b = np.arange(1, 3), np.arange(4).reshape(2, 2)
    np.testing.assert_array_equal(np.asarray(mx.kron(mx.array(a), mx.array(b))), np.kron(a, b))


def test_integer_power_with_negative_exponents():
    """MLX truncates: 2**-1 == 0, 1**-n == 1, (-1)**-n == +-1 (NumPy raises)."""
    got = mx.power(mx.array([2, 1, -1, -1, 3]), mx.array([-1, -2, -3, -2, 0]))
    assert got.tolist() == [0, 1, -1, 1, 1] and got.dtype is mx.int32


def test_fp8_round_trip_against_ml_dtypes():
    x = np.concatenate([np.linspace(-500, 500, 4001, dtype=np.float32),
                        np.array([0.0, -0.0, np.nan, 2**-9, 3 * 2**-10, 1e-7], np.float32)])
    ref = np.clip(x, -448, 448).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    got = mx.to_fp8(mx.array(x))
    assert got.dtype is mx.uint8
    np.testing.assert_array_equal(np.asarray(got), ref)
    codes = np.arange(256, dtype=np.uint8)
    back = mx.from_fp8(mx.array(codes), mx.float32)
    np.testing.assert_array_equal(np.asarray(back),
                                  codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32))
    assert mx.from_fp8(mx.array(codes)).dtype is mx.bfloat16
    with pytest.raises(TypeError, match="^from_fp8: expected a uint8 array"):
        mx.from_fp8(mx.array([1.0]))
    with pytest.raises(TypeError, match="^to_fp8: expected a real number array"):
        mx.to_fp8(mx.array([1j]))


SCAN_DTYPES = [mx.bool_, mx.uint8, mx.int16, mx.int32, mx.int64, mx.uint64, mx.float16,
               mx.bfloat16, mx.float32, mx.float64, mx.complex64]


SCANS = [(name, d) for name in ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")
         for d in SCAN_DTYPES
         if not (d is mx.complex64 and name in ("cummax", "cummin"))]  # no complex ordering


@pytest.mark.parametrize("name, dtype", SCANS, ids=[f"{n}-{d.name}" for n, d in SCANS])
def test_scans_over_every_dtype(name, dtype):
    x = np.array([1, 0, 1, 1], np.float64)  # representable in every dtype, bool included
    a = mx.array(x).astype(dtype)
    got = getattr(mx, name)(a)
    ref = {"cumsum": np.cumsum, "cumprod": np.cumprod, "cummax": np.maximum.accumulate,
           "cummin": np.minimum.accumulate,
           "logcumsumexp": lambda v: np.logaddexp.accumulate(v)}[name](x)
    tol = 1e-2 if dtype in (mx.float16, mx.bfloat16) else 1e-6
    np.testing.assert_allclose(np.asarray(got.astype(mx.float64)) if dtype is not mx.complex64
                               else np.asarray(got).real, ref, rtol=tol, atol=tol)


def test_topk_takes_k_through_index():
    a = mx.array([3.0, 1.0, 4.0, 2.0])
    assert sorted(mx.topk(a, mx.array(2)).tolist()) == [3.0, 4.0]
    assert sorted(mx.topk(a, np.int64(1)).tolist()) == [4.0]
    with pytest.raises(TypeError, match="^topk: k must be an int, got float"):
        mx.topk(a, 1.0)
