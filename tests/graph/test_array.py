"""The Array handle: structure, conversion to Python and NumPy, repr, pickling."""

import pickle

import ml_dtypes
import numpy as np
import pytest

import nuvec as mx


def test_structure_known_without_evaluation():
    x = mx.exp(mx.zeros((2, 3, 4), mx.float16))
    assert not x.is_evaluated
    assert x.shape == (2, 3, 4) and x.ndim == 3 and x.size == 24
    assert x.dtype is mx.float16 and x.itemsize == 2 and x.nbytes == 48
    assert len(x) == 2
    assert not x.is_evaluated


def test_item_tolist_and_numpy():
    x = mx.array([[1, 2], [3, 4]])
    assert x.tolist() == [[1, 2], [3, 4]]
    assert mx.array(2.5).item() == 2.5
    assert isinstance(mx.array(3).item(), int)
    assert mx.array(True).item() is True
    assert mx.array(1.5, mx.bfloat16).item() == 1.5
    assert mx.array([1.5], mx.bfloat16).tolist() == [1.5]
    data = np.asarray(x)
    assert data.dtype == np.int32 and not data.flags.writeable
    assert np.array(x).flags.writeable
    np.testing.assert_array_equal(np.asarray(x, dtype=np.float64), [[1.0, 2.0], [3.0, 4.0]])
    assert np.asarray(mx.array([1.0], mx.bfloat16)).dtype == ml_dtypes.bfloat16


def test_array_does_not_alias_the_source_numpy_data():
    source = np.ones(3, np.float32)
    x = mx.array(source)
    source[0] = 5
    assert x.tolist() == [1.0, 1.0, 1.0]


def test_item_rejects_larger_arrays():
    with pytest.raises(ValueError, match="^item: only size-1"):
        mx.array([1, 2]).item()


def test_scalar_conversions():
    assert float(mx.array([2.5])) == 2.5
    assert int(mx.array(7)) == 7
    assert bool(mx.array(1)) is True
    assert bool(mx.array([0.0])) is False
    with pytest.raises(ValueError, match="ambiguous"):
        bool(mx.array([1, 2]))
    with pytest.raises(TypeError, match="only size-1"):
        float(mx.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="len"):
        len(mx.array(1.0))
    with pytest.raises(TypeError, match="^iteration over a 0-d array"):
        iter(mx.array(1.0))
    rows = list(mx.array([[1, 2], [3, 4]]))
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4]] and list(mx.zeros((0, 3))) == []


def test_iter_returns_an_array_iterator_over_rows():
    x = mx.arange(4)
    it = iter(x)
    assert type(it) is mx.ArrayIterator and next(it).item() == 0
    assert iter(it) is it and next(it).item() == 1
    x += 10  # the rows are the values when iter() was called
    assert [r.item() for r in it] == [2, 3] and list(it) == []
    with pytest.raises(StopIteration):
        next(it)
    with pytest.raises(TypeError, match="^ArrayIterator: no constructor"):
        mx.ArrayIterator(x)


def test_repr_in_mlx_style():
    assert repr(mx.array([1, 2, 3])) == "array([1, 2, 3], dtype=int32)"
    assert repr(mx.array(1.5)) == "array(1.5, dtype=float32)"
    assert repr(mx.array([1.0, 2.5])) == "array([1, 2.5], dtype=float32)"
    assert repr(mx.array([True, False])) == "array([True, False], dtype=bool)"
    assert repr(mx.array([[1, 2], [3, 4]])) == "array([[1, 2],\n       [3, 4]], dtype=int32)"


@pytest.mark.parametrize(
    "shape, expected",
    [
        ((2, 0), "array([[],\n       []], dtype=float32)"),
        ((0, 2), "array([], dtype=float32)"),
        ((1, 0), "array([[]], dtype=float32)"),
        ((2, 3, 0), "array([[[],\n        [],\n        []],\n       [[],\n        [],\n"
                    "        []]], dtype=float32)"),
        ((2, 0, 3), "array([[],\n       []], dtype=float32)"),
    ],
    ids=["2x0", "0x2", "1x0", "2x3x0", "2x0x3"],
)
def test_repr_of_empty_arrays_shows_their_axes(shape, expected):
    assert repr(mx.zeros(shape)) == expected  # as MLX prints them


def test_repr_has_no_blank_lines_or_wrapping():
    # MLX puts 3-D blocks on consecutive lines and never wraps a long row
    assert repr(mx.arange(8).reshape(2, 2, 2)) == (
        "array([[[0, 1],\n        [2, 3]],\n       [[4, 5],\n        [6, 7]]], dtype=int32)"
    )
    rows = repr(mx.arange(343.0).reshape(7, 7, 7) / 3).split("\n")
    assert len(rows) == 43 and rows[3] == "        ...," and rows[21] == "       ...,"
    assert rows[0] == "array([[[0, 0.333333, 0.666667, ..., 1.33333, 1.66667, 2],"
    wide = repr(mx.array([1 / 3 + 2j] * 5))
    assert "\n" not in wide and wide.count("0.333333+2j") == 5
    assert repr(mx.array([complex(1, -0.0), complex(1, -2)])) == (
        "array([1+-0j, 1-2j], dtype=complex64)"
    )


def test_printoptions():
    with mx.printoptions(precision=2):
        assert repr(mx.array([1.23456])) == "array([1.23], dtype=float32)"
    assert repr(mx.array([1.23456])) == "array([1.23456], dtype=float32)"
    with mx.printoptions(threshold=5, edgeitems=2):
        assert repr(mx.arange(10)) == "array([0, 1, ..., 8, 9], dtype=int32)"
    assert repr(mx.arange(10)) == "array([0, 1, 2, ..., 7, 8, 9], dtype=int32)"  # MLX: axes over 6
    assert repr(mx.array([1.5, -2.0], mx.bfloat16)) == "array([1.5, -2], dtype=bfloat16)"
    for bad in (dict(precision=-2), dict(threshold=1.5), dict(edgeitems=True),
                dict(precision=3, threshold=-1)):
        with pytest.raises(ValueError, match="^set_printoptions: "):
            mx.set_printoptions(**bad)
        assert mx.get_printoptions() == mx.PrintOptions()  # nothing changed


def test_set_printoptions_follows_mlx():
    try:
        mx.set_printoptions(3)
        assert mx.get_printoptions().precision == 3
        assert repr(mx.array([1 / 3])) == "array([0.333], dtype=float32)"
        with mx.printoptions(1):
            assert repr(mx.array([2 / 3])) == "array([0.7], dtype=float32)"
        assert mx.get_printoptions().precision == 3
        mx.set_printoptions()  # MLX's default precision, -1
        assert repr(mx.array([1 / 3])) == "array([0.333333], dtype=float32)"
    finally:
        mx.set_printoptions(-1)


def test_pickle_round_trip():
    x = mx.array([[1.5, 2.0]], mx.float16)
    y = pickle.loads(pickle.dumps(x))
    assert y.dtype is mx.float16 and y.tolist() == [[1.5, 2.0]]


def test_array_constructor_class():
    x = mx.Array([1, 2], mx.float32)
    assert isinstance(x, mx.Array) and x.dtype is mx.float32 and x.tolist() == [1.0, 2.0]
    # `mx.array` is the class, as in MLX: the idiom `isinstance(x, mx.array)` works
    assert mx.array is mx.Array
    assert isinstance(mx.exp(mx.zeros((2,))), mx.array) and not isinstance([1.0], mx.array)
    assert mx.array(val=[1, 2], dtype=mx.int8).dtype is mx.int8


def test_array_rejects_ragged_and_unsupported_data():
    with pytest.raises(ValueError, match="^array: "):
        mx.array([[1, 2], [3]])
    with pytest.raises(TypeError, match="^array: "):
        mx.array(object())
    with pytest.raises(TypeError, match="unsupported dtype"):
        mx.array([1], dtype="float128")
    with pytest.raises(TypeError, match="^array: unsupported NumPy dtype <U1"):
        mx.array(np.array(["a"]))
    with pytest.raises(ValueError, match="^array: cannot make an array from data of type <U1"):
        mx.array(["a", "b"])
    with pytest.raises(ValueError, match="^array: cannot convert data to int64"):
        mx.array(2**64)
    for wide in (2**63, [1, 2**63]):  # never wrapped to a negative int64
        with pytest.raises(ValueError, match="^array: the integer 9223372036854775808 does not"):
            mx.array(wide)
    assert mx.array(2**63, mx.uint64).item() == 2**63
    with pytest.raises(TypeError, match="^only integer arrays can be used as an index, got f"):
        [1, 2][mx.array(1.0)]
    assert [1, 2][mx.array(1)] == 2


def test_format_spec_on_size_one_arrays():
    assert f"{mx.array(1.5):.2f}" == "1.50"
    assert f"{mx.array([3]):>3}" == "  3"
    assert f"{mx.array([1, 2])}" == repr(mx.array([1, 2]))
    with pytest.raises(TypeError, match="^format: "):
        f"{mx.array([1.0, 2.0]):.2f}"


def test_empty_format_spec_formats_a_0d_arrays_value():
    # as MLX: f"loss {loss}" shows the number; other arrays print as their repr
    assert f"loss {mx.mean(mx.array([1.0, 2.0]))}" == "loss 1.5"
    assert f"{mx.array(True)}" == "True" and "{}".format(mx.array(3)) == "3"
    assert format(mx.array(0.1), "") == "0.10000000149011612"  # the float32 value, as MLX
    assert f"{mx.array(1 + 2j)}" == "(1+2j)" and f"{mx.array(1.5, mx.bfloat16)}" == "1.5"
    assert f"{mx.array([1.5])}" == repr(mx.array([1.5]))
    assert str(mx.array(2.5)) == "array(2.5, dtype=float32)"


@pytest.mark.parametrize(
    "values, dtype, expected",
    [
        ([1], mx.uint8, b"\x01"),
        ([[1, 2], [3, 4]], mx.int16, b"\x01\x00\x02\x00\x03\x00\x04\x00"),
        (1.0, mx.float32, b"\x00\x00\x80?"),
        ([1.5], mx.bfloat16, b"\xc0?"),
        ([True, False], mx.bool_, b"\x01\x00"),
        ([], mx.float32, b""),
    ],
    ids=["uint8", "int16-2d", "float32-0d", "bfloat16", "bool", "empty"],
)
def test_bytes_are_the_raw_elements(values, dtype, expected):
    assert bytes(mx.array(values, dtype)) == expected  # MLX's buffer, not bytes(n) via __index__


def test_bytes_follow_logical_row_major_order():
    x = mx.array([[1, 2], [3, 4]], mx.int16)
    assert bytes(x.T) == b"\x01\x00\x03\x00\x02\x00\x04\x00"


def test_shape_and_dtype_are_read_only():
    x = mx.ones(2)
    for name, value in (("shape", (3,)), ("dtype", mx.int32), ("other", 1)):
        with pytest.raises(AttributeError, match=f"^attribute '{name}' of 'array' objects is not "
                                                 "writable"):
            setattr(x, name, value)
    with pytest.raises(AttributeError, match="^attribute 'shape'"):
        del x.shape
    assert x.shape == (2,) and x.dtype is mx.float32 and repr(x) == "array([1, 1], dtype=float32)"
    x += 1  # in-place updates still rebind the handle
    assert x.tolist() == [2.0, 2.0] and type(x) is mx.array and type(x + x) is mx.array


def test_dtype_none_is_rejected_where_a_dtype_is_required():
    with pytest.raises(TypeError, match="^astype: dtype must be a dtype, got None"):
        mx.array([1]).astype(None)
