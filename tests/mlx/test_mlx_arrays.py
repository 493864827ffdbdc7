"""Array behaviours of mlx.core (issue 12, item 3): equality with non-arrays, conversions,
construction from other objects, printing, dtype information, NumPy functions on arrays."""

from __future__ import annotations

import array as pyarray

import ml_dtypes
import numpy as np
import pytest

import nuvec as mx

ALL = [mx.bool_, mx.uint8, mx.uint16, mx.uint32, mx.uint64, mx.int8, mx.int16, mx.int32,
       mx.int64, mx.float16, mx.bfloat16, mx.float32, mx.float64, mx.complex64]


@pytest.mark.parametrize("other", [[1, 2, 3], (1, 2, 3), [1, 2, 4], "abc", None])
def test_equality_with_non_arrays_is_false(other):
    a = mx.array([1, 2, 3])
    assert (a == other) is False
    assert (a != other) is True


def test_float_of_size_one_arrays():
    with pytest.raises(TypeError, match=r"^float\(\): a complex array"):  # as MLX 0.32
        float(mx.array(1.5 + 2.0j))
    assert complex(mx.array(1.5 + 2.0j)) == 1.5 + 2.0j
    assert float(mx.array([[2]])) == 2.0 and int(mx.array([3.7])) == 3
    with pytest.raises(TypeError, match=r"^float\(\): only size-1 arrays"):
        float(mx.array([1.0, 2.0]))


def test_construction_from_lists_of_arrays():
    x, y = mx.array([1.0], mx.float16), mx.array([2], mx.int32)
    z = mx.array([x, y])
    assert z.shape == (2, 1) and z.dtype is mx.float16
    mixed = mx.array([[mx.array(1), 2], [3, mx.array(4)]])
    assert mixed.tolist() == [[1, 2], [3, 4]]
    assert mx.grad(lambda v: (2 * mx.array([v, mx.array([2.0])])).sum())(x).tolist() == [2.0]


@pytest.mark.parametrize("data, dtype, values", [
    (b"ab\x00", mx.uint8, [97, 98, 0]),
    (bytearray(b"\x01\x02"), mx.uint8, [1, 2]),
    (memoryview(np.arange(3, dtype=np.int16)), mx.int16, [0, 1, 2]),
    (pyarray.array("f", [1.5, 2.5]), mx.float32, [1.5, 2.5]),
    (pyarray.array("q", [-1, 2**40]), mx.int64, [-1, 2**40]),
])
def test_construction_from_buffers(data, dtype, values):
    a = mx.array(data)
    assert a.dtype is dtype and a.tolist() == values


class _Wrapped:
    """An array-like class using MLX's `__mlx_array__` protocol."""

    def __init__(self, value):
        self.value = value

    def __mlx_array__(self):
        return self.value


def test_objects_with_mlx_array_convert_as_arrays():
    w = _Wrapped(mx.array([1, 2], mx.int8))
    assert mx.array(w).dtype is mx.int8 and mx.array(w).tolist() == [1, 2]
    assert mx.array(w, mx.float32).dtype is mx.float32 and mx.asarray(w).tolist() == [1, 2]
    assert mx.add(w, 1).dtype is mx.int8  # an array operand: the Python scalar stays weak
    assert mx.add(w, mx.array([1], mx.int16)).dtype is mx.int16
    assert (mx.array([1.5, 1.5]) + w).tolist() == [2.5, 3.5] and mx.sum(w).item() == 3
    with pytest.raises(TypeError, match="^array: _Wrapped.__mlx_array__ must return an array, "
                                        "got list"):
        mx.array(_Wrapped([1]))
    with pytest.raises(TypeError, match="^add: _Wrapped.__mlx_array__ must return an array"):
        mx.add(_Wrapped(3), 1)


def test_repr_summarises_long_arrays():
    assert repr(mx.array([1] * 6)) == "array([1, 1, 1, 1, 1, 1], dtype=int32)"
    assert repr(mx.array([1] * 7)) == "array([1, 1, 1, ..., 1, 1, 1], dtype=int32)"
    rows = repr(mx.array([[1, 2]] * 7)).split("\n")
    assert rows[3] == "       ...," and len(rows) == 7
    assert repr(mx.arange(2000)) == "array([0, 1, 2, ..., 1997, 1998, 1999], dtype=int32)"


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
def test_dtype_names_and_sizes(dtype):
    np_name = "bool" if dtype is mx.bool_ else dtype.name
    assert str(dtype) == f"nuvec.{np_name}"
    expected = ml_dtypes.bfloat16 if dtype is mx.bfloat16 else np.dtype(np_name)
    assert dtype.size == np.dtype(expected).itemsize


@pytest.mark.parametrize("dtype", [d for d in ALL if d.kind in "fc"], ids=lambda d: d.name)
def test_finfo_on_every_inexact_dtype(dtype):
    info = mx.finfo(dtype)
    ref = ml_dtypes.finfo(ml_dtypes.bfloat16) if dtype is mx.bfloat16 else np.finfo(
        np.float32 if dtype is mx.complex64 else dtype.name)
    assert (info.min, info.max, info.eps) == (float(ref.min), float(ref.max), float(ref.eps))
    assert info.dtype is (mx.float32 if dtype is mx.complex64 else dtype) or info.dtype is dtype


@pytest.mark.parametrize("dtype", [d for d in ALL if d.kind in "iu"], ids=lambda d: d.name)
def test_iinfo_on_every_integer_dtype(dtype):
    info, ref = mx.iinfo(dtype), np.iinfo(dtype.name)
    assert (info.min, info.max) == (int(ref.min), int(ref.max))


def test_result_type_and_can_cast_with_complex():
    assert mx.result_type(mx.complex64, mx.float64) is mx.complex64
    assert mx.result_type(mx.array([1], mx.int8), 1.0) is mx.float32
    assert mx.result_type(mx.array([1j]), mx.bfloat16) is mx.complex64
    assert mx.can_cast(mx.float32, mx.complex64)
    assert not mx.can_cast(mx.complex64, mx.float32)
    for d in ALL:
        assert mx.can_cast(d, d)


def test_numpy_functions_on_arrays():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = mx.array(x)
    assert np.all(a > -1) and not np.any(a > 10)
    np.testing.assert_array_equal(np.sum(a, axis=0), x.sum(axis=0))
    np.testing.assert_allclose(np.mean(a, axis=1), x.mean(axis=1))
    np.testing.assert_allclose(np.std(a), x.std())
    np.testing.assert_array_equal(np.max(a, axis=1, keepdims=True), x.max(1, keepdims=True))
    np.testing.assert_allclose(a, x)
    np.testing.assert_allclose(a, mx.array(x))
    out = np.empty(3, np.float32)
    np.sum(a, axis=0, out=out)  # NumPy's own keywords reach NumPy
    np.testing.assert_array_equal(out, x.sum(0))
    np.testing.assert_array_equal(np.concatenate([a, a]), np.concatenate([x, x]))
