"""MLX 0.32's array-API additions: the second names, `flip`, `diff`, `unstack`, `minmax`,
`positive`, `matrix_transpose` / `.mT`, `contiguous`, `unique` with a fixed size, `cumsum`'s
`dtype`, `roll` of a tuple shift without an axis, and conversions of complex scalars. Values
are checked against NumPy; where MLX and NumPy differ (`unique`'s fixed size, bool `diff`), the
expected values are MLX 0.32's."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import nuvec as mx

RNG = np.random.default_rng(3)


@pytest.mark.parametrize("alias, name", [
    ("acos", "arccos"), ("acosh", "arccosh"), ("asin", "arcsin"), ("asinh", "arcsinh"),
    ("atan", "arctan"), ("atanh", "arctanh"), ("atan2", "arctan2"), ("pow", "power"),
    ("bitwise_left_shift", "left_shift"), ("bitwise_right_shift", "right_shift"),
    ("cumulative_sum", "cumsum"), ("cumulative_prod", "cumprod"), ("empty", "zeros"),
])
def test_second_names_call_the_functions_with_their_documentation(alias, name):
    second, first = getattr(mx, alias), getattr(mx, name)
    assert second.__wrapped__ is first and second.__name__ == alias
    assert second.__doc__ == first.__doc__
    assert inspect.signature(second) == inspect.signature(first)


@pytest.mark.parametrize("call, error, message", [
    (lambda: mx.acos("x"), TypeError, r"^acos: cannot convert str"),
    (lambda: mx.acosh("x"), TypeError, r"^acosh: cannot convert str"),
    (lambda: mx.asin("x"), TypeError, r"^asin: cannot convert str"),
    (lambda: mx.asinh("x"), TypeError, r"^asinh: cannot convert str"),
    (lambda: mx.atan("x"), TypeError, r"^atan: cannot convert str"),
    (lambda: mx.atanh("x"), TypeError, r"^atanh: cannot convert str"),
    (lambda: mx.atan2(mx.ones((2,)), mx.ones((3,))), ValueError, r"^atan2: "),
    (lambda: mx.pow(mx.ones((2,)), "x"), TypeError, r"^pow: cannot convert str"),
    (lambda: mx.bitwise_left_shift(mx.ones((2,)), 1), TypeError,
     r"^bitwise_left_shift: only integer and boolean arrays are supported, got float32"),
    (lambda: mx.bitwise_right_shift(mx.ones((2,)), 1), TypeError,
     r"^bitwise_right_shift: only integer and boolean arrays are supported, got float32"),
    (lambda: mx.cumulative_sum(mx.ones((2, 3)), axis=5), IndexError,
     r"^cumulative_sum: axis 5 is out of bounds"),
    (lambda: mx.cumulative_prod(mx.ones((2, 3)), axis=5), IndexError,
     r"^cumulative_prod: axis 5 is out of bounds"),
    (lambda: mx.empty((-1, 3)), ValueError, r"^empty: negative dimensions are not allowed"),
    (lambda: mx.matrix_norm(mx.ones((2, 2)), ord="bad"), ValueError,
     r"^matrix_norm: invalid ord 'bad'"),
])
def test_second_names_name_themselves_in_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (2, 0, 1), ()])
def test_flip_matches_numpy(axis):
    x = RNG.standard_normal((3, 4, 2)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(mx.flip(mx.array(x), axis)), np.flip(x, axis))


def test_flip_edges_and_errors():
    assert mx.flip(mx.array(3)).item() == 3
    assert mx.flip(mx.zeros((0, 3)), 0).shape == (0, 3)
    with pytest.raises(ValueError, match="^flip: axis 2"):
        mx.flip(mx.zeros((2, 3)), 2)
    with pytest.raises(ValueError, match="^flip: repeated axis"):
        mx.flip(mx.zeros((2, 3)), (0, 0))
    g = mx.grad(lambda v: (mx.flip(v) * mx.arange(3)).sum())(mx.ones(3))
    assert g.tolist() == [2, 1, 0]


@pytest.mark.parametrize("n, axis", [(0, -1), (1, -1), (2, 1), (3, 0), (7, 1), (1, 0)])
def test_diff_matches_numpy(n, axis):
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(mx.diff(mx.array(x), n, axis)),
                               np.diff(x, n, axis), rtol=1e-5, atol=1e-5)


def test_diff_of_bools_integers_and_errors():
    assert mx.diff(mx.array([True, False, False])).tolist() == [True, False]
    assert mx.diff(mx.array([1, 4, 9, 16]), 2).tolist() == [2, 2]
    with pytest.raises(ValueError, match="^diff: n must be >= 0"):
        mx.diff(mx.zeros(3), -1)
    with pytest.raises(ValueError, match="^diff: expected an array of at least 1 dimension"):
        mx.diff(mx.array(1.0))
    with pytest.raises(TypeError, match="^diff: n must be an int"):
        mx.diff(mx.zeros(3), 1.5)
    v = np.array([1.0, 3.0, 2.0, 5.0])
    g = mx.grad(lambda a: (mx.diff(a, 2) ** 2).sum())(mx.array(v))
    assert g.tolist() == [-6, 20, -22, 8]  # 2 d2 . (d d2 / dv), by hand


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unstack_inverts_stack(axis):
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    parts = mx.unstack(mx.array(x), axis=axis)
    assert isinstance(parts, tuple) and len(parts) == x.shape[axis]
    for i, part in enumerate(parts):
        np.testing.assert_array_equal(np.asarray(part), np.take(x, i, axis))
    np.testing.assert_array_equal(np.asarray(mx.stack(parts, axis)), x)
    assert mx.unstack(mx.zeros((0, 2))) == ()
    with pytest.raises(ValueError, match="^unstack: expected an array of at least 1"):
        mx.unstack(mx.array(1))


def test_minmax_positive_matrix_transpose():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    lo, hi = mx.minmax(mx.array(x), axis=(0, 2), keepdims=True)
    np.testing.assert_array_equal(np.asarray(lo), x.min(axis=(0, 2), keepdims=True))
    np.testing.assert_array_equal(np.asarray(hi), x.max(axis=(0, 2), keepdims=True))
    with pytest.raises(ValueError, match="^minmax: cannot reduce over an empty axis"):
        mx.minmax(mx.zeros((0,)))
    assert mx.positive(mx.array([True, False])).tolist() == [True, False]
    assert mx.positive(mx.array([1, -2])).dtype == mx.int32
    np.testing.assert_array_equal(np.asarray(mx.matrix_transpose(mx.array(x))),
                                  np.swapaxes(x, -1, -2))
    np.testing.assert_array_equal(np.asarray(mx.array(x).mT), np.swapaxes(x, -1, -2))
    with pytest.raises(ValueError, match="^matrix_transpose: expected an array of at least 2"):
        mx.matrix_transpose(mx.zeros(3))


def test_contiguous_lays_out_rows_and_keeps_values():
    x = mx.arange(12.0).reshape(3, 4)
    t = mx.contiguous(x.T)
    out = np.asarray(t)
    assert out.flags.c_contiguous and out.tolist() == np.arange(12.0).reshape(3, 4).T.tolist()
    assert np.asarray(mx.contiguous(x.T, allow_col_major=True)).flags.f_contiguous
    assert mx.grad(lambda a: (mx.contiguous(a.T) * mx.arange(12.0).reshape(4, 3)).sum())(
        x).tolist() == np.arange(12.0).reshape(4, 3).T.tolist()
    assert mx.vmap(mx.contiguous, in_axes=1)(x).shape == (4, 3)


def _numpy_unique(a, size, fill=None):
    """MLX's fixed-size unique from NumPy's (values, index, inverse, counts)."""
    values, index, inverse, counts = np.unique(a.reshape(-1), return_index=True,
                                               return_inverse=True, return_counts=True)
    k = min(size, len(values))
    fill = values[0] if fill is None else fill
    out_v = np.full(size, fill, a.dtype)
    out_i = np.full(size, index[0], np.uint32)
    out_c = np.zeros(size, np.int32)
    out_v[:k], out_i[:k], out_c[:k] = values[:k], index[:k], counts[:k]
    inv = np.minimum(inverse.reshape(a.shape), max(size - 1, 0)).astype(np.uint32)
    return out_v, out_i, inv, out_c


@pytest.mark.parametrize("size", [0, 1, 3, 5, 9])
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.bool_])
def test_unique_matches_numpy(size, dtype):
    a = RNG.integers(0, 5, (3, 4)).astype(dtype)
    got = mx.unique(mx.array(a), size, True, True, True)
    for g, e in zip(got, _numpy_unique(a, size)):
        assert np.asarray(g).dtype == e.dtype
        np.testing.assert_array_equal(np.asarray(g), e)


def test_unique_as_mlx_documents_it():
    a = mx.array([2, 1, 2, 3, 1])
    assert mx.unique(a, 3).tolist() == [1, 2, 3]
    assert mx.unique(a, 5).tolist() == [1, 2, 3, 1, 1]
    values, index, inverse, counts = mx.unique(a, 4, True, True, True, fill_value=0)
    assert values.tolist() == [1, 2, 3, 0] and index.tolist() == [1, 0, 3, 1]
    assert inverse.tolist() == [1, 0, 1, 2, 0] and counts.tolist() == [2, 2, 1, 0]
    assert index.dtype == inverse.dtype == mx.uint32 and counts.dtype == mx.int32
    nan = float("nan")
    out = np.asarray(mx.unique(mx.array([3.0, 1.0, nan, nan]), 5, fill_value=-1))
    np.testing.assert_array_equal(out, [1, 3, nan, nan, -1])  # each NaN is its own element
    with pytest.raises(ValueError, match="^unique: size must be >= 0"):
        mx.unique(a, -1)
    with pytest.raises(TypeError, match="^unique: size must be an int"):
        mx.unique(a, 2.0)


def test_cumsum_dtype_and_roll_of_a_tuple_shift():
    x = mx.array([100, 100, 100], mx.int8)
    assert mx.cumsum(x, dtype=mx.float32).tolist() == [100, 200, 300]
    assert mx.cumsum(x, dtype=mx.float32).dtype == mx.float32
    assert mx.cumprod(mx.array([2, 3]), dtype=mx.float64).dtype == mx.float64
    a = np.arange(6).reshape(2, 3)
    assert mx.roll(mx.array(a), (1, 2)).tolist() == np.roll(a, (1, 2)).tolist()


def test_complex_scalars_convert_as_python_numbers():
    z = mx.array(1 + 2j)
    assert complex(z) == 1 + 2j and complex(mx.array(2.5)) == 2.5 + 0j
    with pytest.raises(TypeError, match="float"):
        float(z)
    with pytest.raises(TypeError):
        int(z)


def test_a_non_empty_take_from_an_empty_axis_fails_at_the_call():
    empty = mx.zeros((0, 3))
    with pytest.raises(ValueError, match=r"^take: cannot take indices of shape \(1,\) from an"):
        mx.take(empty, mx.array([0]), axis=0)
    with pytest.raises(ValueError, match="^getitem: cannot take"):
        empty[mx.array([0])]
    with pytest.raises(ValueError, match="^take_along_axis: cannot take"):
        mx.take_along_axis(empty, mx.zeros((1, 3), mx.int32), axis=0)
    assert empty[mx.array([], mx.int32)].shape == (0, 3)
