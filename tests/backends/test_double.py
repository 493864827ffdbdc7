"""The evaluator on an asynchronous GPU backend, through the NumPy-backed double: moves between
devices, event waits across streams, async_eval, the CPU route, kernel failures, memory."""

from __future__ import annotations

import gc
import threading
from concurrent.futures import Future

import ml_dtypes
import numpy as np
import pytest

import nuvec as mx
from nuvec.backends.double import DoubleArray, DoubleBackend
from nuvec.graph.device import DeviceType, register_backend
from nuvec.graph.primitive import Primitive


class CountingDouble(DoubleBackend):
    """The double, counting the event waits the evaluator asks for."""

    def __init__(self, delay: float = 0.0):
        super().__init__(delay)
        self.waits = 0

    def wait_event(self, stream, event):
        self.waits += 1
        super().wait_event(stream, event)


@pytest.fixture
def double():
    backend = CountingDouble()
    register_backend(DeviceType.gpu, backend)
    try:
        yield backend
    finally:
        register_backend(DeviceType.gpu, None)


def test_cpu_data_moves_to_the_gpu_and_back(double):
    x_np = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    x = mx.array(x_np)  # on the CPU
    y = mx.exp(x, stream=mx.gpu)  # moved to the GPU
    z = mx.add(y, x, stream=mx.cpu)  # and back
    assert y.stream.device == mx.gpu and z.stream.device == mx.cpu
    np.testing.assert_allclose(np.asarray(z), np.exp(x_np) + x_np, rtol=1e-6)
    assert isinstance(y._node.data[0], DoubleArray)  # a device buffer, read through to_host
    np.testing.assert_allclose(y.tolist(), np.exp(x_np), rtol=1e-6)
    assert mx.sum(y, stream=mx.gpu).item() == pytest.approx(float(np.exp(x_np).sum()), rel=1e-6)


def test_array_on_a_gpu_default_device_is_uploaded(double):
    mx.set_default_device(mx.gpu)
    try:
        a = mx.array([1.0, 2.0])
        assert a.stream.device == mx.gpu and isinstance(a._node.data[0], DoubleArray)
        assert (a * 2).tolist() == [2.0, 4.0]
    finally:
        mx.set_default_device(mx.cpu)


def test_input_from_another_gpu_stream_waits_on_an_event(double):
    double.delay = 0.002  # each task sleeps first: without a wait the reader would run early
    s1, s2 = mx.new_stream(mx.gpu), mx.new_stream(mx.gpu)
    a = mx.multiply(mx.array(np.arange(8.0)), 3.0, stream=s1)
    b = mx.add(a, 1.0, stream=s2)
    np.testing.assert_array_equal(np.asarray(b), np.arange(8.0) * 3 + 1)
    assert double.waits >= 1
    # made earlier and already evaluated on s1: still ordered with an event
    c = mx.exp(mx.zeros((4,)), stream=s1)
    mx.eval(c)
    before = double.waits
    assert mx.add(c, 1.0, stream=s2).tolist() == [2.0] * 4
    assert double.waits == before + 1


def test_a_read_before_the_stream_reached_it_raises():
    pending = DoubleArray(Future(), (1,), np.dtype(np.float32))
    with pytest.raises(RuntimeError, match="missing wait"):
        pending.value()


def test_eval_returns_when_computed_and_async_eval_right_after_enqueuing(double):
    gate = threading.Event()
    double.enqueue(mx.default_stream(mx.gpu), gate.wait)  # holds the stream until set
    y = mx.exp(mx.ones((4,), stream=mx.gpu), stream=mx.gpu)
    try:
        mx.async_eval(y)  # enqueued behind the gate: returns without waiting
        assert y._node.data is not None and not y._node.data[0].future.done()
    finally:
        gate.set()
    mx.eval(y)
    assert y._node.data[0].future.done()
    assert y.tolist() == pytest.approx([np.e] * 4)


def test_synchronize_waits_for_a_stream(double):
    double.delay = 0.01
    s = mx.new_stream(mx.gpu)
    y = mx.exp(mx.ones((2,)), stream=s)
    mx.async_eval(y)
    mx.synchronize(s)
    assert y._node.data[0].future.done()


def test_listed_primitives_take_the_cpu_route(double):
    w_np = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
    wq, scales, biases = mx.quantize(mx.array(w_np))  # on the CPU
    copies = double.host_copies
    y = mx.dequantize(wq, scales, biases, stream=mx.gpu)
    assert type(y.primitive).__name__ == "Dequantize" and y.stream.device == mx.gpu
    ref = np.asarray(mx.dequantize(wq, scales, biases))  # the CPU kernel
    np.testing.assert_array_equal(np.asarray(y), ref)
    assert double.host_copies == copies + 3  # its three inputs went to the host


def test_row_wise_fused_ops_have_gpu_bodies(double):
    x_np = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    w_np = np.linspace(0.5, 1.5, 8, dtype=np.float32)
    copies = double.host_copies
    y = mx.fast.rms_norm(mx.array(x_np), mx.array(w_np), 1e-5, stream=mx.gpu)
    ref = x_np / np.sqrt((x_np.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-5) * w_np
    assert type(y.primitive).__name__ == "RmsNorm"
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-5, atol=1e-6)
    s = mx.softmax(mx.array(x_np), axis=-1, stream=mx.gpu)
    e = np.exp(x_np - x_np.max(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(s), e / e.sum(-1, keepdims=True), rtol=1e-5)
    assert double.host_copies == copies  # computed on the device


class Explodes(Primitive):
    """A primitive whose kernel fails on the device."""

    def output_specs(self, inputs):
        return [(inputs[0].shape, inputs[0].dtype)]


def test_a_kernel_failure_surfaces_at_eval_and_the_engine_stays_usable(double):
    def explode(p, x):
        raise FloatingPointError("simulated device fault")

    double.kernels.add(Explodes, double._asynchronous(explode))
    from nuvec.graph.array import record1

    x = mx.array([1.0, 2.0])
    bad = record1(Explodes(), [x], mx.default_stream(mx.gpu))
    with pytest.raises(mx.EvaluationError, match="simulated device fault"):
        mx.eval(bad)
    assert mx.add(x, 1.0, stream=mx.gpu).tolist() == [2.0, 3.0]


def test_memory_counters_count_device_buffers(double):
    mx.eval(mx.zeros((1,), stream=mx.gpu))
    gc.collect()  # (an earlier test's cycle collected mid-measure would free its buffers)
    base = mx.get_active_memory()
    y = mx.exp(mx.ones((1024,)), stream=mx.gpu)
    mx.eval(y)
    assert mx.get_active_memory() - base >= 1024 * 4
    assert mx.get_peak_memory() >= mx.get_active_memory()
    del y
    assert mx.get_active_memory() - base < 1024 * 4


@pytest.mark.parametrize("op", ["multiply", "exp", "sum", "transpose", "where"])
def test_bfloat16_lives_in_two_byte_buffers(double, op):
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((4, 6)).astype(ml_dtypes.bfloat16)
    x = mx.array(x_np)
    wide = x_np.astype(np.float64)
    compute = {
        "multiply": (lambda a: mx.multiply(a, a, stream=mx.gpu), wide * wide),
        "exp": (lambda a: mx.exp(a, stream=mx.gpu), np.exp(wide)),
        "sum": (lambda a: mx.sum(a, axis=1, stream=mx.gpu), wide.sum(1)),
        "transpose": (lambda a: mx.transpose(a, stream=mx.gpu), wide.T),
        "where": (lambda a: mx.where(a > 0, a, mx.zeros_like(a), stream=mx.gpu),
                  np.where(wide > 0, wide, 0.0)),
    }
    fn, ref = compute[op]
    y = fn(x)
    assert y.dtype == mx.bfloat16
    mx.eval(y)
    data = y._node.data[0].future.result()
    assert data.nbytes == y.size * 2 and data.bits.dtype == np.uint16
    np.testing.assert_allclose(np.asarray(y).astype(np.float64), ref, rtol=1e-2, atol=1e-2)


def test_multi_output_primitives(double):
    a = np.array([[4.0, 1.0], [1.0, 3.0]], np.float32)
    values, vectors = mx.linalg.eigh(mx.array(a), stream=mx.gpu)
    np.testing.assert_allclose(np.asarray(values), np.linalg.eigvalsh(a), rtol=1e-5)
    assert vectors.shape == (2, 2)


def test_bfloat16_bit_casts_see_the_bits(double):
    x_np = np.array([1.0, -2.5, 3.0], ml_dtypes.bfloat16)
    bits = mx.view(mx.array(x_np), mx.uint16, stream=mx.gpu)
    np.testing.assert_array_equal(np.asarray(bits), x_np.view(np.uint16))
    back = mx.view(bits, mx.bfloat16, stream=mx.gpu)
    assert back.tolist() == [1.0, -2.5, 3.0]
