"""Inputs that once reached a raw Python or NumPy error, or an error naming a helper or the
function a public one delegates to: each now fails at the call, naming the function called."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx

X = mx.ones((2, 3))
W_Q, SCALES, BIASES = mx.quantize(mx.ones((3, 64)))


@pytest.mark.parametrize("call, error, message", [
    (lambda: mx.nan_to_num(X, nan=None), TypeError,
     r"^nan_to_num: nan must be a real number, got None \(NoneType\)"),
    (lambda: mx.slice(X, mx.array([0]), object(), (1, 3)), TypeError,
     r"^slice: axes must be an int or a sequence of ints, got <object"),
    (lambda: mx.slice_update(X, mx.ones((1, 3)), mx.array([0]), "a"), TypeError,
     r"^slice_update: axes must be an int or a sequence of ints, got 'a'"),
    (lambda: mx.tensordot(X, X, axes=mx.array([1, 2])), TypeError,
     r"^tensordot: axes must be an int or a pair of lists of ints, got array\(\[1, 2\]"),
    (lambda: mx.tensordot(X, X, axes=([1.5], [1])), TypeError,
     r"^tensordot: axes must be an int or a pair of lists of ints, got \(\[1.5\], \[1\]\)"),
    (lambda: mx.topk(X, mx.array([1, 2])), TypeError,
     r"^topk: k must be an int, got array\(\[1, 2\], dtype=int32\) \(Array\)"),
    (lambda: X.reshape(None), TypeError,
     r"^reshape: shape must be an int or a sequence of ints, got None"),
    (lambda: mx.jvp(3, [X], [X]), TypeError, r"^jvp: fun must be callable, got 3 \(int\)"),
    (lambda: mx.vjp(3, [X], [X]), TypeError, r"^vjp: fun must be callable, got 3 \(int\)"),
    (lambda: X[[[0, 1], [0]]], ValueError,
     r"^getitem: nested index lists must be rectangular, got \[\[0, 1\], \[0\]\]"),
    (lambda: mx.from_dlpack(np.array([1, "a"], dtype=object)), TypeError,
     r"^from_dlpack: cannot import ndarray data of dtype object: DLPack only supports"),
    (lambda: mx.asarray(["a"]), TypeError, r"^asarray: cannot make an array from data of type"),
    (lambda: mx.full((2,), vals=["a"]), TypeError,
     r"^full: cannot make an array from data of type"),
    (lambda: mx.full((2,), vals=[[1], [2, 3]]), ValueError,
     r"^full: nested sequences must be rectangular"),
    (lambda: mx.asarray([2**64]), OverflowError, r"^asarray: the integer 18446744073709551616"),
    (lambda: mx.divmod(mx.array([1j]), 2), TypeError,
     r"^divmod: not supported for complex64 arrays"),
    (lambda: mx.divmod(X, mx.ones((4,))), ValueError,
     r"^divmod: shapes \(2, 3\) and \(4,\) cannot be broadcast together"),
    (lambda: mx.gather_qmm(mx.ones((2, 64)), W_Q, SCALES), ValueError,
     r"^gather_qmm: biases must be given for affine quantization"),
    (lambda: mx.gather_qmm(mx.ones((2, 32)), W_Q, SCALES, BIASES), ValueError,
     r"^gather_qmm: the last axis of x \(shape \(2, 32\)\)"),
    (lambda: mx.array(bogus=1), TypeError, r"^array\(\) got an unexpected keyword argument"),
])
def test_bad_input_names_the_function_called(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_the_valid_spellings_still_work():
    assert mx.nan_to_num(mx.array([np.nan, np.inf]), nan=np.float32(2), posinf=mx.array(3.0)
                         ).tolist() == [2.0, 3.0]
    assert mx.slice(X, mx.array([1]), 0, (1, 3)).shape == (1, 3)
    assert mx.tensordot(X, X, axes=(1, 1)).shape == (2, 2)
    assert mx.tensordot(X, X, axes=[[0, 1], (0, 1)]).shape == ()
    assert sorted(mx.topk(mx.array([3, 1, 2]), mx.array([2])).tolist()) == [2, 3]
    assert X.reshape(np.int64(6)).shape == (6,) and X.reshape([3, 2]).shape == (3, 2)
    assert X[[[0, 1], [1, 0]]].shape == (2, 2, 3)
    assert [v.tolist() for v in mx.divmod(mx.array([7, -7]), 2)] == [[3, -4], [1, 1]]
    assert mx.gather_qmm(mx.ones((2, 64)), W_Q, SCALES, BIASES).shape == (2, 3)
