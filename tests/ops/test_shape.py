"""Shape, slicing and join operations against NumPy: every dtype, 0-d/empty/size-1 shapes,
views, hypothesis chains of reshapes and transposes, and every rejected input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nuvec as mx
from helpers import int_pair
from nuvec.graph import dtypes as dt
from nuvec.testing import assert_allclose

ALL = dt.ALL_DTYPES


def _check(actual, expected, dtype):
    assert_allclose(actual, np.asarray(expected, dtype=dtype.np), dtype=dtype)


# (name, nuvec function, NumPy reference, input shape)
CASES = [
    ("reshape", lambda a: mx.reshape(a, (4, -1)), lambda x: x.reshape(4, -1), (2, 3, 4)),
    ("flatten", lambda a: mx.flatten(a), lambda x: x.reshape(-1), (2, 3, 4)),
    ("flatten_mid", lambda a: mx.flatten(a, 1, -1), lambda x: x.reshape(2, -1), (2, 3, 4)),
    ("unflatten", lambda a: mx.unflatten(a, 1, (3, 1)), lambda x: x.reshape(2, 3, 1, 4),
     (2, 3, 4)),
    ("transpose", lambda a: mx.transpose(a), lambda x: x.T, (2, 3, 4)),
    ("transpose_axes", lambda a: mx.transpose(a, (1, -1, 0)), lambda x: x.transpose(1, 2, 0),
     (2, 3, 4)),
    ("swapaxes", lambda a: mx.swapaxes(a, 0, -1), lambda x: x.swapaxes(0, -1), (2, 3, 4)),
    ("moveaxis", lambda a: mx.moveaxis(a, 0, 2), lambda x: np.moveaxis(x, 0, 2), (2, 3, 4)),
    ("expand_dims", lambda a: mx.expand_dims(a, (0, -1)), lambda x: x[None, ..., None],
     (2, 3)),
    ("squeeze", lambda a: mx.squeeze(a), lambda x: np.squeeze(x), (1, 3, 1)),
    ("squeeze_axis", lambda a: mx.squeeze(a, -1), lambda x: np.squeeze(x, -1), (1, 3, 1)),
    ("broadcast_to", lambda a: mx.broadcast_to(a, (2, 3, 4)),
     lambda x: np.broadcast_to(x, (2, 3, 4)), (3, 1)),
    ("concatenate", lambda a: mx.concatenate([a, a[:1]], axis=0),
     lambda x: np.concatenate([x, x[:1]]), (2, 3)),
    ("concatenate_none", lambda a: mx.concatenate([a, a], axis=None),
     lambda x: np.concatenate([x, x], axis=None), (2, 3)),
    ("stack", lambda a: mx.stack([a, a], axis=1), lambda x: np.stack([x, x], axis=1), (2, 3)),
    ("split", lambda a: mx.split(a, 3, axis=1)[1], lambda x: np.split(x, 3, axis=1)[1],
     (2, 6)),
    ("split_indices", lambda a: mx.split(a, [1, -1, 10])[1],
     lambda x: np.split(x, [1, -1, 10])[1], (5, 2)),
    ("pad", lambda a: mx.pad(a, ((1, 2), (0, 1))), lambda x: np.pad(x, ((1, 2), (0, 1))),
     (2, 3)),
    ("pad_edge", lambda a: mx.pad(a, 2, "edge"), lambda x: np.pad(x, 2, "edge"), (2, 3)),
    ("repeat", lambda a: mx.repeat(a, 3, axis=1), lambda x: np.repeat(x, 3, axis=1), (2, 3)),
    ("repeat_flat", lambda a: mx.repeat(a, 2), lambda x: np.repeat(x, 2), (2, 3)),
    ("tile", lambda a: mx.tile(a, (2, 1, 3)), lambda x: np.tile(x, (2, 1, 3)), (2, 3)),
    ("roll", lambda a: mx.roll(a, 4), lambda x: np.roll(x, 4), (2, 3)),
    ("roll_axes", lambda a: mx.roll(a, (1, -2), (0, 1)), lambda x: np.roll(x, (1, -2), (0, 1)),
     (2, 3)),
    ("atleast_3d", lambda a: mx.atleast_3d(a), lambda x: np.atleast_3d(x), (3,)),
    ("slice", lambda a: mx.slice(a, mx.array([1, 1]), (0, 1), (1, 2)), lambda x: x[1:2, 1:3],
     (2, 3)),
    ("slice_update", lambda a: mx.slice_update(a, a[:1, :2], mx.array([1, 1]), (0, 1)),
     lambda x: np.concatenate([x[:1], np.concatenate([x[1:, :1], x[:1, :2]], 1)]), (2, 3)),
]


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("name,fn,ref,shape", CASES, ids=[c[0] for c in CASES])
def test_against_numpy(name, fn, ref, shape, dtype):
    a, x = int_pair(shape, dtype)
    _check(fn(a), ref(x), dtype)


VIEW_CASES = [c for c in CASES if c[0] in ("reshape", "transpose", "concatenate", "pad", "roll",
                                           "tile", "split", "slice", "slice_update")]


@pytest.mark.parametrize("name,fn,ref,shape", VIEW_CASES, ids=[c[0] for c in VIEW_CASES])
def test_views(name, fn, ref, shape):
    # inputs that are views: a reversed step-slice, and a transpose
    size = int(np.prod(shape))
    big_a, big_x = int_pair((3, 2 * size), dt.float32)
    _check(fn(mx.reshape(big_a[1, ::-2], shape)), ref(big_x[1, ::-2].reshape(shape)), dt.float32)
    base_a, base_x = int_pair(shape[::-1], dt.float32, seed=1)
    _check(fn(mx.transpose(base_a)), ref(base_x.T), dt.float32)


@pytest.mark.parametrize("shape", [(), (0,), (1,), (0, 3), (1, 1)], ids=str)
def test_special_shapes(shape):
    a, x = int_pair(shape)
    _check(mx.reshape(a, (-1,)), x.reshape(-1), dt.float32)
    _check(mx.flatten(a), x.reshape(-1), dt.float32)
    _check(mx.transpose(a), x.T, dt.float32)
    _check(mx.tile(a, 2), np.tile(x, 2), dt.float32)
    _check(mx.repeat(a, 2), np.repeat(x, 2), dt.float32)
    _check(mx.pad(a, 1), np.pad(x, 1), dt.float32)
    _check(mx.roll(a, 1), np.roll(x, 1), dt.float32)
    _check(mx.expand_dims(a, 0), x[None], dt.float32)
    _check(mx.atleast_2d(a), np.atleast_2d(x), dt.float32)
    _check(mx.atleast_1d(a), np.atleast_1d(x), dt.float32)
    if shape:
        _check(mx.concatenate([a, a]), np.concatenate([x, x]), dt.float32)
        _check(mx.stack([a, a], -1), np.stack([x, x], -1), dt.float32)
        _check(a[::-1], x[::-1], dt.float32)


def test_concatenate_promotes_and_broadcast_helpers():
    out = mx.concatenate([mx.array([1, 2], mx.int8), mx.array([0.5], mx.float16)])
    assert out.dtype is mx.float16
    assert mx.broadcast_shapes((2, 1), (3,), (1, 1, 1)) == (1, 2, 3)
    arrays = mx.broadcast_arrays(mx.zeros((2, 1)), mx.ones((3,)))
    assert type(arrays) is list  # as MLX's
    a, b = arrays
    assert a.shape == b.shape == (2, 3)
    assert mx.broadcast_arrays() == []
    x, y = mx.atleast_1d(1, mx.zeros((2, 2)))
    assert x.shape == (1,) and y.shape == (2, 2)
    assert [p.shape for p in mx.split(mx.zeros((4,)), [0, 10])] == [(0,), (4,), (0,)]


def test_pad_constant_values_cast_and_methods():
    a, x = int_pair((2, 3), dt.int32)
    _check(mx.pad(a, 1, constant_values=7), np.pad(x, 1, constant_values=7), dt.int32)
    _check(mx.pad(a, (1, 0), constant_values=mx.array(2.9)), np.pad(x, (1, 0), constant_values=2),
           dt.int32)
    f = mx.zeros((2, 3, 4))
    assert f.flatten().shape == (24,) and f.flatten(1).shape == (2, 12)
    # axes past either end are clamped, as in MLX
    assert f.flatten(0, 7).shape == (24,) and f.flatten(-9, 1).shape == (6, 4)
    assert f.flatten(-4, 0).shape == (2, 3, 4)
    with pytest.raises(ValueError, match=r"^flatten: end_axis 5 must come after start_axis 3"):
        f.flatten(3, 5)
    assert f.transpose(2, 0, 1).shape == (4, 2, 3) and f.transpose((1, 0, 2)).shape == (3, 2, 4)
    assert f.transpose().shape == (4, 3, 2) and f.T.shape == (4, 3, 2)
    assert f.swapaxes(0, 2).shape == (4, 3, 2) and f.moveaxis(2, 0).shape == (4, 2, 3)
    assert f[:1].squeeze(0).shape == (3, 4)
    assert [p.shape for p in f.split(2, axis=2)] == [(2, 3, 2), (2, 3, 2)]


def test_slice_dynamic():
    a, x = int_pair((4, 5), dt.int32)
    _check(mx.slice(a, mx.array([1, 2]), (0, 1), (2, 3)), x[1:3, 2:5], dt.int32)
    _check(mx.slice(a, mx.array(1), (1,), (3, 2)), x[:3, 1:3], dt.int32)
    # a start past the end is clamped so the window fits
    _check(mx.slice(a, mx.array([9]), (0,), (2, 5)), x[2:4], dt.int32)
    _check(mx.slice(a, mx.array([-3]), (0,), (2, 5)), x[0:2], dt.int32)
    u = mx.full((2, 2), -1, mx.int32)
    y = x.copy()
    y[1:3, 3:5] = -1
    _check(mx.slice_update(a, u, mx.array([1, 4]), (0, 1)), y, dt.int32)
    y = x.copy()
    y[3] = 9
    _check(mx.slice_update(a, mx.array([9]), mx.array(7), (0,)), y, dt.int32)


def test_slice_nested_vmap():
    x = np.arange(2 * 3 * 6, dtype=np.float32).reshape(2, 3, 6)
    starts = np.array([[0, 1, 2], [3, 4, 9]])
    f = mx.vmap(mx.vmap(lambda r, s: mx.slice(r, s[None], (0,), (2,))))
    out = f(mx.array(x), mx.array(starts))
    expected = np.stack([np.stack([x[i, j, min(starts[i, j], 4):min(starts[i, j], 4) + 2]
                                   for j in range(3)]) for i in range(2)])
    _check(out, expected, dt.float32)
    g = mx.vmap(mx.vmap(lambda r, s: mx.slice_update(r, mx.array([-1.0, -2.0]), s[None], (0,))))
    out = g(mx.array(x), mx.array(starts))
    expected = x.copy()
    for i in range(2):
        for j in range(3):
            k = min(starts[i, j], 4)
            expected[i, j, k:k + 2] = [-1, -2]
    _check(out, expected, dt.float32)
    for shape in ((0, 3, 6), (2, 0, 6)):  # empty batches
        empty = g(mx.zeros(shape), mx.array(np.zeros(shape[:2], np.int32)))
        _check(empty, np.zeros(shape), dt.float32)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_reshape_transpose_chains(data):
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4), label="shape")
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    a = mx.array(x)
    for _ in range(data.draw(st.integers(1, 5), label="steps")):
        step = data.draw(st.sampled_from(["transpose", "reshape", "slice"]), label="step")
        if step == "transpose":
            perm = data.draw(st.permutations(range(x.ndim)), label="perm")
            a, x = mx.transpose(a, perm), x.transpose(perm)
        elif step == "reshape":  # into 1 to 4 dimensions, one of them sometimes inferred (-1)
            new_shape, left = [], x.size
            for _ in range(data.draw(st.integers(0, 3), label="ndim")):
                d = data.draw(st.sampled_from([f for f in range(1, left + 1) if left % f == 0]))
                new_shape.append(d)
                left //= d
            new_shape.insert(data.draw(st.integers(0, len(new_shape))), left)
            spec = [-1 if i == 0 and data.draw(st.booleans()) else d
                    for i, d in enumerate(new_shape)]
            a, x = mx.reshape(a, spec), x.reshape(new_shape)
        else:  # a step slice, negative steps too, on the first axis
            k = data.draw(st.sampled_from([2, -1, -2]), label="slice_step")
            a, x = a[::k], x[::k]
    _check(a, x, dt.float32)
    _check(a * 2 + 1, x * 2 + 1, dt.float32)  # the chained view feeding kernels
    _check(mx.sum(a, axis=-1), x.sum(axis=-1), dt.float32)


ERRORS = [
    (lambda: mx.reshape(mx.zeros((2, 3)), (4, -1)), ValueError, "reshape"),
    (lambda: mx.reshape(mx.zeros((2, 3)), (-1, -1)), ValueError, "reshape"),
    (lambda: mx.reshape(mx.zeros((2, 3)), (5,)), ValueError, "reshape"),
    (lambda: mx.reshape(mx.zeros((2, 3)), "ab"), TypeError, "reshape"),
    (lambda: mx.reshape(mx.zeros((0, 3)), (-2, 0)), ValueError, "reshape"),
    (lambda: mx.reshape(mx.zeros((2, 3)), (3.0, 2)), TypeError, "reshape"),  # never truncated
    (lambda: mx.zeros((2, 3)).reshape(3.5, 2), TypeError, "reshape"),
    (lambda: mx.broadcast_to(mx.zeros((2, 3)), (2, 3.0)), TypeError, "broadcast_to"),
    (lambda: mx.broadcast_to(mx.array(1.0), (2**40, 2**40)), ValueError, "broadcast_to"),
    (lambda: mx.expand_dims(mx.zeros((2,)), 0.5), TypeError, "expand_dims"),
    (lambda: mx.tile(mx.zeros((2,)), 1.5), TypeError, "tile"),
    (lambda: mx.tile(mx.zeros((2,)), (1, 2.0)), TypeError, "tile"),
    (lambda: mx.split(mx.zeros((4,)), "ab"), TypeError, "split"),
    (lambda: mx.split(mx.zeros((4,)), [1.5]), TypeError, "split"),
    (lambda: mx.flatten(mx.zeros((2, 3)), 1, 0), ValueError, "flatten"),
    (lambda: mx.flatten(mx.zeros((2, 3)), 2), ValueError, "flatten"),
    (lambda: mx.unflatten(mx.zeros((2, 6)), 1, (4, -1)), ValueError, "unflatten"),
    (lambda: mx.unflatten(mx.zeros((2, 6)), 1, ()), ValueError, "unflatten"),
    (lambda: mx.transpose(mx.zeros((2, 3)), (0,)), ValueError, "transpose"),
    (lambda: mx.transpose(mx.zeros((2, 3)), (0, 0)), ValueError, "transpose"),
    (lambda: mx.transpose(mx.zeros((2, 3)), (0, 2)), ValueError, "transpose"),
    (lambda: mx.swapaxes(mx.zeros((2, 3)), 0, 2), ValueError, "swapaxes"),
    (lambda: mx.moveaxis(mx.zeros((2, 3)), 0, -3), ValueError, "moveaxis"),
    (lambda: mx.expand_dims(mx.zeros((2,)), (0, 0)), ValueError, "expand_dims"),
    (lambda: mx.expand_dims(mx.zeros((2,)), 3), ValueError, "expand_dims"),
    (lambda: mx.squeeze(mx.zeros((2, 1)), 0), ValueError, "squeeze"),
    (lambda: mx.broadcast_to(mx.zeros((2, 3)), (3, 3)), ValueError, "broadcast_to"),
    (lambda: mx.broadcast_to(mx.zeros((2, 3)), (3,)), ValueError, "broadcast_to"),
    (lambda: mx.broadcast_shapes(), ValueError, "broadcast_shapes"),
    (lambda: mx.broadcast_shapes((2,), (3,)), ValueError, "broadcast_shapes"),
    (lambda: mx.broadcast_arrays(mx.zeros((2,)), mx.zeros((3,))), ValueError,
     "broadcast_arrays"),
    (lambda: mx.concatenate([]), ValueError, "concatenate"),
    (lambda: mx.concatenate(mx.zeros((2,))), TypeError, "concatenate"),
    (lambda: mx.concatenate([mx.zeros((2, 3)), mx.zeros((3, 2))]), ValueError, "concatenate"),
    (lambda: mx.concatenate([mx.zeros((2, 3)), mx.zeros((2,))]), ValueError, "concatenate"),
    (lambda: mx.concatenate([mx.zeros(()), mx.zeros(())]), ValueError, "concatenate"),
    (lambda: mx.concatenate([mx.zeros((2,))], axis=1), ValueError, "concatenate"),
    (lambda: mx.stack([mx.zeros((2,)), mx.zeros((3,))]), ValueError, "stack"),
    (lambda: mx.stack([mx.zeros((2,))], axis=2), ValueError, "stack"),
    (lambda: mx.split(mx.zeros((5,)), 2), ValueError, "split"),
    (lambda: mx.split(mx.zeros((5,)), 0), ValueError, "split"),
    (lambda: mx.split(mx.zeros(()), 1), ValueError, "split"),
    (lambda: mx.pad(mx.zeros((2,)), 1, "wrap"), ValueError, "pad"),
    (lambda: mx.pad(mx.zeros((0,)), 1, "reflect"), ValueError, "pad"),
    (lambda: mx.pad(mx.zeros((2,)), -1), ValueError, "pad"),
    (lambda: mx.pad(mx.zeros((2,)), 1.5), TypeError, "pad"),  # never truncated
    (lambda: mx.pad(mx.zeros((2,), mx.int8), 1, constant_values=1000), ValueError, "pad"),
    (lambda: mx.pad(mx.zeros((2, 2)), ((1, 1), (0.5, 0))), TypeError, "pad"),
    (lambda: mx.roll(mx.zeros((2, 2)), 1.5), TypeError, "roll"),
    (lambda: mx.roll(mx.zeros((2, 2)), 1, 0.0), TypeError, "roll"),
    (lambda: mx.squeeze(mx.zeros((1, 2)), 0.0), TypeError, "squeeze"),
    (lambda: mx.pad(mx.zeros((2, 2)), (1, 2, 3)), ValueError, "pad"),
    (lambda: mx.pad(mx.zeros((0,)), 1, "edge"), ValueError, "pad"),
    (lambda: mx.pad(mx.zeros((2,)), 1, constant_values=mx.zeros((2,))), ValueError, "pad"),
    (lambda: mx.repeat(mx.zeros((2,)), -1), ValueError, "repeat"),
    (lambda: mx.repeat(mx.zeros((2,)), 1.5), TypeError, "repeat"),
    (lambda: mx.repeat(mx.zeros((2,)), 2, axis=1), ValueError, "repeat"),
    (lambda: mx.tile(mx.zeros((2,)), (-1,)), ValueError, "tile"),
    (lambda: mx.roll(mx.zeros((2, 2)), (1, 2), (0, 1, 1)), ValueError, "roll"),
    (lambda: mx.roll(mx.zeros((2, 2)), 1, 2), ValueError, "roll"),
    (lambda: mx.slice(mx.zeros((2, 2)), mx.array([0.5]), (0,), (1, 2)), TypeError, "slice"),
    (lambda: mx.slice(mx.zeros((2, 2)), mx.array([0, 0]), (0,), (1, 2)), ValueError, "slice"),
    (lambda: mx.slice(mx.zeros((2, 2)), mx.array([0]), (0,), (3, 2)), ValueError, "slice"),
    (lambda: mx.slice(mx.zeros((2, 2)), mx.array([0]), (0,), (1,)), ValueError, "slice"),
    (lambda: mx.slice(mx.zeros((2, 2)), mx.array([0, 0]), (0, 0), (1, 1)), ValueError,
     "slice"),
    (lambda: mx.slice(mx.zeros((2, 2)), mx.array([0]), (2,), (1, 1)), ValueError, "slice"),
    (lambda: mx.slice_update(mx.zeros((2, 2)), mx.zeros((3, 1)), mx.array([0]), (0,)),
     ValueError, "slice_update"),
    (lambda: mx.slice_update(mx.zeros((2, 2)), mx.zeros((1, 1, 1)), mx.array([0]), (0,)),
     ValueError, "slice_update"),
    (lambda: mx.slice_update(mx.zeros((2, 3)), mx.zeros((1, 2)), mx.array([0]), (0,)),
     ValueError, "slice_update"),
]


@pytest.mark.parametrize("call,error,op", ERRORS, ids=[f"{e[2]}-{i}" for i, e in
                                                        enumerate(ERRORS)])
def test_errors(call, error, op):
    with pytest.raises(error, match=f"^{op}: "):
        call()


def test_binary_operands_record_one_broadcast_each():
    """An operand of another shape gets one `BroadcastTo` node of the common shape (none for
    the operand already of it); shapes that do not broadcast raise at the call."""
    from nuvec.ops.shape import BroadcastTo

    x = mx.array(np.arange(6.0).reshape(2, 3), mx.float32)
    b = mx.array([1.0, 2.0, 3.0])
    y = mx.add(x, b)
    first, second = y.inputs
    assert first.shape == (2, 3) and not isinstance(first.primitive, BroadcastTo)
    assert isinstance(second.primitive, BroadcastTo) and second.primitive.shape == (2, 3)
    assert second.inputs[0].shape == (3,)
    np.testing.assert_array_equal(np.asarray(y), np.arange(6.0).reshape(2, 3) + [1, 2, 3])
    c = mx.multiply(mx.array([[1.0], [2.0]]), b)
    assert [a.primitive.shape for a in c.inputs] == [(2, 3), (2, 3)]
    with pytest.raises(ValueError, match=r"^add: shapes \(2, 3\) and \(2,\) cannot be "
                                         r"broadcast together$"):
        mx.add(x, mx.array([1.0, 2.0]))


@pytest.mark.parametrize("axis", [0, -1, 5])
def test_repeat_along_an_axis_of_a_0d_array_is_refused(axis):
    # MLX: IndexError "Axis 0 is out of bounds for array with 0 dimensions"
    with pytest.raises(IndexError, match=f"^repeat: axis {axis} is out of bounds for an array "
                                         "with 0 dimensions"):
        mx.repeat(mx.array(1.0), 2, axis=axis)
    assert mx.repeat(mx.array(1.0), 2).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("width, message", [
    (2**30, r"^pad: shape dimension falls outside the supported int32 range, got "
            r"\(2147483652, 2147483652\)"),
    (2**20, r"^pad: an array of shape \(2097156, 2097156\) and dtype float32 needs "
            r"17592253153344 bytes, more than"),
])
@pytest.mark.parametrize("mode", ["constant", "edge"])
def test_pad_checks_the_result_size_at_the_call(width, message, mode):
    with pytest.raises(ValueError, match=message):
        mx.pad(mx.ones((4, 4)), width, mode)
