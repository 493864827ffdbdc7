"""Errors as MLX raises them (issue 12, item 2): each case states MLX's documented exception."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx


def test_dtype_error_is_both_type_and_value_error():
    assert issubclass(mx.DtypeError, TypeError) and issubclass(mx.DtypeError, ValueError)


@pytest.mark.parametrize("call, message", [
    (lambda: mx.bitwise_and(mx.array([1.0]), mx.array([1.0])),
     "^bitwise_and: only integer and boolean arrays are supported, got float32"),
    (lambda: mx.array(1.0) & mx.array(1), "^bitwise_and: only integer and boolean"),
    (lambda: mx.ceil(mx.array([1j])), "^ceil: not supported for complex64"),
    (lambda: mx.floor(mx.array([1j])), "^floor: not supported for complex64"),
    (lambda: mx.erf(mx.array([1j])), "^erf: not supported for complex64"),
    (lambda: mx.erfinv(mx.array([1j])), "^erfinv: not supported for complex64"),
    (lambda: mx.remainder(mx.array([1j]), 2), "^remainder: not supported for complex64"),
    (lambda: mx.ones(2).astype("not-a-dtype"), "^astype: unsupported dtype 'not-a-dtype'"),
    (lambda: mx.take(mx.ones(3), mx.array([0.5])), "^take: indices must be integers, got float32"),
    (lambda: mx.matmul(mx.ones((2, 2), mx.int32), mx.ones((2, 2), mx.int32)),
     "^matmul: only floating-point and complex types are supported, got int32, int32"),
    (lambda: mx.array([1.0]) * "hello", "^multiply: cannot convert str to an array"),
    (lambda: mx.array([1, 2]) < "hello", "^less: cannot compare an array with str"),
    (lambda: mx.array([1, 2]) >= [1, 2], "^greater_equal: cannot compare an array with list"),
    (lambda: mx.array([1, 2]) > (1, 2), "^greater: cannot compare an array with tuple"),
    (lambda: mx.vmap(lambda a, s: a * s)(mx.ones((2, 3)), 2.0),
     "^vmap: the arguments must be arrays or trees of arrays, got float"),
    (lambda: mx.vmap(lambda a: 1.0)(mx.ones(2)),
     "^vmap: the outputs must be arrays or trees of arrays, got float"),
    (lambda: mx.grad(lambda x: x)(1.0),
     "^grad: differentiated arguments must be arrays or trees of arrays, got float"),
    (lambda: mx.grad(lambda x: x.sum())(mx.array([1, 2])),
     r"^grad: cannot differentiate with respect to an array of int32 \(shape \(2,\)\)"),
])
def test_dtype_errors_are_caught_as_value_error(call, message):
    """MLX raises ValueError for these; nuvec's DtypeError is caught by either clause."""
    with pytest.raises(ValueError, match=message) as info:
        call()
    assert isinstance(info.value, TypeError)


def test_shape_dimension_past_int32_raises_value_error():
    with pytest.raises(ValueError, match="^zeros: shape dimension falls outside the supported "
                                         "int32 range"):
        mx.zeros((2**31,))
    with pytest.raises(ValueError, match="^reshape: shape dimension falls outside"):
        mx.zeros((0,)).reshape(2**31, 0)
    assert mx.zeros((2**31 - 1, 0)).shape == (2**31 - 1, 0)


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, [2**70], [1, 2**65]])
def test_int_past_64_bits_raises_overflow_error(value):
    with pytest.raises(OverflowError, match="^array: ") as info:
        mx.array(value)
    assert isinstance(info.value, ValueError)


def test_out_of_range_index_raises_index_and_value_error():
    a = mx.ones((2, 3))
    for key in (5, -3, (0, 3), (1, -4)):
        with pytest.raises(IndexError, match="^getitem: index -?[0-9]+ is out of bounds for "
                                             "axis [01] with size [23]") as info:
            a[key]
        assert isinstance(info.value, ValueError)
    with pytest.raises(ValueError, match="^setitem: index 2 is out of bounds"):
        a[2] = 1.0


def test_vjp_with_respect_to_index_argument_raises():
    x = mx.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="^vjp: cannot compute the gather VJP with respect to "
                                         r"its indices \(int32, shape \(2,\)\); use stop_gradient"):
        mx.vjp(lambda a, i: a[i], [x, mx.array([0, 2])], [mx.ones(2)])
    with pytest.raises(ValueError, match="^vjp: cannot compute the scatter VJP"):
        mx.vjp(lambda a, i: a.at[i].add(1.0), [x, mx.array([0, 2])], [mx.ones(3)])


def test_indices_computed_from_the_input_get_no_gradient():
    """Closing over the index, or indices derived from the input (argsort), differentiate."""
    x = mx.array([3.0, 1.0, 2.0])
    g = mx.grad(lambda a: (a[mx.argsort(a)] * mx.array([1.0, 2.0, 3.0])).sum())(x)
    np.testing.assert_array_equal(np.asarray(g), [3.0, 1.0, 2.0])
    idx = mx.array([0, 2])
    _, (g,) = mx.vjp(lambda a: a[idx], [x], [mx.array([5.0, 7.0])])
    np.testing.assert_array_equal(np.asarray(g), [5.0, 0.0, 7.0])
