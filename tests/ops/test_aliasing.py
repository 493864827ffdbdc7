"""An operation that changes nothing still returns a new array: updating the result in place
(`b[0] = ...`, `b += ...`) never changes the input, as in MLX."""

import pytest

import nuvec as mx

CASES = {
    "array": lambda a: mx.array(a),
    "asarray": lambda a: mx.asarray(a),
    "astype": lambda a: a.astype(mx.float32),
    "reshape": lambda a: a.reshape(a.shape),
    "flatten": lambda a: mx.flatten(a),
    "transpose_identity": lambda a: mx.transpose(a, (0,)),
    "squeeze": lambda a: mx.squeeze(a),
    "broadcast_to": lambda a: mx.broadcast_to(a, a.shape),
    "moveaxis": lambda a: mx.moveaxis(a, 0, 0),
    "swapaxes": lambda a: mx.swapaxes(a, 0, 0),
    "unflatten": lambda a: mx.unflatten(a, 0, (3,)),
    "concatenate_one": lambda a: mx.concatenate([a]),
    "pad_zero": lambda a: mx.pad(a, 0),
    "roll_zero": lambda a: mx.roll(a, 0),
    "atleast_1d": lambda a: mx.atleast_1d(a),
    "broadcast_arrays": lambda a: mx.broadcast_arrays(a)[0],
    "full_slice": lambda a: a[:],
    "ellipsis": lambda a: a[...],
    "positive": lambda a: +a,
    "real": lambda a: mx.real(a),
    "conj": lambda a: mx.conj(a),
    "sum_no_axes": lambda a: mx.sum(a, axis=()),
    "max_no_axes": lambda a: mx.max(a, axis=()),
    "logsumexp_no_axes": lambda a: mx.logsumexp(a, axis=()),
    "view_same": lambda a: mx.view(a, mx.float32),
    "fftshift_no_axes": lambda a: mx.fft.fftshift(a, axes=()),
    "nan_to_num_int": lambda a: mx.nan_to_num(a.astype(mx.int32)).astype(mx.float32),
    "stop_gradient": lambda a: mx.stop_gradient(a),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_updating_a_result_leaves_the_input(name):
    a = mx.array([1.0, 2.0, 3.0])
    b = CASES[name](a)
    assert b is not a
    b[0] = 7.0
    b += 1
    assert a.tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("op", [mx.abs, mx.floor, mx.ceil, mx.round, mx.trunc, mx.sign],
                         ids=lambda f: f.__name__)
def test_integer_shortcuts_return_new_arrays(op):
    a = mx.array([1, 2, 3], mx.uint8)
    b = op(a)
    assert b is not a
    b[0] = 9
    assert a.tolist() == [1, 2, 3]
    assert b.tolist()[0] == 9


@pytest.mark.parametrize("dynamic", [False, True], ids=["setitem", "slice_update"])
def test_a_window_update_writes_into_a_buffer_only_it_sees(dynamic):
    """A window written into an input nothing else sees reuses its buffer (no copy of the
    rest: the peak holds two arrays, not three, as a key-value cache's step needs); an input
    still referenced stays as it was."""
    import numpy as np

    a = mx.ones((1024, 1024))
    update = mx.full((2, 1024), 7.0)
    start = mx.array([3, 0])
    mx.eval(a, update, start)

    def write(x, first):
        if dynamic:
            return mx.slice_update(x, update, start if first == 3 else start * 0, (0, 1))
        x[first:first + 2] = update
        return x

    mx.reset_peak_memory()
    base = mx.get_active_memory()
    y = write(a * 2, 3)  # `a * 2` seen by the update alone
    mx.eval(y)
    assert mx.get_peak_memory() - base <= a.nbytes + 4096
    want = np.full((1024, 1024), 2.0, np.float32)
    want[3:5] = 7.0
    np.testing.assert_array_equal(np.asarray(y), want)
    x = a * 2
    mx.eval(x)
    z = write(mx.stop_gradient(x), 0)  # (a new array over x's node: x itself still seen)
    mx.eval(z)
    assert float(np.asarray(x)[0, 0]) == 2.0 and float(np.asarray(z)[0, 0]) == 7.0
