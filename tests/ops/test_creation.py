"""Conformance of `nuvec.ops.creation` against NumPy, MLX's dtype rules, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from helpers import ids
from nuvec.graph import dtypes as dt
from nuvec.testing import assert_allclose

ALL = list(dt.ALL_DTYPES)
NUMERIC = [d for d in ALL if d is not mx.bool_]


@pytest.mark.parametrize(
    "args,dtype,want",
    [((5,), mx.int32, np.arange(5)), ((2, 9, 3), mx.int32, np.arange(2, 9, 3)),
     ((5, 1, -2), mx.int32, np.arange(5, 1, -2)), ((3.0,), mx.float32, np.arange(3.0)),
     ((0, 1, 0.1), mx.float32, np.arange(0, 1, 0.1)), ((1, 0), mx.int32, np.arange(1, 0)),
     ((-1.5, 2), mx.float32, np.arange(-1.5, 2)), ((0, 5, float("inf")), mx.float32, [0.0]),
     ((0, -5, float("inf")), mx.float32, np.zeros(0))],
    ids=str,
)
def test_arange_inference(args, dtype, want):
    assert_allclose(mx.arange(*args), want, dtype=dtype)


@pytest.mark.parametrize("dtype", NUMERIC, ids=ids)
def test_arange_dtype(dtype):
    assert_allclose(mx.arange(0, 6, 2, dtype), np.arange(0, 6, 2), dtype=dtype)
    assert_allclose(mx.arange(4, dtype=dtype), np.arange(4), dtype=dtype)


@pytest.mark.parametrize("dtype", [mx.int8, mx.int32, mx.int64], ids=ids)
@pytest.mark.parametrize("args", [(0, 3, 0.5), (-1.5, 3, 1), (0.7, 5.0, 1.3), (5, -3, -1.5),
                                  (3.9, 0, -0.7)], ids=str)
def test_arange_integer_dtype_with_fractional_bounds(args, dtype):
    # the step is T(start + step) - T(start) (C casts), as in NumPy and MLX's kernels
    assert_allclose(mx.arange(*args, dtype=dtype), np.arange(*args, dtype=dtype.np), dtype=dtype)


def test_arange_keyword_forms():
    assert mx.arange(stop=3).tolist() == [0, 1, 2]
    assert mx.arange(5, step=2).tolist() == [0, 2, 4]
    assert mx.arange(1, stop=3, dtype=mx.float32).dtype is mx.float32
    assert mx.arange(start=1, stop=4).tolist() == [1, 2, 3]
    assert mx.arange(-3, step=-1).tolist() == [0, -1, -2]


def test_arange_float64_is_exact():
    assert_allclose(mx.arange(0.0, 1.0, 0.1, mx.float64), np.arange(0.0, 1.0, 0.1))


@pytest.mark.parametrize(
    "args,kwargs,error,match",
    [((0, 5, 0), {}, ValueError, "cannot compute the length"),
     ((0, float("nan")), {}, ValueError, "cannot compute the length"),
     ((0, float("inf")), {}, ValueError, "cannot compute the length"),
     ((5,), {"dtype": mx.bool_}, ValueError, "bool is not supported"),
     ((0, 2**40), {}, ValueError, "the size 1099511627776 exceeds"),
     (("5",), {}, TypeError, "stop must be an int or a float"),
     ((), {}, TypeError, "stop must be an int or a float")],
    ids=str,
)
def test_arange_errors(args, kwargs, error, match):
    with pytest.raises(error, match=f"^arange: {match}"):
        mx.arange(*args, **kwargs)


@pytest.mark.parametrize("num", [0, 1, 2, 7, 50])
@pytest.mark.parametrize("dtype", [d for d in NUMERIC if d.kind != "u"], ids=ids)
def test_linspace(num, dtype):
    want = np.linspace(-2.0, 3.0, num)
    if not dtype.is_inexact:  # integer dtypes truncate toward zero, as a C cast
        want = want.astype(dtype.np)
    assert_allclose(mx.linspace(-2, 3, num, dtype), want, dtype=dtype)
    assert mx.linspace(0, 1).shape == (50,)


def test_linspace_errors():
    with pytest.raises(ValueError, match="^linspace: the number of samples must be non-negative"):
        mx.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="^linspace: num must be an int"):
        mx.linspace(0, 1, 2.5)


@pytest.mark.parametrize("n,m,k", [(1, None, 0), (3, None, 0), (3, 5, 1), (4, 2, -1),
                                   (3, 3, 5), (2, 3, -4)])
@pytest.mark.parametrize("dtype", ALL, ids=ids)
def test_eye_and_tri(n, m, k, dtype):
    assert_allclose(mx.eye(n, m, k, dtype), np.eye(n, m, k).astype(dtype.np), dtype=dtype)
    assert_allclose(mx.tri(n, m, k, dtype), np.tri(n, m, k).astype(dtype.np), dtype=dtype)
    assert mx.eye(n).dtype is mx.float32 and mx.tri(n).dtype is mx.float32


def test_identity_and_empty_tri():
    assert_allclose(mx.identity(3), np.identity(3), dtype=mx.float32)
    assert_allclose(mx.identity(2, mx.int8), np.identity(2), dtype=mx.int8)
    assert mx.tri(0, 3).shape == (0, 3)


@pytest.mark.parametrize("n,m", [(-1, 2), (2, -1)])
def test_eye_rejects_negative(n, m):
    with pytest.raises(ValueError, match="^eye: n and m must be non-negative"):
        mx.eye(n, m)
    with pytest.raises(ValueError, match="^identity: n and m must be non-negative"):
        mx.identity(n if n <= 0 else m)


def test_tri_errors():
    with pytest.raises(ValueError, match="^tri: n and m must be non-negative"):
        mx.tri(-1)
    with pytest.raises(TypeError, match="^tri: k must be an int, got 0.5"):
        mx.tri(2, k=0.5)
    with pytest.raises(TypeError, match="^eye: n must be an int, got 2.0"):
        mx.eye(2.0)
    with pytest.raises(TypeError, match="^identity: n must be an int, got '3'"):
        mx.identity("3")
    with pytest.raises(ValueError, match=f"^tril: k must be <= 2147483647, got {2**40}"):
        mx.tril(mx.ones((2, 2)), k=2**40)


@pytest.mark.parametrize("dtype", ALL, ids=ids)
@pytest.mark.parametrize("k", [-2, -1, 0, 1, 3])
@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 3, 3), (0, 2), (1, 1)], ids=str)
def test_tril_triu(dtype, k, shape):
    data = (np.arange(int(np.prod(shape))).reshape(shape) % 3 + 1).astype(dtype.np)
    x = mx.array(data, dtype)
    assert_allclose(mx.tril(x, k), np.tril(data, k), dtype=dtype)
    assert_allclose(mx.triu(x, k), np.triu(data, k), dtype=dtype)


def test_tril_of_a_view_and_nan():
    base = np.arange(12.0).reshape(3, 4)
    assert_allclose(mx.tril(mx.transpose(mx.array(base))), np.tril(base.T))
    x = mx.array([[1.0, float("nan")], [float("inf"), 2.0]])
    assert_allclose(mx.tril(x), [[1.0, 0.0], [np.inf, 2.0]])


@pytest.mark.parametrize("op", ["tril", "triu"])
def test_triangle_errors(op):
    with pytest.raises(ValueError, match=f"^{op}: the array must be at least 2-D"):
        getattr(mx, op)(mx.ones((3,)))
    with pytest.raises(TypeError, match=f"^{op}: k must be an int"):
        getattr(mx, op)(mx.ones((3, 3)), 0.5)


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("sizes", [(3,), (3, 2), (2, 3, 4)], ids=str)
def test_meshgrid(indexing, sparse, sizes):
    data = [np.arange(n, dtype=np.float32) * (i + 1) for i, n in enumerate(sizes)]
    got = mx.meshgrid(*[mx.array(d) for d in data], sparse=sparse, indexing=indexing)
    want = np.meshgrid(*data, sparse=sparse, indexing=indexing)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_allclose(g, w, dtype=mx.float32)


def test_meshgrid_flattens_and_rejects_indexing():
    g = mx.meshgrid(mx.ones((2, 2)), mx.arange(3))
    assert [x.shape for x in g] == [(3, 4), (3, 4)]
    with pytest.raises(ValueError, match="^meshgrid: indexing must be 'xy' or 'ij'"):
        mx.meshgrid(mx.arange(2), indexing="xx")


@pytest.mark.parametrize("dtype", ALL, ids=ids)
@pytest.mark.parametrize("k", [-2, 0, 1, 4])
def test_diag(dtype, k):
    vec = (np.arange(3) % 2 + 1).astype(dtype.np)
    mat = (np.arange(12).reshape(3, 4) % 5).astype(dtype.np)
    assert_allclose(mx.diag(mx.array(vec, dtype), k), np.diag(vec, k), dtype=dtype)
    assert_allclose(mx.diag(mx.array(mat, dtype), k), np.diag(mat, k), dtype=dtype)
    assert_allclose(mx.array(mat, dtype).diag(k), np.diag(mat, k), dtype=dtype)


@pytest.mark.parametrize(
    "shape,offset,axis1,axis2",
    [((3, 4), 0, 0, 1), ((3, 4), 2, 0, 1), ((3, 4), -1, 1, 0), ((2, 3, 4), 1, 0, 2),
     ((2, 3, 4), -1, 2, 1), ((2, 3, 4), 0, -1, -3), ((3, 3), 5, 0, 1), ((0, 3), 0, 0, 1)],
    ids=str,
)
def test_diagonal_and_trace(shape, offset, axis1, axis2):
    data = np.random.default_rng(0).standard_normal(shape)
    x = mx.array(data, mx.float64)
    assert_allclose(mx.diagonal(x, offset, axis1, axis2), np.diagonal(data, offset, axis1, axis2))
    assert_allclose(x.diagonal(offset, axis1, axis2), np.diagonal(data, offset, axis1, axis2))
    assert_allclose(mx.trace(x, offset, axis1, axis2), np.trace(data, offset, axis1, axis2),
                    dtype=mx.float64)


def test_diagonal_of_a_view():
    data = np.arange(24.0).reshape(2, 3, 4)
    x = mx.transpose(mx.array(data), (2, 0, 1))
    assert_allclose(mx.diagonal(x, 0, 1, 2), np.diagonal(data.transpose(2, 0, 1), 0, 1, 2))


@pytest.mark.parametrize(
    "dtype,out", [(mx.int8, mx.int32), (mx.uint8, mx.uint32), (mx.bool_, mx.int32),
                  (mx.float16, mx.float16), (mx.int64, mx.int64)], ids=ids)
def test_trace_dtypes(dtype, out):
    data = np.ones((3, 3)).astype(dtype.np)
    assert_allclose(mx.trace(mx.array(data, dtype)), 3, dtype=out)
    assert_allclose(mx.trace(mx.array(data, dtype), dtype=mx.float32), 3.0, dtype=mx.float32)


def test_diagonal_errors():
    with pytest.raises(ValueError, match="^diagonal: the array must be at least 2-D"):
        mx.diagonal(mx.ones((3,)))
    with pytest.raises(ValueError, match="^diagonal: axis1 and axis2 must differ"):
        mx.diagonal(mx.ones((3, 3)), 0, 1, -1)
    with pytest.raises(ValueError, match="^diagonal: axis 2 is out of bounds"):
        mx.diagonal(mx.ones((3, 3)), 0, 0, 2)
    with pytest.raises(TypeError, match="^diagonal: offset must be an int"):
        mx.diagonal(mx.ones((3, 3)), 0.5)
    with pytest.raises(ValueError, match="^diag: the array must be 1-D or 2-D"):
        mx.diag(mx.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="^diag: the array must be 1-D or 2-D"):
        mx.diag(mx.array(1.0))
    with pytest.raises(TypeError, match="^diag: k must be an int"):
        mx.diag(mx.ones((2,)), 1.5)
    with pytest.raises(ValueError, match="^trace: the array must be at least 2-D"):
        mx.trace(mx.ones((2,)))


@pytest.mark.parametrize("dtype", ALL, ids=ids)
def test_full_zeros_ones(dtype):
    assert_allclose(mx.full((2, 3), 1, dtype), np.ones((2, 3)), dtype=dtype)
    assert_allclose(mx.zeros((2,), dtype), np.zeros(2), dtype=dtype)
    assert_allclose(mx.ones(3, dtype), np.ones(3), dtype=dtype)
    x = mx.array(np.ones((2, 2)), dtype)
    for fn, value in ((mx.zeros_like, 0), (mx.ones_like, 1), (mx.empty_like, 0)):
        assert_allclose(fn(x), np.full((2, 2), value), dtype=dtype)
        assert fn(x, mx.float16).dtype is mx.float16  # MLX 0.32's dtype argument


def test_full_defaults_and_broadcast():
    assert mx.zeros((2,)).dtype is mx.float32 and mx.ones(()).dtype is mx.float32
    assert mx.full((2,), 2.5).dtype is mx.float32
    assert mx.full((2,), 3).dtype is mx.int32
    assert_allclose(mx.full((2, 3), mx.array([1.0, 2.0, 3.0])), [[1, 2, 3], [1, 2, 3]])
    assert mx.zeros((0, 4)).shape == (0, 4)


def test_full_errors():
    with pytest.raises(ValueError, match="^full: negative dimensions are not allowed"):
        mx.full((2, -1), 0.0)
    with pytest.raises(ValueError, match="^zeros: "):
        mx.zeros((-3,))
    with pytest.raises(ValueError, match="^full: "):
        mx.full((2, 2), mx.array([1.0, 2.0, 3.0]))
    for shape in ((2.5,), (2, 3.0), "ab"):  # float dimensions are rejected, never truncated
        with pytest.raises(TypeError, match="^zeros: shape must be an int or a sequence of ints"):
            mx.zeros(shape)
    assert mx.ones((np.int64(2), mx.array(3))).shape == (2, 3)
    with pytest.raises(ValueError, match="^full: the Python int 1000 does not fit in int8"):
        mx.full((2,), 1000, mx.int8)  # MLX's check of a weak int against the dtype
    with pytest.raises(ValueError, match="^zeros: the shape .* has more elements than an array"):
        mx.zeros((2**30, 2**30, 2**30))  # rejected at the call, not by NumPy inside eval
    assert mx.zeros((2**31 - 1, 0)).shape == (2**31 - 1, 0)


def test_array_of_a_list_of_arrays_stacks_them():
    # MLX stacks the items (keeping their dtypes and laziness) rather than going through floats
    halves = [mx.array([1.5, 2.0], mx.bfloat16), mx.array([3.0, 4.0], mx.bfloat16)]
    assert_allclose(mx.array(halves), [[1.5, 2.0], [3.0, 4.0]], dtype=mx.bfloat16)
    assert_allclose(mx.array([mx.array(0.1, mx.float64)]), [0.1], dtype=mx.float64, rtol=0)
    assert_allclose(mx.array([mx.array(1.5), 2]), [1.5, 2.0], dtype=mx.float32)
    assert_allclose(mx.array([mx.array([1.5, 2.0]), [3, 4]], mx.int32), [[1, 2], [3, 4]],
                    dtype=mx.int32)
    g = mx.grad(lambda x: mx.sum(mx.array([x, 2 * x])))(mx.array(1.0))
    assert g.item() == 3.0
    with pytest.raises(ValueError, match=r"^stack: all arrays must have the same shape"):
        mx.array([mx.array([1]), mx.array([1, 2])])


def test_array_conversion_edges(recwarn):
    assert_allclose(mx.array(np.arange(3, dtype=">i4")), [0, 1, 2], dtype=mx.int32)  # big-endian
    assert_allclose(mx.array(np.arange(3, dtype=">f8"), mx.float64), [0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="^array: the integer 9223372036854775808 does not fit"):
        mx.array([2**63])  # never wrapped to a negative int64
    assert mx.array([2**63], mx.uint64).tolist() == [2**63]
    assert mx.array([2.0, np.nan], mx.int32).tolist()[0] == 2  # NaN casts as in C, no warning
    assert mx.array([1 + 2j], mx.float32).tolist() == [1.0]  # the real part, no warning
    assert mx.array([1e300, -1e300]).tolist() == [np.inf, -np.inf]  # overflow, no warning
    with pytest.raises(ValueError, match="^array: the integer 9223372036854775808 does not fit"):
        mx.array([1, 2**63])  # NumPy would hold it as a float
    assert [str(w.message) for w in recwarn] == []


def test_step_sliced_views():
    base = np.arange(48.0).reshape(6, 8)
    x = mx.array(base)[::2, ::-3]
    ref = base[::2, ::-3]
    assert_allclose(mx.triu(x, 1), np.triu(ref, 1))
    assert_allclose(mx.diagonal(x), np.diagonal(ref))
    assert_allclose(mx.trace(x, -1), np.trace(ref, -1))
