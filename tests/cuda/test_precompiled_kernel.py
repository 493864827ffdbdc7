"""`mx.fast.precompiled_cuda_kernel`: the errors at the call (a CPU stream, bad arguments), the
launch as a runner sees it on a stand-in GPU, PTX from the NVRTC wheel, and (marked `gpu`) the
PTX launched on a real GPU."""

import sys
import types
from pathlib import Path

import numpy as np
import pytest
from helpers import scale_add_ptx
from kernel_checks import RecordingRunner, emulated_gpu_backend

import nuvec as mx
from nuvec.backends.cuda import nvrtc
from nuvec.backends.cuda.runner import CupyRunner
from nuvec.backends.double import DoubleBackend
from nuvec.graph.device import register_backend

needs_nvrtc = pytest.mark.skipif(not nvrtc.available(), reason="NVRTC wheel missing")
FAKE_BINARY = b"// PTX stand-in: the fake runner never loads it\n"


def _call(**kw):
    """`scale_add_f32` over 10 elements with 4-thread blocks; `kw` overrides an argument."""
    x = mx.arange(10, dtype=mx.float32)
    args = dict(name="scale_add_f32", compiled_source=FAKE_BINARY, inputs=[x],
                output_shapes=[x.shape], output_dtypes=[x.dtype], scalars=[2.0, 10, True],
                grid=(10, 1, 1), threadgroup=(4, 1, 1))
    args.update(kw)
    return mx.fast.precompiled_cuda_kernel(**args)


@pytest.mark.parametrize("stream", [None, mx.cpu], ids=["default", "cpu"])
def test_cpu_stream_raises_at_the_call(stream):
    with pytest.raises(ValueError, match=(
            r"^precompiled_cuda_kernel: compiled PTX/cubin runs only on a GPU stream \(CUDA, "
            r"through CuPy\), got Stream\(Device\(cpu, 0\), \d+\); mx.fast.cuda_kernel with "
            r"CUDA C source runs on the CPU too")):
        _call(stream=stream)


@pytest.mark.parametrize("kw,error,match", [
    (dict(scalars=[1.0, "a"]), TypeError, "scalar 1 must be a bool, int or float, got str"),
    (dict(scalars=[None]), TypeError, "scalar 0 must be a bool, int or float, got NoneType"),
    (dict(scalars=[2**31]), ValueError, r"scalar 0 \(2147483648\) does not fit in a 32-bit int"),
    (dict(output_dtypes=[]), ValueError, "got 1 output shapes and 0 output dtypes"),
    (dict(output_dtypes=["float32"]), TypeError, "output dtypes must be dtypes, got 'float32'"),
    (dict(grid=(0, 1, 1)), ValueError, r"grid must be 1 to 3 positive ints, got \(0, 1, 1\)"),
    (dict(threadgroup=(64, 32)), ValueError,
     r"a threadgroup has at most 1024 threads, got \(64, 32, 1\)"),
    (dict(compiled_source="ptx"), TypeError, "compiled_source must be bytes .*got str"),
    (dict(compiled_source=b""), ValueError, "compiled_source is empty"),
    (dict(name=""), ValueError, "name must be a kernel's symbol, got ''"),
    (dict(shared_memory=-1), ValueError, "shared_memory must be an int >= 0, got -1"),
])
def test_rejected_calls(kw, error, match):
    with pytest.raises(error, match="precompiled_cuda_kernel: " + match):
        _call(**kw)


class BinaryRunner(RecordingRunner):
    """A runner that records each binary launch (arguments as passed, with copies of the
    arrays at launch time) and computes `scale_add_f32` with NumPy."""

    def __init__(self):
        super().__init__()
        self.binaries = []

    def launch_binary(self, binary, symbol, grid, block, shared_mem, args):
        copies = [np.array(a) if isinstance(a, np.ndarray) else a for a in args]
        self.binaries.append(dict(binary=binary, symbol=symbol, grid=tuple(grid),
                                  block=tuple(block), shared_mem=shared_mem, args=list(args),
                                  at_launch=copies))
        x, y, scale, n, accumulate = args
        y.reshape(-1)[:n] = (y.reshape(-1)[:n] if accumulate else 0) + x.reshape(-1)[:n] * scale


@pytest.fixture
def fake_gpu():
    with emulated_gpu_backend(BinaryRunner()) as runner:
        yield runner


def test_launch_arguments_blocks_shared_memory_and_init_value(fake_gpu):
    (y,) = _call(stream=mx.gpu, init_value=1.5, shared_memory=64 * 1024)
    np.testing.assert_array_equal(np.asarray(y), 1.5 + 2.0 * np.arange(10, dtype=np.float32))
    (launch,) = fake_gpu.binaries
    assert launch["binary"] == FAKE_BINARY and launch["symbol"] == "scale_add_f32"
    assert launch["grid"] == (3, 1, 1) and launch["block"] == (4, 1, 1)
    assert launch["shared_mem"] == 64 * 1024
    # inputs, then outputs, then the scalars as C float, int and bool
    assert [type(a) for a in launch["args"]] == [np.ndarray, np.ndarray, np.float32, np.int32,
                                                 np.bool_]
    x, y_at_launch, scale, n, accumulate = launch["at_launch"]
    np.testing.assert_array_equal(x, np.arange(10, dtype=np.float32))
    np.testing.assert_array_equal(y_at_launch, np.full(10, 1.5, np.float32))
    assert (scale, n, accumulate) == (2.0, 10, True)


def test_uninitialized_outputs_without_init_value(fake_gpu):
    (y,) = _call(stream=mx.gpu, scalars=[3.0, 10, False])
    np.testing.assert_array_equal(np.asarray(y), 3.0 * np.arange(10, dtype=np.float32))


@pytest.mark.parametrize("ensure", [True, False])
def test_row_contiguity_only_when_asked(fake_gpu, ensure):
    with mx.stream(mx.gpu):
        x = mx.transpose(mx.arange(10, dtype=mx.float32).reshape(2, 5))
        mx.fast.precompiled_cuda_kernel(
            name="scale_add_f32", compiled_source=FAKE_BINARY, inputs=[x],
            output_shapes=[(5, 2)], output_dtypes=[mx.float32], scalars=[1.0, 10, False],
            grid=(10, 1, 1), threadgroup=(32, 1, 1), ensure_row_contiguous=ensure)[0].tolist()
    passed = fake_gpu.binaries[0]["args"][0]
    assert passed.shape == (5, 2) and passed.flags.c_contiguous == ensure


def test_vmap_launches_once_per_element(fake_gpu):
    xs = np.arange(12, dtype=np.float32).reshape(3, 4)

    def f(x):
        return _call(inputs=[x], output_shapes=[(4,)], scalars=[2.0, 4, False], grid=(4,),
                     threadgroup=(4,))[0]

    with mx.stream(mx.gpu):
        y = mx.vmap(f)(mx.array(xs))
        np.testing.assert_array_equal(np.asarray(y), 2.0 * xs)
    assert len(fake_gpu.binaries) == 3


def test_a_gpu_backend_computing_on_the_host_fails_the_evaluation():
    register_backend(mx.gpu, DoubleBackend())
    try:
        (y,) = _call(stream=mx.gpu)
        with pytest.raises(mx.EvaluationError, match="ValueError: precompiled_cuda_kernel: .* "
                           "got kernel scale_add_f32 computed on the host"):
            mx.eval(y)
    finally:
        register_backend(mx.gpu, None)


class FakeRawKernel:
    """What `CupyRunner` uses of a `cupy.RawKernel`: the call and the shared memory limit."""

    def __init__(self):
        self.calls, self.max_dynamic_shared_size_bytes = [], 48 * 1024

    def __call__(self, grid, block, args, shared_mem=0):
        self.calls.append((grid, block, args, shared_mem))


class FakeCupy(types.ModuleType):
    """A `cupy` module whose `RawModule(path=...)` keeps the file's bytes and its kernels."""

    def __init__(self):
        super().__init__("cupy")
        self.modules = []

    def RawModule(self, *, path):
        module = types.SimpleNamespace(path=Path(path), image=Path(path).read_bytes(),
                                       functions={})
        module.get_function = lambda name: module.functions.setdefault(name, FakeRawKernel())
        self.modules.append(module)
        return module


def test_cupy_runner_loads_a_binary_once_and_raises_the_shared_memory_limit(
        monkeypatch, tmp_path):
    fake = FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setenv("NUVEC_KERNEL_CACHE", str(tmp_path))
    runner = CupyRunner()
    for shared in (1024, 64 * 1024):
        runner.launch_binary(FAKE_BINARY, "k", [3, 1, 1], (4, 1, 1), shared, [np.int32(7)])
    (module,) = fake.modules
    assert module.image == FAKE_BINARY and module.path.parent == tmp_path
    kernel = module.functions["k"]
    assert kernel.calls == [((3, 1, 1), (4, 1, 1), (np.int32(7),), 1024),
                            ((3, 1, 1), (4, 1, 1), (np.int32(7),), 64 * 1024)]
    assert kernel.max_dynamic_shared_size_bytes == 64 * 1024


@needs_nvrtc
@pytest.mark.parametrize("arch", ["80", "90"])
def test_nvrtc_ptx_holds_the_symbols(arch):
    ptx = scale_add_ptx(f"compute_{arch}").decode()
    assert f".target sm_{arch}" in ptx
    for symbol in ("scale_add_f32", "scale_add_f64"):
        assert f".visible .entry {symbol}(" in ptx


@pytest.mark.gpu
@pytest.mark.skipif(not mx.is_available(mx.gpu), reason="needs a CUDA GPU (CuPy)")
@pytest.mark.parametrize("init_value,accumulate", [(None, False), (0.5, True)])
def test_ptx_runs_on_the_gpu(init_value, accumulate):
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    (y,) = mx.fast.precompiled_cuda_kernel(
        name="scale_add_f32", compiled_source=scale_add_ptx(), inputs=[mx.array(x)],
        output_shapes=[(1000,)], output_dtypes=[mx.float32], scalars=[1.5, 1000, accumulate],
        grid=(1000, 1, 1), threadgroup=(128, 1, 1), init_value=init_value, stream=mx.gpu)
    want = (init_value if accumulate else 0.0) + x * np.float32(1.5)
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-6)
