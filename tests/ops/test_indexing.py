"""Indexing against NumPy: basic and advanced `__getitem__`, `__setitem__`, `.at[...]`, take,
take_along_axis, put_along_axis; every dtype, special shapes, hypothesis fuzzing, out-of-range
indices and every rejected input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nuvec as mx
from helpers import int_data, int_pair
from nuvec.graph import dtypes as dt
from nuvec.testing import assert_allclose

ALL = dt.ALL_DTYPES


def _check(actual, expected, dtype=dt.float32):
    assert_allclose(actual, np.asarray(expected, dtype=dtype.np), dtype=dtype)


I = np.array([[2, 0], [-1, 1]])
KEYS = [
    ("int", lambda a: 1),
    ("negative_int", lambda a: -2),
    ("slice_steps", lambda a: (slice(None, None, -2), slice(1, None, 2))),
    ("ellipsis_none", lambda a: (None, Ellipsis, 0, None)),
    ("empty_slice", lambda a: slice(3, 1)),
    ("array", lambda a: I),
    ("array_slice", lambda a: (slice(None), I)),
    ("arrays_adjacent", lambda a: (slice(None), I, [0, 3])),
    ("arrays_separated", lambda a: (I, slice(1, None), [1, 2])),
    ("int_and_array_separated", lambda a: (0, slice(None), I)),
    ("int_and_array_adjacent", lambda a: (slice(None), 1, I)),
    ("none_between", lambda a: (I, None, [1, 0])),
    ("ellipsis_array", lambda a: (Ellipsis, [3, 0, -4])),
    ("bool_mask", lambda a: np.array([True, False, True])),
    ("bool_mask_2d_and_array", lambda a: (np.eye(3, 4, dtype=bool), [4, 0, 2])),
    ("bool_mask_after_slice", lambda a: (slice(1, None), [True, False, True, True])),
    ("nested_list", lambda a: [[0, 1], [2, 2]]),
]


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("name,make", KEYS, ids=[k[0] for k in KEYS])
def test_getitem(name, make, dtype):
    a, x = int_pair((3, 4, 5), dtype)
    _check(a[make(a)], x[make(a)], dtype)


@pytest.mark.parametrize("name,make", KEYS, ids=[k[0] for k in KEYS])
def test_setitem_and_at(name, make):
    a, x = int_pair((3, 4, 5))
    key = make(a)
    shape = x[key].shape
    v = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 100
    y = x.copy()
    y[key] = v
    b = a
    b[key] = mx.array(v)
    _check(b, y)
    _check(a, y)  # the same handle was rebound
    c, x = int_pair((3, 4, 5))
    y = x.copy()
    np.add.at(y, key, v)
    _check(c.at[key].add(mx.array(v)), y)
    _check(c, x)  # .at leaves the array unchanged


def test_setitem_broadcast_cast_and_views():
    a, x = int_pair((4, 6), dt.int32)
    a[1:3] = 7.9  # a Python float is cast to the array's dtype
    x[1:3] = 7
    _check(a, x, dt.int32)
    a[:, ::-3] = mx.array([[1, 2]])  # leading size-1 dims of the value are dropped
    x[:, ::-3] = [1, 2]
    _check(a, x, dt.int32)
    view = mx.transpose(a)[::2]
    _check(view[[0, 2], 1:], x.T[::2][[0, 2], 1:], dt.int32)
    a[...] = 3
    _check(a, np.full((4, 6), 3), dt.int32)


def test_repeated_indices():
    a = mx.zeros((4,))
    a[mx.array([1, 1, 1])] = mx.array([5.0, 6.0, 7.0])
    assert a.tolist() == [0.0, 7.0, 0.0, 0.0]  # the last write wins
    x = mx.array([1.0, 2.0, 3.0, 4.0])
    idx = mx.array([0, 2, 0, 0])
    v = mx.array([2.0, 3.0, 4.0, 0.5])
    assert x.at[idx].add(v).tolist() == [7.5, 2.0, 6.0, 4.0]
    assert x.at[idx].subtract(v).tolist() == [-5.5, 2.0, 0.0, 4.0]
    assert x.at[idx].multiply(v).tolist() == [4.0, 2.0, 9.0, 4.0]
    assert x.at[idx].divide(v).tolist() == [0.25, 2.0, 1.0, 4.0]
    assert x.at[idx].maximum(v).tolist() == [4.0, 2.0, 3.0, 4.0]
    assert x.at[idx].minimum(v).tolist() == [0.5, 2.0, 3.0, 4.0]
    flags = mx.array([False, False, True])  # on bools, add is a logical or
    assert flags.at[mx.array([0, 0, 1])].add(mx.array([True, False, False])).tolist() == \
        [True, False, True]
    # basic keys use the elementwise ops
    assert x.at[1:3].multiply(2.0).tolist() == [1.0, 4.0, 6.0, 4.0]
    assert x.at[::-2].maximum(3.5).tolist() == [1.0, 3.5, 3.0, 4.0]


@pytest.mark.parametrize("dtype", [d for d in ALL if d is not dt.bool_], ids=lambda d: d.name)
def test_at_accumulates_in_every_dtype(dtype):
    rng = np.random.default_rng(0)
    # small values, so that sums and products of the int8 entries stay in range
    x, v = rng.integers(0, 10, (4, 3)).astype(dtype.np), rng.integers(0, 3, (5, 3)).astype(dtype.np)
    a, idx = mx.array(x, dtype), np.array([0, 2, 0, 3, 0])
    wide = np.complex128 if dtype is dt.complex64 else np.float64
    for method, ufunc in (("add", np.add), ("multiply", np.multiply)) + (
            () if dtype is dt.complex64 else (("maximum", np.maximum), ("minimum", np.minimum))):
        y = x.astype(wide)
        ufunc.at(y, idx, v.astype(wide))
        _check(getattr(a.at[mx.array(idx)], method)(mx.array(v, dtype)), y.astype(dtype.np),
               dtype)


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
def test_take_family(dtype):
    a, x = int_pair((3, 4), dtype)
    idx = np.array([[0, -1], [2, 1]])
    _check(mx.take(a, mx.array(idx)), np.take(x, idx), dtype)
    _check(mx.take(a, mx.array(idx), axis=1), np.take(x, idx, axis=1), dtype)
    _check(mx.take(a, -1, axis=0), np.take(x, -1, axis=0), dtype)
    _check(mx.take(a, 5), np.take(x, 5), dtype)
    along = np.array([[0, 2, 1, 0]])
    _check(mx.take_along_axis(a, mx.array(along), axis=0),
           np.take_along_axis(x, along, axis=0), dtype)
    flat = np.take_along_axis(x.ravel(), np.array([1, 11]), 0)
    _check(mx.take_along_axis(a, mx.array([1, 11])), flat, dtype)
    vals = int_data((1, 4), dtype, seed=3)
    y = x.copy()
    np.put_along_axis(y, along, vals, axis=0)
    _check(mx.put_along_axis(a, mx.array(along), mx.array(vals, dtype), axis=0), y, dtype)
    y = x.copy().ravel()
    y[[2, 5]] = vals.ravel()[0]
    _check(mx.put_along_axis(a, mx.array([2, 5]), mx.array(vals.ravel()[0], dtype)),
           y.reshape(3, 4), dtype)


@pytest.mark.parametrize("shape", [(), (0,), (1,), (0, 3), (1, 1)], ids=str)
def test_special_shapes(shape):
    a, x = int_pair(shape)
    _check(a[...], x[...])
    _check(a[None], x[None])
    if shape:
        _check(a[::-1], x[::-1])
        idx = np.zeros((2,), dtype=np.int64) if shape[0] else np.zeros((0,), dtype=np.int64)
        _check(a[idx], x[idx])
        _check(mx.take(a, mx.array(idx), axis=0), np.take(x, idx, axis=0))
        b = a
        b[idx] = 1.0
        y = x.copy()
        y[idx] = 1.0
        _check(b, y)


def test_iteration_and_integer_arrays_as_keys():
    a, x = int_pair((3, 2))
    assert [r.tolist() for r in a] == x.tolist()
    _check(a[mx.array(1)], x[1])
    _check(a[np.int64(-1)], x[-1])
    _check(a[mx.array([[1], [0]], mx.uint8)], x[np.array([[1], [0]])])


BASIC_KEYS = [1, -3, (2, -1), (slice(None), 0), (slice(3, None, -2), None, 1), (Ellipsis, 2),
              (None, Ellipsis, None), (0, Ellipsis, slice(1, 3)), (), Ellipsis, None,
              (slice(None), slice(None), slice(None)), (slice(2, 0), 1)]


@pytest.mark.parametrize("key", BASIC_KEYS, ids=repr)
def test_basic_keys_are_a_window_and_a_reshape(key):
    """Keys of ints, slices, None and one Ellipsis take `getitem`'s short path: a `Slice`
    (none for the whole array) and a `Reshape` where the shape changes, NumPy's values."""
    a, x = int_pair((4, 3, 5))
    out = a[key]
    _check(out, x[key])
    assert out.shape == x[key].shape
    kinds = []
    node = out._node
    while node.primitive is not None:
        kinds.append(type(node.primitive).__name__)
        node = node.sources[0]
    assert kinds in ([], ["Slice"], ["Reshape"], ["Reshape", "Slice"])


@st.composite
def _basic_case(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=4)))
    parts = st.one_of(st.integers(-6, 6), st.none(), st.just(Ellipsis),
                      st.builds(slice, st.none() | st.integers(-6, 6), st.none()
                                | st.integers(-6, 6), st.none() | st.sampled_from([-3, -1, 1, 2])))
    return shape, tuple(draw(st.lists(parts, max_size=5)))


@settings(max_examples=200, deadline=None)
@given(_basic_case())
def test_fuzz_basic_keys(case):
    """Ints, slices, None and Ellipsis on any shape, empty ones included: NumPy's values and
    shape, or an IndexError where NumPy raises one."""
    shape, key = case
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    a = mx.array(x)
    try:
        expected = x[key]
    except IndexError:
        with pytest.raises(IndexError):
            a[key]
        return
    out = a[key]
    assert out.shape == expected.shape
    _check(out, expected)


def test_an_integer_array_key_is_one_gather():
    a, x = int_pair((5, 3))
    i = mx.array([4, -1, 0], mx.int32)
    out = a[i]
    assert type(out.primitive).__name__ == "Gather" and out.inputs[0].shape == (5, 3)
    _check(out, x[[4, -1, 0]])
    _check(out, mx.take(a, i, axis=0))
    with pytest.raises(ValueError, match="getitem: boolean indices"):
        a[mx.array([True, False, True, False, True])]
    with pytest.raises(IndexError, match="getitem: too many indices"):
        mx.array(1.0)[i]


@pytest.mark.parametrize("key", [(0, 0, 0), (Ellipsis, Ellipsis), (0, Ellipsis, 0, Ellipsis)],
                         ids=str)
def test_bad_keys_are_index_and_value_errors(key):
    # NumPy raises IndexError, MLX ValueError: nuvec's error is both, in getitem and setitem
    a = mx.zeros((2, 2))
    for error in (IndexError, ValueError):
        with pytest.raises(error, match="^getitem: (too many indices|an index can only)"):
            a[key]
        with pytest.raises(error, match="^setitem: (too many indices|an index can only)"):
            a[key] = 1.0


def test_out_of_range():
    a = mx.array([0, 1, 2, 3, 4])
    with pytest.raises(IndexError, match="^getitem: index 5 is out of bounds"):
        a[5]
    with pytest.raises(IndexError, match="^getitem: index -6 is out of bounds"):
        a[-6]
    with pytest.raises(IndexError, match="^take: index 7 is out of bounds"):
        mx.take(a, 7)
    with pytest.raises(IndexError, match="^setitem: index 9 is out of bounds"):
        a[9] = 1
    # slices clip, as in Python and NumPy
    assert a[3:100].tolist() == [3, 4] and a[-100:1].tolist() == [0]
    # index arrays are checked when evaluated: never a silent out-of-bounds read
    def set_array_key():
        b = mx.array([0, 1, 2, 3, 4])
        b[mx.array([1, 5])] = 9
        return b

    for bad in (lambda: a[mx.array([0, 5])], lambda: mx.take(a, mx.array([-6])),
                lambda: mx.take(a, mx.array([5]), axis=0),
                lambda: a.at[mx.array([7])].add(1), lambda: a.at[mx.array([-6])].maximum(1),
                set_array_key, lambda: mx.take_along_axis(a, mx.array([7]), 0),
                lambda: mx.put_along_axis(a, mx.array([-6]), mx.array([1]), 0),
                lambda: mx.gather_mm(mx.ones((2, 3, 4)), mx.ones((2, 4, 5)), mx.array([0, 2])),
                lambda: mx.gather_qmm(mx.ones((1, 64)), *mx.quantize(mx.ones((2, 4, 64))),
                                      rhs_indices=mx.array([2]))):
        with pytest.raises(mx.EvaluationError, match="out of bounds"):
            mx.eval(bad())
    assert (a + 1).tolist() == [1, 2, 3, 4, 5]  # the engine stays usable
    assert a[mx.array([-1, -5])].tolist() == [4, 0]  # negative entries wrap once
    assert mx.take_along_axis(a, mx.array([-1]), 0).tolist() == [4]
    assert mx.put_along_axis(a, mx.array([-5]), mx.array([9]), 0).tolist() == [9, 1, 2, 3, 4]


@st.composite
def _index_case(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    key, axis, adv_shape = [], 0, draw(st.sampled_from([(), (2,), (2, 1), (3,)]))
    used_ellipsis = False
    while axis < len(shape) and draw(st.booleans()):
        d = shape[axis]
        kind = draw(st.sampled_from(["int", "slice", "none", "array", "array", "ellipsis",
                                     "mask"]))
        if kind == "mask":
            key.append(np.array(draw(st.lists(st.booleans(), min_size=d, max_size=d))))
        elif kind == "int":
            key.append(draw(st.integers(-d, d - 1)))
        elif kind == "slice":
            key.append(slice(draw(st.none() | st.integers(-5, 5)),
                             draw(st.none() | st.integers(-5, 5)),
                             draw(st.none() | st.sampled_from([-3, -2, -1, 1, 2]))))
        elif kind == "none":
            key.append(None)
            continue
        elif kind == "ellipsis":
            if used_ellipsis:
                continue
            used_ellipsis = True
            key.append(Ellipsis)
            axis = len(shape) - (len(shape) - axis) // 2
            continue
        else:
            size = int(np.prod(adv_shape))
            key.append(np.array(draw(st.lists(st.integers(-d, d - 1), min_size=size,
                                              max_size=size)), dtype=np.int64).reshape(adv_shape))
        axis += 1
    return shape, tuple(key)


@settings(max_examples=100, deadline=None)
@given(_index_case())
def test_fuzz_getitem_setitem(case):
    shape, key = case
    a, x = int_pair(shape)
    try:
        expected = x[key]
    except IndexError:
        return  # too many indices after an ellipsis jump: NumPy rejects it too
    _check(a[key], expected)
    v = np.arange(expected.size, dtype=np.float32).reshape(expected.shape) - 50
    y = x.copy()
    y[key] = v
    b = a
    b[key] = mx.array(v)
    _check(b, y)
    for method, ufunc in (("add", np.add), ("maximum", np.maximum)):
        y = x.copy()
        ufunc.at(y, key, v)  # repeated entries of the index arrays accumulate
        _check(getattr(mx.array(x).at[key], method)(mx.array(v)), y)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_fuzz_scatter_accumulates(data):
    n = data.draw(st.integers(1, 5), label="n")
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=0, max_size=8),
                             label="idx"), dtype=np.int64)
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2) - 3
    v = np.linspace(-2, 3, idx.size * 2, dtype=np.float32).reshape(idx.size, 2)
    for method, ufunc in (("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
                          ("maximum", np.maximum), ("minimum", np.minimum)):
        y = x.copy()
        ufunc.at(y, idx, v)
        _check(getattr(mx.array(x).at[mx.array(idx)], method)(mx.array(v)), y)
    y = x.copy()
    np.divide.at(y, idx, v + 5)  # divide multiplies by the reciprocal: equal to rounding
    assert_allclose(mx.array(x).at[mx.array(idx)].divide(mx.array(v + 5)), y, rtol=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_fuzz_along_axis(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3), label="shape"))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    # indices: any size along `axis`, size 1 or the array's size elsewhere (they broadcast)
    index_shape = [data.draw(st.integers(0, 4)) if i == axis % len(shape)
                   else data.draw(st.sampled_from([1, d])) for i, d in enumerate(shape)]
    n = shape[axis]
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(index_shape)),
                                      max_size=int(np.prod(index_shape)))),
                   dtype=np.int64).reshape(index_shape)
    a, x = int_pair(shape)
    _check(mx.take_along_axis(a, mx.array(idx), axis), np.take_along_axis(x, idx, axis))
    # put_along_axis with distinct indices in each row (NumPy leaves the order of repeated
    # writes unspecified); odd ones written as negative indices
    k = data.draw(st.integers(0, n), label="k")
    order = np.argsort(np.random.default_rng(k).random(shape), axis=axis)
    put_idx = np.take(order, list(range(k)), axis=axis)
    put_idx = put_idx - n * (put_idx % 2)
    values = np.arange(put_idx.size, dtype=np.float32).reshape(put_idx.shape) + 100
    y = x.copy()
    np.put_along_axis(y, put_idx, values, axis)
    _check(mx.put_along_axis(a, mx.array(put_idx), mx.array(values), axis), y)


ERRORS = [
    (lambda: mx.zeros((2,))[mx.array([True, False])], ValueError, "getitem"),
    (lambda: mx.zeros((2,))[mx.array([0.0])], TypeError, "getitem"),
    (lambda: mx.zeros((2,))[np.array([0.5])], TypeError, "getitem"),
    (lambda: mx.zeros((2,))[1.0], TypeError, "getitem"),
    (lambda: mx.zeros((2,))[True], TypeError, "getitem"),
    (lambda: mx.zeros((2,))[np.array(True)], TypeError, "getitem"),
    (lambda: mx.zeros((3, 4))[np.array([True, False])], IndexError, "getitem"),
    (lambda: mx.zeros((3, 4))[:, np.ones((5,), bool)], IndexError, "getitem"),
    (lambda: mx.zeros((3, 4))[np.ones((2, 4), bool)], IndexError, "getitem"),
    (lambda: mx.zeros((3, 4)).__setitem__(np.array([True, False]), 1.0), IndexError, "setitem"),
    (lambda: mx.zeros((2,))["a"], TypeError, "getitem"),
    (lambda: mx.zeros((2,))[0, 0], IndexError, "getitem"),
    (lambda: mx.zeros(())[0], IndexError, "getitem"),
    (lambda: mx.zeros((2,))[..., ...], IndexError, "getitem"),
    (lambda: mx.zeros((2,))[::0], ValueError, "getitem"),
    (lambda: mx.zeros((2,))[0.5:], TypeError, "getitem"),
    (lambda: mx.zeros((2, 2))[[0, 1], [0, 1, 1]], ValueError, "getitem"),
    (lambda: mx.zeros((2, 2)).__setitem__(([0, 1], [0, 1, 1]), 1), ValueError, "setitem"),
    (lambda: mx.zeros((2,)).__setitem__(0, mx.zeros((2,))), ValueError, "setitem"),
    (lambda: mx.zeros((2,)).__setitem__(mx.array([True]), 1), ValueError, "setitem"),
    (lambda: mx.zeros((3,)).at[mx.array([0, 1])].add(mx.zeros((3,))), ValueError, "at.add"),
    (lambda: mx.zeros((3,), mx.int32).at[0].divide(2), TypeError, "at.divide"),
    (lambda: mx.zeros((3,), mx.bool_).at[0].subtract(True), TypeError, "at.subtract"),
    (lambda: mx.take(mx.zeros((2,)), mx.array([0.0])), TypeError, "take"),
    (lambda: mx.take(mx.zeros((2,)), mx.array([True])), ValueError, "take"),
    (lambda: mx.take(mx.zeros((2,)), 0, axis=1), ValueError, "take"),
    (lambda: mx.take(mx.zeros((2,)), 2, axis=0), IndexError, "take"),
    (lambda: mx.take(mx.zeros(()), 0, axis=0), ValueError, "take"),
    (lambda: mx.take_along_axis(mx.zeros((2, 2)), mx.array([0]), axis=0), ValueError,
     "take_along_axis"),
    (lambda: mx.take_along_axis(mx.zeros((2, 2)), mx.array([[0, 0, 0]]), axis=0), ValueError,
     "take_along_axis"),
    (lambda: mx.take_along_axis(mx.zeros((2, 2)), mx.array([[0.0]]), axis=0), TypeError,
     "take_along_axis"),
    (lambda: mx.put_along_axis(mx.zeros((2, 2)), mx.array([[0]]), mx.zeros((3,)), axis=0),
     ValueError, "put_along_axis"),
    (lambda: mx.put_along_axis(mx.zeros((2, 2)), mx.array([[0]]), 1.0, axis=2), ValueError,
     "put_along_axis"),
    # a Python int the array's integer dtype cannot hold (MLX's check)
    (lambda: mx.zeros((2,), mx.int8).__setitem__(0, 1000), ValueError, "setitem"),
    (lambda: mx.zeros((2,), mx.uint8).at[0].add(-1), ValueError, "at.add"),
    (lambda: mx.put_along_axis(mx.zeros((2,), mx.int8), mx.array([0]), 1000, axis=0),
     ValueError, "put_along_axis"),
]


@pytest.mark.parametrize("call,error,op", ERRORS, ids=[f"{e[2]}-{i}" for i, e in
                                                        enumerate(ERRORS)])
def test_errors(call, error, op):
    with pytest.raises(error, match=f"^{op}: "):
        call()


def test_vmap_over_indices_only():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([[0, 3], [2, 2], [-1, 1]])
    out = mx.vmap(lambda a, i: a[i, 1:], in_axes=(None, 0))(mx.array(x), mx.array(idx))
    _check(out, np.stack([x[i, 1:] for i in idx]))
    v = np.ones((3, 2, 3), dtype=np.float32)
    out = mx.vmap(lambda a, i, u: a.at[i].add(u), in_axes=(None, 0, 0))(
        mx.array(x), mx.array(idx), mx.array(v))
    expected = []
    for i, u in zip(idx, v):
        y = x.copy()
        np.add.at(y, i, u)
        expected.append(y)
    _check(out, np.stack(expected))


def test_grad_accumulates_repeated_reads():
    x = mx.array([1.0, 2.0, 3.0])
    g = mx.grad(lambda a: (a[mx.array([0, 0, 2])] * mx.array([1.0, 2.0, 3.0])).sum())(x)
    assert g.tolist() == [3.0, 0.0, 3.0]
    g = mx.grad(lambda a: a.at[mx.array([1, 1])].maximum(mx.array([5.0, 5.0])).sum())(x)
    assert g.tolist() == [1.0, 0.0, 1.0]  # x[1] lost to the updates


# (key, the positions it writes, updates): ties of x and u, ties among the updates only, a
# single winner and no tie, through static keys (elementwise) and array keys (Scatter)
EXTREMUM_TIES = [
    ("int_tie", 1, [1], [2.0]),
    ("slice_tie", slice(1, 2), [1], [2.0]),
    ("reversed_whole_tie", slice(None, None, -1), [2, 1, 0], [3.0, 0.0, 1.0]),
    ("array_tie", [1], [1], [2.0]),
    ("repeated_tie", [1, 1], [1, 1], [2.0, 2.0]),
    ("repeated_tie_and_loser", [1, 1, 1], [1, 1, 1], [2.0, 2.0, 0.0]),
    ("repeated_above", [1, 1], [1, 1], [7.0, 7.0]),
    ("repeated_below", [1, 1], [1, 1], [-7.0, -7.0]),
    ("one_winner", [1, 1], [1, 1], [7.0, 8.0]),
    ("no_tie", [1, 2], [1, 2], [9.0, -9.0]),
]


@pytest.mark.parametrize("method, ufunc", [("maximum", np.maximum), ("minimum", np.minimum)],
                         ids=["maximum", "minimum"])
@pytest.mark.parametrize("key, pos, u", [c[1:] for c in EXTREMUM_TIES],
                         ids=[c[0] for c in EXTREMUM_TIES])
def test_at_extremum_derivative_at_ties(method, ufunc, key, pos, u):
    """MLX's rule: every entry of x and of the updates equal to the result gets the whole
    cotangent (jvp: the sum of their tangents), whichever path the key takes."""
    x, u, ct = np.array([1.0, 2.0, 3.0]), np.array(u), np.array([4.0, 5.0, 6.0])
    tx, tu = np.array([10.0, 20.0, 30.0]), 100.0 * 10.0 ** np.arange(len(u))
    out = x.copy()
    ufunc.at(out, pos, u)
    x_wins, u_wins = x == out, u == out[pos]
    tangent = tx * x_wins
    np.add.at(tangent, pos, tu * u_wins)
    key = mx.array(key) if isinstance(key, list) else key

    def f(a, b):
        return getattr(a.at[key], method)(b)

    args = [mx.array(x, mx.float64), mx.array(u, mx.float64)]
    _, (gx, gu) = mx.vjp(f, args, [mx.array(ct, mx.float64)])
    _, (t,) = mx.jvp(f, args, [mx.array(tx, mx.float64), mx.array(tu, mx.float64)])
    _check(gx, ct * x_wins, dt.float64)
    _check(gu, ct[pos] * u_wins, dt.float64)
    _check(t, tangent, dt.float64)


@pytest.mark.parametrize("method, greater", [("maximum", np.greater), ("minimum", np.less)],
                         ids=["maximum", "minimum"])
@pytest.mark.parametrize("key", [slice(None), slice(0, 3), Ellipsis], ids=str)
def test_at_extremum_of_the_whole_array_is_elementwise(method, greater, key):
    """A key covering the whole array in order is MLX's plain `maximum(a, u)`: a tie's
    derivative goes to `u` alone."""
    x, u, ct = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0]), np.array([4.0, 5.0, 6.0])
    x_wins = greater(x, u)
    _, (gx, gu) = mx.vjp(lambda a, b: getattr(a.at[key], method)(b),
                         [mx.array(x), mx.array(u)], [mx.array(ct)])
    _check(gx, ct * x_wins)
    _check(gu, ct * ~x_wins)


@pytest.mark.parametrize("index_dtype", [d for d in ALL if d.is_integer], ids=lambda d: d.name)
def test_index_dtypes(index_dtype):
    a, x = int_pair((4, 3))
    idx = np.array([3, 0, 3])
    i = mx.array(idx, index_dtype)
    _check(a[i], x[idx])
    _check(mx.take(a, i, axis=0), np.take(x, idx, axis=0))
    y = x.copy()
    np.add.at(y, idx, 1.0)
    _check(a.at[i].add(1.0), y)


@pytest.mark.parametrize("key", [slice(-2, None, -3), slice(-5, -3, -1), slice(0, 0, -1)],
                         ids=str)
def test_empty_negative_step_slices(key):
    x = np.arange(3, dtype=np.float32)[:1]
    _check(mx.array(x)[key], x[key])
