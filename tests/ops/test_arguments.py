"""The argument helpers every op validates with: shapes as tuples of Python ints, arrays
passed through, the same errors on every path."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from nuvec.ops.arguments import as_array, check_shape, int_tuple


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
