"""`record_or_fallback`, direct construction checks and `run_on_cpu`."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from fast_refs import nodes, rms_norm as rms_ref
from nuvec.fast.base import record_or_fallback, run_on_cpu
from nuvec.fast.norms import RmsNorm
from nuvec.fast.rope import NormRope, Rope
from nuvec.graph.array import record
from nuvec.testing import assert_allclose


def test_cpu_records_one_node_for_a_direct_kernel():
    x = mx.array(np.ones((2, 4)), mx.float32)
    y = mx.fast.rms_norm(x, None, 1e-5)
    assert isinstance(y.primitive, RmsNorm)


def test_cpu_builds_the_fallback_without_a_direct_kernel():
    x = mx.array(np.ones((1, 1, 2, 4)), mx.float32)
    y = mx.fast.norm_rope(x, mx.ones((4,)), 1e-5, dims=4, base=10.0)
    assert nodes(y, NormRope) == 0 and nodes(y, Rope) == 1


def test_gpu_stream_records_one_node_and_computes_through_the_fallback(fake_gpu):
    rng = np.random.default_rng(0)
    data = rng.standard_normal((1, 2, 3, 8))
    with mx.stream(fake_gpu):
        x = mx.array(data, mx.float16)
        w = mx.array(np.ones(8), mx.float16)
        y = mx.fast.norm_rope(x, w, 1e-5, dims=8, base=10.0)
        assert isinstance(y.primitive, NormRope) and y.stream == fake_gpu
        z = mx.fast.rms_norm(mx.array(data, mx.float64), None, 1e-5)
        assert nodes(z, RmsNorm) == 0  # no GPU kernel for float64: the fallback graph
    assert_allclose(z, rms_ref(data, None, 1e-5), dtype=mx.float64)
    assert mx.default_stream(mx.cpu) is not None
    assert np.isfinite(np.asarray(y, np.float64)).all()


def test_empty_arrays_build_the_fallback(fake_gpu):
    with mx.stream(fake_gpu):
        y = mx.fast.rms_norm(mx.zeros((0, 4), mx.float32), None, 1e-5)
    assert nodes(y, RmsNorm) == 0 and y.shape == (0, 4)


def _current():
    from nuvec.graph.device import to_stream

    return to_stream(None)


def test_run_on_cpu_restores_the_default_stream_when_the_fallback_raises(fake_gpu):
    seen = []

    def failing(leaves):
        seen.append(_current().device)
        raise RuntimeError("fallback hook raises")

    with mx.stream(fake_gpu):
        with pytest.raises(RuntimeError, match="fallback hook raises"):
            run_on_cpu([np.ones(2, np.float32)], failing)
        assert _current() == fake_gpu
    assert seen == [mx.Device(mx.cpu)]


def test_run_on_cpu_computes_on_the_cpu():
    out = run_on_cpu([np.arange(4, dtype=np.float32)], lambda xs: [mx.multiply(xs[0], 2)])
    np.testing.assert_array_equal(out[0], [0, 2, 4, 6])


def test_a_node_built_directly_is_checked():
    x = mx.array(np.ones((2, 4)), mx.float32)
    with pytest.raises(ValueError, match=r"^rms_norm: 2 inputs expected, got 1"):
        record(RmsNorm(1e-5), [x], mx.default_stream(mx.cpu))
    with pytest.raises(TypeError, match=r"^rms_norm: unsupported dtype int32"):
        record(RmsNorm(1e-5), [mx.array([[1, 2]]), mx.array(1)], mx.default_stream(mx.cpu))
    with pytest.raises(ValueError, match=r"^rms_norm: invalid inputs"):
        record(RmsNorm(1e-5), [x, mx.ones((3,))], mx.default_stream(mx.cpu))


def test_record_or_fallback_returns_every_output():
    x = mx.array(np.ones((2, 4)), mx.float32)
    (y,) = record_or_fallback(RmsNorm(1e-5), [x, mx.ones((4,))])
    assert y.shape == (2, 4)


def test_record_or_fallback_records_on_the_stream_it_is_given():
    s = mx.new_stream(mx.cpu)
    before = mx.default_stream(mx.cpu)
    x = mx.array(np.ones((1, 1, 2, 4)), mx.float32)
    (y,) = record_or_fallback(RmsNorm(1e-5), [x, mx.ones((4,))], s)  # a direct kernel
    assert isinstance(y.primitive, RmsNorm) and y.stream == s
    (z,) = record_or_fallback(NormRope(1e-5, 4, False, 10.0, 1.0, 0, False),
                              [x, mx.ones((4,))], s)
    assert nodes(z, Rope) == 1 and z.stream == s  # the fallback's ops, on `s` too
    assert mx.default_stream(mx.cpu) == before
    assert_allclose(z, mx.fast.norm_rope(x, mx.ones((4,)), 1e-5, dims=4, base=10.0))
    w = mx.softmax(x, axis=-1, stream=s)
    assert w.stream == s and w.tolist()[0][0][0] == [0.25] * 4


GPU_CASES = {
    "rms_norm": (lambda x: mx.fast.rms_norm(x, None, 1e-5), lambda r: rms_ref(r, None, 1e-5)),
    "softmax": (mx.fast.softmax, lambda r: np.exp(r) / np.exp(r).sum(-1, keepdims=True)),
    "cross_entropy": (lambda x: mx.fast.cross_entropy(x, mx.zeros(x.shape[:-1], mx.int32)),
                      lambda r: np.log(np.exp(r).sum(-1)) - r[..., 0]),
}


@pytest.mark.parametrize("name", sorted(GPU_CASES))
def test_gpu_nodes_of_the_row_wise_ops_compute_through_their_fallback(name, fake_gpu):
    f, want = GPU_CASES[name]
    data = np.random.default_rng(1).standard_normal((2, 3, 8))
    with mx.stream(fake_gpu):
        x = mx.array(data, mx.float16)
        y = f(x)
        assert y.stream == fake_gpu and nodes(y, mx.fast.FastOp) == 1
        g = mx.grad(lambda x: mx.sum(mx.astype(f(x), mx.float32)))(x)
    assert_allclose(y, want(np.asarray(x, np.float64)), rtol=5e-3, atol=5e-3)
    assert g.shape == x.shape and np.isfinite(np.asarray(g, np.float64)).all()


def test_direct_kernels_across_several_row_blocks():
    import fast_refs as ref

    rng = np.random.default_rng(2)
    data = rng.standard_normal((70, 1000))
    x = mx.array(data, mx.float32)
    w = mx.array(np.ones(1000), mx.float32)
    xr = np.asarray(x, np.float64)
    assert_allclose(mx.fast.rms_norm(x, w, 1e-5), ref.rms_norm(xr, 1.0, 1e-5))
    assert_allclose(mx.fast.layer_norm(x, None, w, 1e-5), ref.layer_norm(xr, None, 1.0, 1e-5),
                    atol=1e-5)
    assert_allclose(mx.fast.softmax(x), ref.softmax(xr))
    assert_allclose(mx.fast.logsumexp(x), ref.logsumexp(xr))
    t = rng.integers(-1000, 1000, 70)
    assert_allclose(mx.fast.cross_entropy(x, mx.array(t)), ref.cross_entropy(xr, t), atol=1e-5)
    r = mx.array(rng.standard_normal((1, 3, 300, 256)), mx.float32)
    rr = np.asarray(r, np.float64)
    for trad in (False, True):
        y = mx.fast.rope(r, 200, traditional=trad, base=500.0, scale=1.0, offset=2)
        assert_allclose(y, ref.rope(rr, 200, trad, 500.0, 1.0, 2), rtol=1e-4, atol=1e-4)
