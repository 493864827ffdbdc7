"""The cached scalar leaves weak Python scalars become: one stored element, reused by value,
never a zero whose sign the cache could confuse."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from nuvec.graph.convert import scalar_array, scalar_node


@pytest.mark.parametrize("value", [0, 1, -3, 2.5, True])
def test_a_cached_value_is_one_leaf(value):
    a, b = scalar_array(value, mx.float32, (2, 3)), scalar_array(value, mx.float32, (2, 3))
    assert a._node is b._node and a is not b  # one leaf, a new handle each time
    assert scalar_node(value, mx.float32, (2, 3)) is a._node
    np.testing.assert_array_equal(np.asarray(a), np.full((2, 3), float(value), np.float32))


@pytest.mark.parametrize("value", [0.0, -0.0, float("nan"), False])
def test_float_zeros_nan_and_false_are_not_cached(value):
    a, b = scalar_array(value, mx.float32), scalar_array(value, mx.float32)
    assert a._node is not b._node
    np.testing.assert_array_equal(np.asarray(a), np.asarray(value, np.float32))
    assert np.signbit(np.asarray(a)) == np.signbit(value)


def test_int_zero_keeps_the_sign_of_a_float_zero_it_meets():
    x = mx.array([-0.0, 0.0, -2.0, 3.0])
    np.testing.assert_array_equal(np.signbit(np.asarray(mx.maximum(x, 0))),
                                  np.signbit(np.maximum(np.array([-0.0, 0.0, -2.0, 3.0]), 0)))
    np.testing.assert_array_equal(np.asarray(x * 0), np.array([-0.0, 0.0, -0.0, 0.0]))
    assert np.signbit(np.asarray(x * 0)).tolist() == [True, False, True, False]
