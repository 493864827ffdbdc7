"""The launchers installed into a backend's kernel table (`register`), end to end: a stand-in
GPU backend whose fused kernels are the launchers running in the emulator, so
`record_or_fallback` records GPU nodes and the evaluator launches the CUDA C kernels."""

import numpy as np
import pytest
from kernel_checks import RecordingRunner, emulated_gpu_backend

import nuvec as mx
from nuvec.backends.cuda.custom import USER_KERNELS
from nuvec.backends.cuda.launchers import LAUNCHERS, register, takes
from nuvec.fast.norms import RmsNorm


@pytest.fixture
def emulated_gpu():
    with emulated_gpu_backend(RecordingRunner()) as runner:
        yield runner


def test_forward_and_gradient_launch_the_kernels(emulated_gpu):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((3, 40)).astype(np.float32), rng.standard_normal(40).astype(
        np.float32)

    def loss(x, w):
        return mx.sum(mx.fast.rms_norm(x, w, 1e-5) ** 2)

    with mx.stream(mx.gpu):
        value, grads = mx.value_and_grad(loss, argnums=(0, 1))(mx.array(x), mx.array(w))
        value, gx, gw = value.item(), np.asarray(grads[0]), np.asarray(grads[1])
    assert any(e.startswith("rms_norm<float") for e in emulated_gpu.launched)
    assert any(e.startswith("rms_norm_vjp<float") for e in emulated_gpu.launched)
    with mx.stream(mx.cpu):
        want, wgrads = mx.value_and_grad(loss, argnums=(0, 1))(mx.array(x), mx.array(w))
    np.testing.assert_allclose(value, want.item(), rtol=1e-5)
    np.testing.assert_allclose(gx, np.asarray(wgrads[0]), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gw, np.asarray(wgrads[1]), rtol=1e-4, atol=1e-5)


def test_bfloat16_softmax_and_cross_entropy(emulated_gpu):
    x = mx.array(np.random.default_rng(1).standard_normal((4, 33)), mx.bfloat16)
    with mx.stream(mx.gpu):
        s = np.asarray(mx.fast.softmax(x)).astype(np.float32)
        ce = np.asarray(mx.fast.cross_entropy(x, mx.array([0, 5, -1, 32])))
    assert "softmax<__nv_bfloat16, 1>" in emulated_gpu.launched
    assert any(e.startswith("cross_entropy<__nv_bfloat16") for e in emulated_gpu.launched)
    np.testing.assert_allclose(s.sum(-1), 1.0, atol=2e-2)
    with mx.stream(mx.cpu):
        np.testing.assert_allclose(ce, np.asarray(mx.fast.cross_entropy(x, mx.array(
            [0, 5, -1, 32]))), rtol=2e-2, atol=2e-2)


def test_inputs_the_kernels_do_not_take_use_the_fallback(emulated_gpu):
    x = np.ones((2, 4), np.float64)
    assert not takes(RmsNorm(1e-5), [x, np.ones(4)])
    assert takes(RmsNorm(1e-5), [x.astype(np.float32), np.ones(4, np.float32)])
    calls = []
    table = {}
    register(table, emulated_gpu, lambda p, *a: calls.append(p) or "fallback")
    assert table[RmsNorm](RmsNorm(1e-5), x, np.ones(4)) == "fallback" and calls
    assert set(table) == set(LAUNCHERS) | set(USER_KERNELS)


def test_user_kernels_on_the_gpu_stream(emulated_gpu):
    k = mx.fast.cuda_kernel("negate", ["x"], ["y"],
                            "if (threadIdx.x < 4) y[threadIdx.x] = -x[threadIdx.x];")
    with mx.stream(mx.gpu):
        (y,) = k(inputs=[mx.arange(4, dtype=mx.float32)], output_shapes=[(4,)],
                 output_dtypes=[mx.float32], grid=(4,), threadgroup=(32,))
        assert y.tolist() == [0.0, -1.0, -2.0, -3.0]
    assert emulated_gpu.launched == ["custom_kernel_negate"]


def test_gathered_and_quantized_products_launch_the_gather_kernels(emulated_gpu):
    rng = np.random.default_rng(2)
    x = mx.array(rng.standard_normal((6, 1, 32)), mx.float16)
    w = mx.array(rng.standard_normal((3, 32, 16)), mx.float16)
    rhs = mx.array([0, 0, 1, 2, 2, 2])
    wq, s, b = mx.quantize(mx.array(rng.standard_normal((16, 64)), mx.float16), 32, 4)
    xq = mx.array(rng.standard_normal((2, 64)), mx.float16)
    outs = {}
    for device in (mx.gpu, mx.cpu):
        with mx.stream(device):
            outs[device] = (np.asarray(mx.gather_mm(x, w, rhs_indices=rhs, sorted_indices=True)),
                            np.asarray(mx.quantized_matmul(xq, wq, s, b, group_size=32, bits=4)))
    assert "gather_segments<__half, 16, 0>" in emulated_gpu.launched
    assert "gather_batched<__half, 16, 1>" in emulated_gpu.launched
    for got, want in zip(outs[mx.gpu], outs[mx.cpu]):
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=4e-3,
                                   atol=4e-3 * np.abs(want).max())


def test_gated_delta_nodes_launch_their_kernels(emulated_gpu):
    rng = np.random.default_rng(2)
    q, k = (mx.array(rng.standard_normal((2, 3, 1, 32)) * 0.2, mx.bfloat16) for _ in range(2))
    v = mx.array(rng.standard_normal((2, 3, 2, 5)), mx.bfloat16)
    g, beta = (mx.array(rng.uniform(0.5, 0.9, (2, 3, 2)), mx.float32) for _ in range(2))
    state = mx.array(rng.standard_normal((2, 2, 5, 32)), mx.float32)
    pool = mx.array(rng.standard_normal((3, 2, 5, 32)), mx.float32)
    calls = [lambda: mx.fast.gated_delta(q, k, v, g, beta, state),
             lambda: mx.fast.gated_delta_steps(q, k, v, g, beta, state),
             lambda: mx.fast.gated_delta_slots(q, k, v, g, beta, pool, mx.array([2, 0]))]
    for call, name in zip(calls, ["gated_delta<", "gated_delta_steps<", "gated_delta_slots<"]):
        with mx.stream(mx.gpu):
            got = [np.asarray(a).astype(np.float64) for a in call()]
        assert emulated_gpu.launched[-1] == f"{name}__nv_bfloat16, float, 4>"
        with mx.stream(mx.cpu):
            want = [np.asarray(a).astype(np.float64) for a in call()]
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=3e-2, atol=3e-2)


def test_windowed_attention_launches_the_vector_kernels(emulated_gpu):
    rng = np.random.default_rng(3)
    q = mx.array(rng.standard_normal((1, 8, 2, 64)), mx.float16)
    k, v = (mx.array(rng.standard_normal((1, 1, 1100, 64)), mx.float16) for _ in range(2))
    for window, want in ((40, ["sdpa_vector<__half, 64>"]),
                         (1030, ["sdpa_vector_2pass_1<__half, 64, 1>",
                                 "sdpa_vector_2pass_2<__half, 64>"])):
        emulated_gpu.launched.clear()
        with mx.stream(mx.gpu):
            got = np.asarray(mx.fast.scaled_dot_product_attention(
                q, k, v, scale=0.125, mask="causal", window=window)).astype(np.float64)
        assert emulated_gpu.launched == want
        with mx.stream(mx.cpu):
            ref = np.asarray(mx.fast.scaled_dot_product_attention(
                q, k, v, scale=0.125, mask="causal", window=window)).astype(np.float64)
        np.testing.assert_allclose(got, ref, rtol=4e-3, atol=4e-3)
