"""One test per entry of docs/numpy-differences.md: NumPy's behaviour, then nuvec's (MLX's)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nuvec as mx


def test_float64_data_becomes_float32():
    assert np.array(np.zeros(3)).dtype == np.float64
    assert mx.array(np.zeros(3)).dtype is mx.float32
    assert mx.array([1.5]).dtype is mx.float32
    assert mx.array(np.zeros(3), mx.float64).dtype is mx.float64


def test_python_ints_become_int32():
    assert np.array([1, 2]).dtype == np.int64
    assert mx.array([1, 2]).dtype is mx.int32
    assert mx.array([2**40]).dtype is mx.int64


def test_float_constructors_default_to_float32():
    assert np.zeros(2).dtype == np.float64 and np.linspace(0, 1, 3).dtype == np.float64
    for made in (mx.zeros((2,)), mx.ones(2), mx.full((2,), 1.5), mx.eye(2), mx.arange(0.5, 2),
                 mx.linspace(0, 1, 3)):
        assert made.dtype is mx.float32


def test_integer_linspace_truncates():
    assert np.linspace(-2, 3, 7, dtype=np.int32).tolist()[:3] == [-2, -2, -1]
    assert mx.linspace(-2, 3, 7, mx.int32).tolist()[:3] == [-2, -1, 0]


def test_weak_python_scalars():
    assert (np.array([1], np.int32) + 1.5).dtype == np.float64
    assert (mx.array([1], mx.int32) + 1.5).dtype is mx.float32
    assert (np.array([True]) + 1).dtype == np.int64
    assert (mx.array([True]) + 1).dtype is mx.int32
    assert (mx.array([1], mx.float16) * 2.0).dtype is mx.float16


def test_out_of_range_scalar_raises():
    with pytest.raises(OverflowError):
        np.array([1], np.int8) + 1000
    assert (np.array([1], np.uint8) == 256).tolist() == [False]
    with pytest.raises(ValueError, match="^add: the Python int 1000 does not fit in int8"):
        mx.array([1], mx.int8) + 1000
    with pytest.raises(ValueError, match="^equal: the Python int 256 does not fit in uint8"):
        mx.array([1], mx.uint8) == 256


def test_int_plus_float32_is_float32():
    assert (np.array([1], np.int32) + np.array([1], np.float32)).dtype == np.float64
    assert (mx.array([1], mx.int32) + mx.array([1.5])).dtype is mx.float32
    assert (mx.array([1], mx.int64) * mx.array([1.5])).dtype is mx.float32


def test_int_plus_float16_is_float16():
    assert (np.array([1], np.int32) + np.array([1], np.float16)).dtype == np.float64
    assert (mx.array([1], mx.int32) + mx.array([1], mx.float16)).dtype is mx.float16
    assert (mx.array([1], mx.int64) + mx.array([1], mx.bfloat16)).dtype is mx.bfloat16


def test_int64_plus_uint64_is_float32():
    assert (np.array([1], np.int64) + np.array([1], np.uint64)).dtype == np.float64
    assert (mx.array([1], mx.int64) + mx.array([1], mx.uint64)).dtype is mx.float32


def test_float64_plus_complex64_is_complex64():
    assert (np.array([1.0]) + np.array([1j], np.complex64)).dtype == np.complex128
    assert (mx.array([1.0], mx.float64) + mx.array([1j])).dtype is mx.complex64


def test_int_division_and_functions_give_float32():
    a = np.array([1, 3], np.int32)
    assert (a / a).dtype == np.float64 and np.exp(a).dtype == np.float64
    b = mx.array([1, 3])
    assert (b / 2).dtype is mx.float32 and (b / 2).tolist() == [0.5, 1.5]
    assert mx.exp(b).dtype is mx.float32 and mx.sqrt(b).dtype is mx.float32


def test_integer_division_by_zero_is_quiet():
    with pytest.warns(RuntimeWarning):
        np.floor_divide(np.array([1]), np.array([0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (mx.array([1]) // mx.array([0])).tolist() == [0]
        assert (mx.array([1]) % mx.array([0])).tolist() == [0]


def test_negative_integer_power():
    with pytest.raises(ValueError):
        np.array([2]) ** np.array([-1])
    assert (mx.array([2, 1, -1]) ** mx.array([-1, -3, -3])).tolist() == [0, 1, -1]


def test_bool_subtract():
    with pytest.raises(TypeError):
        np.array([True]) - np.array([True])
    got = mx.array([True, True, False]) - mx.array([True, False, False])
    assert got.dtype is mx.bool_ and got.tolist() == [False, True, False]


def test_float_domain_errors_are_quiet():
    with pytest.warns(RuntimeWarning):
        np.log(np.array([0.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mx.log(mx.array([0.0])).tolist() == [-float("inf")]
        assert np.isnan(mx.divide(mx.array([0.0]), 0.0).item())


def test_in_place_operators_change_dtype():
    a = np.array([1, 2], np.int32)
    with pytest.raises(TypeError):  # NumPy's UFuncTypeError: cannot cast float64 to int32
        a += 1.5
    b = mx.array([1, 2])
    b += 1.5
    assert b.dtype is mx.float32 and b.tolist() == [2.5, 3.5]
    c = mx.array([1, 2])
    with pytest.raises(ValueError, match="^divide: in-place division"):
        c /= 2


def test_compare_with_none():
    a = mx.array([1, 2])
    assert (a == None) is False  # noqa: E711
    assert (a != None) is True  # noqa: E711


def test_small_integer_sums_are_int32():
    assert np.sum(np.array([1, 2], np.int8)).dtype == np.int64
    assert mx.sum(mx.array([1, 2], mx.int8)).dtype is mx.int32
    assert mx.sum(mx.array([True, True])).dtype is mx.int32
    assert mx.prod(mx.array([1, 2], mx.uint8)).dtype is mx.uint32


def test_arg_reductions_are_uint32():
    assert np.argmax(np.array([1.0, 3.0])).dtype == np.int64
    assert mx.argmax(mx.array([1.0, 3.0])).dtype is mx.uint32
    assert mx.argmin(mx.array([1.0, 3.0])).dtype is mx.uint32
    assert mx.argsort(mx.array([3.0, 1.0])).dtype is mx.uint32


def test_integer_mean_is_float32():
    assert np.mean(np.array([1, 2])).dtype == np.float64
    assert mx.mean(mx.array([1, 2])).dtype is mx.float32


def test_boolean_array_index_is_rejected():
    x = np.arange(3.0)
    assert x[np.array([True, False, True])].tolist() == [0.0, 2.0]
    with pytest.raises(ValueError, match="getitem"):
        mx.array(x)[mx.array([True, False, True])]


def test_out_of_range_index_array_fails_at_eval():
    with pytest.raises(IndexError):
        np.zeros(3)[np.array([5])]
    picked = mx.zeros((3,))[mx.array([5])]  # recorded without error
    with pytest.raises(mx.EvaluationError, match="out of bounds"):
        mx.eval(picked)


def test_dynamic_slice_clamps_start():
    out = mx.slice(mx.arange(5), mx.array([4]), [0], [3])
    assert out.tolist() == [2, 3, 4]


def test_every_documented_difference_has_a_test():
    import re
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "numpy-differences.md").read_text()
    names = re.findall(r"\(`(test_\w+)`\)", doc)
    assert len(names) >= 14
    assert not [n for n in names if n not in globals()], "documented without a test"
