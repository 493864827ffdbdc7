"""The argument helpers every op validates with: shapes as tuples of Python ints, arrays
passed through, the same errors on every path."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from nuvec.ops.arguments import as_array, bool_flag, check_shape, int_tuple


@pytest.mark.parametrize("values, expected", [
    ((2, 3), (2, 3)),
    ((), ()),
    ([2, 3], (2, 3)),
    (4, (4,)),
    (np.int64(4), (4,)),
    ((np.int32(2), 3), (2, 3)),
    ((True, 2), (1, 2)),
    (range(3), (0, 1, 2)),
])
def test_int_tuple_gives_python_ints(values, expected):
    out = int_tuple(values, "reshape", "shape")
    assert out == expected and type(out) is tuple
    assert all(type(v) is int for v in out)


@pytest.mark.parametrize("values", [(2, 3.0), (2.0,), "ab", None, (2, None)])
def test_int_tuple_rejects_what_is_not_an_integer(values):
    with pytest.raises(TypeError, match=r"^reshape: shape must be an int or a sequence of ints"):
        int_tuple(values, "reshape", "shape")


def test_check_shape_errors_in_order():
    assert check_shape((), "zeros") == () and check_shape((0, 2**31 - 1), "zeros") == (0, 2**31 - 1)
    with pytest.raises(ValueError, match=r"^zeros: negative dimensions are not allowed, got "
                                         r"\(-1, 4294967296\)"):
        check_shape((-1, 2**32), "zeros")
    with pytest.raises(ValueError, match=r"^zeros: shape dimension falls outside the supported "
                                         r"int32 range, got \(2, 2147483648\)"):
        check_shape((2, 2**31), "zeros")
    with pytest.raises(ValueError, match=r"^zeros: the shape \(2147483647, 2147483647\) has more"):
        check_shape((2**31 - 1, 2**31 - 1), "zeros")


class _Wrapped:
    def __init__(self, a):
        self.a = a

    def __mlx_array__(self):
        return self.a


def test_as_array_passes_arrays_and_converts_the_rest():
    a = mx.array([1.0, 2.0])
    assert as_array(a, "abs") is a
    assert as_array(_Wrapped(a), "abs") is a
    assert as_array([1, 2], "abs").dtype is mx.int32
    with pytest.raises(TypeError, match=r"^abs: _Wrapped.__mlx_array__ must return an array"):
        as_array(_Wrapped(3), "abs")


def test_array_like_is_the_mlx_array_protocol():
    # MLX's `ArrayLike` names objects with `__mlx_array__`; arrays and scalars are not such
    wrapped = _Wrapped(mx.array([1.0, 2.0]))
    assert isinstance(wrapped, mx.ArrayLike)
    assert not isinstance(mx.array(1.0), mx.ArrayLike) and not isinstance(1.0, mx.ArrayLike)
    assert mx.multiply(wrapped, 2).tolist() == [2.0, 4.0]


def test_bool_flag_takes_python_and_numpy_bools_only():
    assert bool_flag(True, "sum", "keepdims") is True
    assert bool_flag(np.bool_(False), "sum", "keepdims") is False
    for bad in ("no", 0, 1, None, 1.0, mx.array(True), np.int64(1)):
        with pytest.raises(TypeError, match=r"^sum: keepdims must be a bool, got "):
            bool_flag(bad, "sum", "keepdims")


# flags that a truth test read wrongly: a non-empty string was True
@pytest.mark.parametrize("call, message", [
    (lambda: mx.sum(mx.ones((2, 3)), axis=0, keepdims="no"),
     r"^sum: keepdims must be a bool, got 'no' \(str\)"),
    (lambda: mx.ones((2, 3)).sum(axis=0, keepdims=1), r"^sum: keepdims must be a bool, got 1"),
    (lambda: mx.argmax(mx.ones((2, 3)), keepdims=None), r"^argmax: keepdims must be a bool"),
    (lambda: mx.mean(mx.ones((2, 3)), keepdims="no"), r"^mean: keepdims must be a bool"),
    (lambda: mx.cumsum(mx.array([1, 2]), reverse="no"), r"^cumsum: reverse must be a bool"),
    (lambda: mx.cumprod(mx.array([1, 2]), inclusive=2), r"^cumprod: inclusive must be a bool"),
    (lambda: mx.linspace(0, 1, 3, endpoint="False"), r"^linspace: endpoint must be a bool"),
    (lambda: mx.linalg.svd(mx.eye(2), compute_uv="False"), r"^svd: compute_uv must be a bool"),
    (lambda: mx.linalg.cholesky(mx.eye(2), upper=mx.array(True)),
     r"^cholesky: upper must be a bool, got array\(True, dtype=bool\)"),
    (lambda: mx.isclose(mx.ones(2), mx.ones(2), equal_nan="yes"),
     r"^isclose: equal_nan must be a bool"),
    (lambda: mx.array(np.ones(2), copy="no"), r"^array: copy must be a bool, got 'no'"),
    (lambda: mx.fast.rope(mx.ones((1, 2, 4)), 4, traditional="no", base=1e4, scale=1.0,
                          offset=0), r"^rope: traditional must be a bool"),
    (lambda: mx.fft.stft(mx.ones((64,)), n_fft=16, onesided=1),
     r"^stft: onesided must be a bool, got 1"),
])
def test_flags_must_be_bools(call, message):
    with pytest.raises(TypeError, match=message):
        call()


def test_numpy_bool_flags_are_read_as_bools():
    x = mx.ones((2, 3))
    assert mx.sum(x, axis=0, keepdims=np.bool_(True)).shape == (1, 3)
    assert mx.cumsum(mx.array([1, 2, 3]), reverse=np.bool_(True)).tolist() == [6, 5, 3]
    assert mx.linspace(0, 1, 2, endpoint=np.bool_(False)).tolist() == [0.0, 0.5]


@pytest.mark.parametrize("call, message", [
    (lambda: mx.full((2,), float("nan"), dtype=mx.int32),
     r"^full: the Python float nan does not fit in int32"),
    (lambda: mx.full((2,), -float("inf"), mx.uint8), r"^full: the Python float -inf does not fit"),
    (lambda: mx.full((2,), np.float32("inf"), mx.uint64),
     r"^full: the float32 inf does not fit in uint64"),
    (lambda: mx.full((2,), 1e20, mx.int32), r"^full: the Python float 1e\+20 does not fit"),
    (lambda: mx.random.randint(float("nan"), 10), r"^randint: the Python float nan does not fit"),
    (lambda: mx.random.randint(0, float("inf")), r"^randint: the Python float inf does not fit"),
    (lambda: mx.pad(mx.ones((2,), mx.int32), 1, constant_values=float("nan")),
     r"^pad: the Python float nan does not fit in int32"),
])
def test_non_finite_floats_do_not_become_integers(call, message):
    # NaN or inf cast to an integer is INT_MIN (or undefined), never what was asked for
    with pytest.raises(ValueError, match=message):
        call()


def test_finite_floats_still_truncate_into_integer_dtypes():
    assert mx.full((2,), 1.5, mx.int32).tolist() == [1, 1]
    assert mx.full((2,), float("nan"), mx.bool_).tolist() == [True, True]
    assert mx.pad(mx.ones((1,), mx.int32), 1, constant_values=2.0).tolist() == [2, 1, 2]
