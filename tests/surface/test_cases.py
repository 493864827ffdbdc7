"""The cases of the bad-input issue, one test each, with the message checked."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx


def test_bad_stream_names_the_op_and_the_value():
    with pytest.raises(TypeError, match=r"^abs: stream must be a Stream, Device or None, "
                                        r"got 'bogus'"):
        mx.abs(mx.ones((2,)), stream="bogus")
    with pytest.raises(TypeError, match=r"^sum: stream must be"):
        mx.ones((2,)).sum(stream=3)  # an Array method names the op it stands for
    with pytest.raises(TypeError, match=r"^rms_norm: stream must be"):
        mx.fast.rms_norm(mx.ones((2, 8)), mx.ones((8,)), 1e-5, stream="s")


def test_zeros_names_itself_not_full():
    with pytest.raises(ValueError, match=r"^zeros: negative dimensions are not allowed, "
                                         r"got \(-1, 3\)"):
        mx.zeros((-1, 3))


def test_trace_names_itself_not_diagonal():
    with pytest.raises(TypeError, match=r"^trace: offset must be an int, got 1.5"):
        mx.trace(mx.ones((3, 3)), 1.5)
    with pytest.raises(ValueError, match=r"^trace: axis 5 is out of bounds"):
        mx.trace(mx.ones((3, 3)), axis1=5)


def test_diag_offset_past_int32_raises_at_the_call():
    with pytest.raises(ValueError, match=r"^diag: k must be <= 2147483647, got 1099511627776"):
        mx.diag(mx.ones((3, 3)), k=2**40)


def test_arange_past_int32_gives_int64():
    a = mx.arange(2**31 - 2, 2**31 + 1)
    assert a.dtype == mx.int64
    assert a.tolist() == [2**31 - 2, 2**31 - 1, 2**31]


@pytest.mark.parametrize("stride", [np.int64(2), mx.array(2), 2], ids=["np.int64", "0-d", "int"])
def test_conv1d_takes_numpy_and_0d_integers(stride):
    out = mx.conv1d(mx.ones((1, 8, 2)), mx.ones((3, 3, 2)), stride=stride)
    assert out.shape == (1, 3, 3)
    np.testing.assert_allclose(np.asarray(out), np.full((1, 3, 3), 6.0))


def test_conv1d_rejects_float_and_huge_integers():
    with pytest.raises(TypeError, match=r"^conv1d: stride must be an int or 1 ints, got 1.5"):
        mx.conv1d(mx.ones((1, 8, 2)), mx.ones((3, 3, 2)), stride=1.5)
    with pytest.raises(ValueError, match=r"^conv1d: padding must be <= 2147483647, got "
                                         r"1099511627776"):
        mx.conv1d(mx.ones((1, 8, 2)), mx.ones((3, 3, 2)), padding=2**40)
    with pytest.raises(TypeError, match=r"^conv1d: groups must be an int, got 'x'"):
        mx.conv1d(mx.ones((1, 8, 2)), mx.ones((3, 3, 2)), groups="x")


def test_shared_checks_name_the_function_called():
    with pytest.raises(ValueError, match=r"^add: shapes \(3,\) and \(2,\) cannot be broadcast"):
        mx.ones((3,)) + mx.ones((2,))  # an operator keeps the op's own name
    with pytest.raises(ValueError, match=r"^broadcast_shapes: shapes"):
        mx.broadcast_shapes((2,), (3,))
    with pytest.raises(TypeError, match=r"^sum: axis must be an int, got '0'"):
        mx.sum(mx.ones((2, 2)), axis="0")
