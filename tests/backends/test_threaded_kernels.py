"""The CPU kernels split over the thread pool give the bits of the one-thread path.

Each case computes one op (or its gradient) with 1, 2 and 3 threads on odd sizes, with the
pool's threshold lowered so that these small arrays are split, and compares the bytes. The
values themselves are checked against float64 NumPy in `tests/fast` and `tests/ops`; a loose
check here makes sure a case computes something.
"""

from __future__ import annotations

import threading

import ml_dtypes
import numpy as np
import pytest

import nuvec as mx
from nuvec.backends import threads

RNG = np.random.default_rng(7)
EPS = 1e-5


@pytest.fixture
def split_small(monkeypatch):
    """Lowers the thresholds so that arrays of a few KiB are split; restores the thread count."""
    monkeypatch.setattr(threads, "MIN_BYTES", 256)
    monkeypatch.setattr(threads, "MEMORY_BOUND_BYTES", 256)
    before = mx.get_num_threads()
    yield
    mx.set_num_threads(before)


def _data(shape, dtype=np.float32, low=-2.0, high=2.0):
    return RNG.uniform(low, high, shape).astype(dtype)


def _bits_per_thread_count(fn):
    """`fn()`'s evaluated outputs as bytes, for 1, 2 and 3 threads."""
    results = []
    for n in (1, 2, 3):
        mx.set_num_threads(n)
        out = fn()
        outs = out if isinstance(out, (tuple, list)) else (out,)
        mx.eval(*outs)
        results.append([np.asarray(o) for o in outs])
    return results


def _assert_same_bits(fn, reference=None, rtol=1e-3):
    one, two, three = _bits_per_thread_count(fn)
    for a, b, c in zip(one, two, three):
        assert a.dtype == b.dtype == c.dtype and a.shape == b.shape == c.shape
        assert a.tobytes() == b.tobytes() == c.tobytes()
    if reference is not None:
        np.testing.assert_allclose(one[0].astype(np.float64), reference, rtol=rtol, atol=rtol)
    assert any(t.name.startswith("nuvec-pool") for t in threading.enumerate())


FLOATS = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64]
IDS = ["float32", "float16", "bfloat16", "float64"]


@pytest.mark.parametrize("dtype", FLOATS, ids=IDS)
@pytest.mark.parametrize("weighted", [True, False], ids=["weight", "no-weight"])
def test_norms_are_split_exactly(split_small, dtype, weighted):
    x = mx.array(_data((3, 37, 131), dtype))
    w = mx.array(_data((131,), dtype)) if weighted else None
    b = mx.array(_data((131,), dtype)) if weighted else None
    _assert_same_bits(lambda: mx.fast.rms_norm(x, w, EPS))
    _assert_same_bits(lambda: mx.fast.layer_norm(x, w, b, EPS))


def test_rows_taken_shifted_or_not_keep_their_bits_under_any_split(split_small):
    """The CPU takes a row's `exp` unshifted when its sum is in [1, inf), else shifted by the
    row's maximum: rows of both kinds in one block, on 1 to 3 threads (other blocks)."""
    data = _data((600, 700), low=-3.0, high=3.0)  # over one block: the block path
    data[5] -= 300.0  # every exp underflows: shifted
    data[301] += 95.0  # exp overflows: shifted
    data[302, 7] = np.nan
    x = mx.array(data)
    x64 = data.astype(np.float64)
    m = x64.max(-1, keepdims=True)
    e = np.exp(x64 - m)
    lse = np.log(e.sum(-1, keepdims=True)) + m
    _assert_same_bits(lambda: mx.fast.softmax(x))
    _assert_same_bits(lambda: mx.fast.logsumexp(x))
    soft, = _bits_per_thread_count(lambda: mx.fast.softmax(x))[0]
    out, = _bits_per_thread_count(lambda: mx.fast.logsumexp(x))[0]
    keep = np.arange(600) != 302
    np.testing.assert_allclose(soft[keep], (e / e.sum(-1, keepdims=True))[keep], rtol=1e-5,
                               atol=1e-9)
    np.testing.assert_allclose(out[keep], lse[keep], rtol=1e-6)
    assert np.isnan(soft[302]).all() and np.isnan(out[302]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["float32", "float16"])
def test_norm_gradients_are_split_exactly(split_small, dtype):
    x = mx.array(_data((5, 29, 97), dtype))
    w, b = mx.array(_data((97,), dtype)), mx.array(_data((97,), dtype))
    g = mx.array(_data((5, 29, 97), dtype))

    def rms():
        return mx.vjp(lambda x, w: mx.fast.rms_norm(x, w, EPS), [x, w], [g])[1]

    def layer():
        return mx.vjp(lambda x, w, b: mx.fast.layer_norm(x, w, b, EPS), [x, w, b], [g])[1]

    _assert_same_bits(rms)
    _assert_same_bits(layer)


@pytest.mark.parametrize("dtype", FLOATS, ids=IDS)
def test_softmax_and_logsumexp_are_split_exactly(split_small, dtype):
    data = _data((7, 33, 61), dtype)
    data[0, 0, :] = -np.inf  # a row whose maximum is infinite
    x = mx.array(data)
    x64 = data.astype(np.float64)[1:]
    m = x64.max(-1, keepdims=True)
    lse = np.log(np.exp(x64 - m).sum(-1, keepdims=True)) + m
    one, *_ = _bits_per_thread_count(lambda: mx.fast.logsumexp(x))
    _assert_same_bits(lambda: mx.fast.softmax(x))
    _assert_same_bits(lambda: mx.fast.logsumexp(x))
    np.testing.assert_allclose(one[0][1:].astype(np.float64), lse, rtol=1e-2)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["float32", "float16"])
def test_cross_entropy_and_gradient_are_split_exactly(split_small, dtype):
    logits = mx.array(_data((67, 131), dtype))
    targets = mx.array(RNG.integers(-131, 140, 67).astype(np.int32))  # some out of range:
    # computed lazily (`+ 0`), so the call cannot reject them and their rows are NaN
    _assert_same_bits(lambda: mx.fast.cross_entropy(logits, targets + 0))
    _assert_same_bits(lambda: mx.grad(lambda z: mx.fast.cross_entropy(z, targets + 0).sum())(
        logits))


@pytest.mark.parametrize("traditional", [False, True], ids=["halves", "traditional"])
@pytest.mark.parametrize("dims, offset", [(32, 3), (20, "per-batch")], ids=["full", "partial"])
def test_rope_is_split_exactly(split_small, traditional, dims, offset):
    x = mx.array(_data((3, 7, 19, 32)))
    if offset == "per-batch":
        offset = mx.array(np.array([0, 5, 11], np.int32))
    _assert_same_bits(lambda: mx.fast.rope(x, dims, traditional=traditional, base=10000.0,
                                           scale=1.0, offset=offset))


@pytest.mark.parametrize("traditional", [False, True], ids=["halves", "traditional"])
def test_norm_rope_is_split_exactly(split_small, traditional):
    x, w = mx.array(_data((2, 5, 23, 32))), mx.array(_data((32,)))
    _assert_same_bits(lambda: mx.fast.norm_rope(x, w, EPS, dims=24, traditional=traditional,
                                                base=10000.0, offset=3))


UNARY = [mx.exp, mx.sin, mx.sqrt, mx.tanh, mx.negative, mx.floor, mx.abs]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64],
                         ids=["float32", "float16", "float64"])
@pytest.mark.parametrize("op", UNARY, ids=[f.__name__ for f in UNARY])
def test_unary_kernels_are_split_exactly(split_small, op, dtype):
    data = _data((67, 45), dtype, 0.1, 2.0)
    x = mx.array(data)
    _assert_same_bits(lambda: op(x), getattr(np, op.__name__)(data.astype(np.float64)))
    _assert_same_bits(lambda: op(x[:, 1:40]))  # a strided input: split by rows


BINARY = [mx.add, mx.subtract, mx.multiply, mx.divide, mx.maximum, mx.minimum]


@pytest.mark.parametrize("op", BINARY, ids=[f.__name__ for f in BINARY])
def test_binary_kernels_stay_on_one_thread(split_small, monkeypatch, op):
    """Binary arithmetic is memory-bound, so it is not split (see
    nuvec/backends/numpy/threaded.py)."""
    calls = []
    monkeypatch.setattr(threads, "parallel_rows", lambda n, body, **kw: calls.append(n))
    a, b = _data((67, 45), np.float32, 1, 9), _data((67, 45), np.float32, 1, 9)
    mx.set_num_threads(2)
    out = np.asarray(op(mx.array(a), mx.array(b)))
    np.testing.assert_allclose(out, getattr(np, op.__name__)(a, b), rtol=1e-6)
    assert calls == []
    np.asarray(mx.exp(mx.array(a)))  # a unary kernel of the same size is split
    assert calls


MEMORY_BOUND = [mx.negative, mx.square, mx.abs, mx.sqrt, mx.floor, lambda x: mx.sum(x, axis=1)]


@pytest.mark.parametrize("op", MEMORY_BOUND,
                         ids=["negative", "square", "abs", "sqrt", "floor", "sum"])
def test_memory_bound_kernels_split_only_from_their_own_threshold(split_small, monkeypatch, op):
    """Cheap unary kernels and reductions wait for `MEMORY_BOUND_BYTES` a chunk, where a
    transcendental kernel splits from `MIN_BYTES` (see nuvec/backends/threads.py)."""
    calls = []
    monkeypatch.setattr(threads, "parallel_rows", lambda n, body, **kw: calls.append(kw))
    monkeypatch.setattr(threads, "MEMORY_BOUND_BYTES", 1 << 20)
    data = _data((67, 45), np.float32, 1, 9)
    mx.set_num_threads(2)
    np.asarray(op(mx.array(data)))
    assert calls == []
    np.asarray(mx.exp(mx.array(data)))  # a transcendental kernel of the same size is split
    assert calls and calls[0]["min_bytes"] == 256
    monkeypatch.setattr(threads, "MEMORY_BOUND_BYTES", 512)
    calls.clear()
    np.asarray(op(mx.array(data)))
    assert calls and calls[0]["min_bytes"] == 512


def test_exp_times_w_plus_b_is_split_exactly(split_small):
    x, w, b = mx.array(_data((129, 67))), mx.array(_data((67,))), mx.array(_data((67,)))
    _assert_same_bits(lambda: mx.exp(x) * w + b)


REDUCTIONS = [mx.sum, mx.prod, mx.max, mx.min, mx.argmax, mx.argmin, mx.all, mx.any]


@pytest.mark.parametrize("axis", [0, 1, -1, (0, 2), (1, 2), None], ids=str)
@pytest.mark.parametrize("op", REDUCTIONS, ids=[f.__name__ for f in REDUCTIONS])
def test_reductions_are_split_exactly(split_small, op, axis):
    if op in (mx.argmax, mx.argmin) and not isinstance(axis, int):
        axis = 1
    data = _data((13, 37, 29), np.float32, 0.5, 1.5)
    x = mx.array(data)
    _assert_same_bits(lambda: op(x > 1.0 if op in (mx.all, mx.any) else x, axis=axis))


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["float32", "float16"])
def test_sums_of_each_axis_are_split_exactly(split_small, dtype):
    data = _data((67, 131), dtype)
    x = mx.array(data)
    for axis in (0, 1):
        _assert_same_bits(lambda: mx.sum(x, axis=axis),
                          data.astype(np.float64).sum(axis=axis), rtol=1e-2)
