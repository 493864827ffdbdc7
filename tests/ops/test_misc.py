"""as_strided, hadamard_transform and the window functions against NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from nuvec.backends.common.misc import sloane_matrix
from nuvec.testing import assert_allclose


def _sylvester(n: int) -> np.ndarray:
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h


@pytest.mark.parametrize(
    "shape, strides, offset",
    [((3, 3), (1, 1), 0), ((2, 3), (4, 1), 2), ((4,), (0,), 5), ((2, 2), (-3, -1), 8),
     ((0, 5), (100, 100), 0), ((), (), 7)],
    ids=["windows", "sub-block", "zero-stride", "negative", "empty", "scalar"],
)
@pytest.mark.parametrize("dtype", [mx.int32, mx.float32, mx.float64])
def test_as_strided_matches_numpy_stride_tricks(shape, strides, offset, dtype):
    data = np.arange(9).astype(dtype.np)
    ref_base = data[offset:] if data[offset:].size else data
    ref = np.lib.stride_tricks.as_strided(ref_base, shape,
                                          tuple(s * data.itemsize for s in strides))
    out = mx.as_strided(mx.array(data, dtype), shape, strides, offset)
    assert_allclose(out, ref, dtype=dtype)


def test_as_strided_reads_views_in_row_major_order():
    a = np.arange(12).reshape(3, 4)
    view = mx.array(a).T  # a transposed input: its row-major order is a.T's
    out = mx.as_strided(view, (6,), (2,))
    np.testing.assert_array_equal(np.asarray(out), a.T.reshape(-1)[::2])


def test_as_strided_defaults_to_a_contiguous_copy():
    a = np.arange(6).reshape(2, 3)
    assert np.asarray(mx.as_strided(mx.array(a))).tolist() == a.tolist()
    assert np.asarray(mx.as_strided(mx.array(a), (3, 2))).tolist() == a.reshape(3, 2).tolist()


def test_as_strided_grad_accumulates_overlaps():
    g = mx.grad(lambda x: mx.sum(mx.as_strided(x, (3, 2), (1, 1))))(mx.ones((4,)))
    assert g.tolist() == [1.0, 2.0, 2.0, 1.0]


@pytest.mark.parametrize("n", [2, 8, 64])
@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16, mx.float32, mx.float64])
def test_hadamard_matches_matrix_product(n, dtype):
    x = np.random.default_rng(n).standard_normal((3, n))
    out = mx.hadamard_transform(mx.array(x, dtype))
    rounded = np.asarray(mx.array(x, dtype)).astype(np.float64)
    assert_allclose(out, rounded @ _sylvester(n) / np.sqrt(n), dtype=dtype)


@pytest.mark.parametrize("m", [12, 20, 28])
def test_sloane_matrices_are_hadamard(m):
    h = sloane_matrix(m)
    np.testing.assert_array_equal(h @ h.T, m * np.eye(m))


@pytest.mark.parametrize("m, n", [(12, 1), (20, 4), (28, 2), (12, 8)])
def test_hadamard_of_m_times_power_of_two(m, n):
    x = np.random.default_rng(m * n).standard_normal((2, m * n))
    out = mx.hadamard_transform(mx.array(x, mx.float64))
    matrix = np.kron(sloane_matrix(m), _sylvester(n))
    assert_allclose(out, x @ matrix.T / np.sqrt(m * n), dtype=mx.float64)


def test_hadamard_grad_applies_the_transpose():
    x = mx.array(np.random.default_rng(1).standard_normal(20), mx.float64)
    g = mx.grad(lambda x: mx.sum(mx.hadamard_transform(x, scale=1.0) * mx.arange(20)))(x)
    assert_allclose(g, sloane_matrix(20).T @ np.arange(20), dtype=mx.float64)


def test_hadamard_scale_integer_input_and_involution():
    x = mx.array([[1, 2, 3, 4]])
    out = mx.hadamard_transform(x, scale=1.0)
    assert out.dtype == mx.float32 and out.tolist() == [[10.0, -2.0, -4.0, 0.0]]
    y = mx.array(np.random.default_rng(0).standard_normal((2, 16)), mx.float64)
    assert_allclose(mx.hadamard_transform(mx.hadamard_transform(y)), np.asarray(y))


def test_hadamard_size_one_and_scalar():
    assert mx.hadamard_transform(mx.array([3.0]), scale=2.0).tolist() == [6.0]
    assert mx.hadamard_transform(mx.array(3.0)).item() == 3.0
    for shape in ((0, 4), (2, 0, 12)):  # empty batches
        assert_allclose(mx.hadamard_transform(mx.zeros(shape)), np.zeros(shape),
                        dtype=mx.float32)
    assert mx.hadamard_transform(mx.array([1, 0], mx.int8)).dtype == mx.float32


@pytest.mark.parametrize("m", [0, 1, 2, 5, 16])
@pytest.mark.parametrize("name", ["hanning", "hamming", "blackman", "bartlett"])
def test_windows_match_numpy(name, m):
    out = getattr(mx, name)(m)
    assert_allclose(out, getattr(np, name)(m), dtype=mx.float32, atol=1e-6)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: mx.as_strided(mx.arange(5), (3,), (1, 1)), ValueError, "^as_strided: shape"),
        (lambda: mx.as_strided(mx.arange(5), (3, 3), (1, 2)), ValueError, "^as_strided: shape"),
        (lambda: mx.as_strided(mx.arange(5), (2,), (-1,), 0), ValueError, "^as_strided: shape"),
        (lambda: mx.as_strided(mx.arange(5), (1,), (1,), 5), ValueError, "^as_strided: shape"),
        (lambda: mx.as_strided(mx.arange(5), (1,), (1,), -1), ValueError, "^as_strided: offset"),
        (lambda: mx.as_strided(mx.arange(5), (-1,)), ValueError, "^as_strided: negative"),
        (lambda: mx.hadamard_transform(mx.ones((2, 36))), ValueError,
         "^hadamard_transform: the last axis"),
        (lambda: mx.hadamard_transform(mx.ones((2, 0))), ValueError,
         "^hadamard_transform: the last axis"),
        (lambda: mx.hanning(2.5), TypeError, "^hanning: M must be an int"),
        (lambda: mx.bartlett("3"), TypeError, "^bartlett: M must be an int"),
    ],
    ids=lambda v: v.strip("^") if isinstance(v, str) else "",
)
def test_rejected_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize(
    "src, dst, shape",
    [("float32", "uint32", (2, 3)), ("float32", "uint8", (2, 3)), ("uint8", "float32", (2, 8)),
     ("float16", "bfloat16", (5,)), ("int64", "int32", (3,)), ("float64", "float32", (1, 2))],
)
def test_view_matches_numpy(src, dst, shape):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(shape) * 100).astype(getattr(mx, src).np)
    out = mx.view(mx.array(a, getattr(mx, src)), getattr(mx, dst))
    expected = a.view(getattr(mx, dst).np)
    assert out.dtype is getattr(mx, dst) and out.shape == expected.shape
    np.testing.assert_array_equal(np.asarray(out).view(np.uint8), expected.view(np.uint8))
    assert mx.array(a, getattr(mx, src)).view(getattr(mx, dst)).shape == expected.shape


def test_view_of_a_transposed_input_reads_logical_order():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = mx.view(mx.transpose(mx.array(a)), mx.int32)
    np.testing.assert_array_equal(np.asarray(out), np.ascontiguousarray(a.T).view(np.int32))


@pytest.mark.parametrize(
    "value, src, dst, expected",
    [(1.0, "float32", "int32", 1065353216), (-1, "int64", "uint64", 2**64 - 1),
     (1.0, "float16", "bfloat16", 0.0078125), (True, "bool_", "uint8", 1)],
)
def test_view_of_a_0d_array_stays_0d(value, src, dst, expected):
    out = mx.array(value, getattr(mx, src)).view(getattr(mx, dst))
    assert out.shape == () and out.dtype is getattr(mx, dst) and out.item() == expected
    assert np.asarray(out).shape == ()


def test_view_errors_and_no_gradient():
    with pytest.raises(ValueError, match="^view: a 0-d"):
        mx.view(mx.array(1.0), mx.uint8)
    with pytest.raises(ValueError, match="^view: the last axis"):
        mx.view(mx.zeros((3,), mx.uint8), mx.float32)
    with pytest.raises(TypeError, match="^view: unsupported dtype"):
        mx.view(mx.zeros((4,)), "float128")
    with pytest.raises(mx.TransformError, match="View"):
        mx.grad(lambda x: mx.sum(mx.view(x, mx.bfloat16)))(mx.zeros((2,), mx.float16))
