"""Running a fused node through its launcher in the kernel emulator and through its fallback
graph on the CPU (the reference), compared with per-dtype tolerances; a stand-in GPU backend
whose fused and user kernels drive a given runner (`emulated_gpu_backend`)."""

from __future__ import annotations

import contextlib

import ml_dtypes
import numpy as np

from nuvec.backends.cuda.launchers import LAUNCHERS, register
from nuvec.backends.cuda.runner import EmulatorRunner
from nuvec.backends.numpy import NumpyBackend
from nuvec.backends.numpy import table as cpu_table
from nuvec.fast.base import FastOp, cpu_fallback_kernel, run_on_cpu
from nuvec.graph.backend import KernelTable
from nuvec.graph.device import DeviceType, register_backend

DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
# (rtol, atol) per input dtype of a kernel (float32 sums) against the fallback (which rounds
# each step to the input dtype); atol is relative to the reference's largest magnitude.
TOL = {"float32": (2e-5, 2e-5), "float16": (4e-3, 4e-3), "bfloat16": (3e-2, 3e-2)}
RUNNER = EmulatorRunner()


class RecordingRunner(EmulatorRunner):
    """The emulator runner keeping every launched variant's name expression in `launched`."""

    def __init__(self):
        super().__init__()
        self.launched = []

    def launch(self, kernel, expression, grid, block, shared_mem, args):
        self.launched.append(expression)
        super().launch(kernel, expression, grid, block, shared_mem, args)


class EmulatedGpu(NumpyBackend):
    """The CPU backend standing in for a GPU: NumPy buffers, the launchers' kernels."""

    device_type = DeviceType.gpu


@contextlib.contextmanager
def emulated_gpu_backend(runner):
    """Registers an `EmulatedGpu` whose fused and user kernels launch through `runner` (the
    launchers' `register`, as on a GPU); yields `runner`."""
    kernels = {cls: (cpu_fallback_kernel if issubclass(cls, FastOp) else fn)
               for cls, fn in cpu_table.kernels.items()}
    register(kernels, runner, cpu_fallback_kernel)
    table = KernelTable("emulated-gpu")
    for cls, fn in kernels.items():
        table.add(cls, fn)
    register_backend(DeviceType.gpu, EmulatedGpu(table))
    try:
        yield runner
    finally:
        register_backend(DeviceType.gpu, None)


def as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def emulate(p, *inputs, runner=None):
    """The node's outputs from its launcher in the emulator (default: `RUNNER`)."""
    return as_tuple(LAUNCHERS[type(p)](runner or RUNNER, p, *inputs))


def check(p, *inputs, tol=None):
    """Asserts that the emulated kernel matches the fallback graph; returns both."""
    got = emulate(p, *inputs)
    want = run_on_cpu(list(inputs), p.fallback)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        rtol, atol = tol or TOL.get(np.asarray(inputs[0]).dtype.name, TOL["float32"])
        w64, g64 = w.astype(np.float64), g.astype(np.float64)
        scale = max(float(np.max(np.abs(w64[np.isfinite(w64)]), initial=0.0)), 1.0)
        np.testing.assert_allclose(g64, w64, rtol=rtol, atol=atol * scale)
    return got, want


def random(shape, dtype, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(DTYPES[dtype])


def cases():
    """(id, primitive, inputs): one small case of every launcher per dtype, for the GPU
    comparison (the emulator tests cover more shapes)."""
    from nuvec.fast.conv import DepthwiseConv1d
    from nuvec.fast.cross_entropy import CrossEntropy, CrossEntropyVjp
    from nuvec.fast.gated_delta import GatedDelta, GatedDeltaSlots
    from nuvec.fast.norms import AddRmsNorm, LayerNorm, LayerNormVjp, RmsNorm, RmsNormVjp
    from nuvec.fast.paged import PagedWrite
    from nuvec.fast.rope import NormRope, Rope
    from nuvec.fast.softmax import LogSumExp, Softmax

    out = []
    for dt in DTYPES:
        x, r, g = random((5, 200), dt), random((5, 200), dt, 1), random((5, 200), dt, 2)
        w, b = random((200,), dt, 3), random((200,), dt, 4)
        targets = np.array([0, 199, -1, 7, -200], np.int32)
        (loss,) = run_on_cpu([x, targets], CrossEntropy().fallback)
        q = random((2, 3, 4, 16), dt)
        out += [
            (f"rms_norm-{dt}", RmsNorm(1e-5), [x, w]),
            (f"add_rms_norm-{dt}", AddRmsNorm(1e-5), [x, r, w]),
            (f"rms_norm_vjp-{dt}", RmsNormVjp(1e-5), [x, w, g]),
            (f"layer_norm-{dt}", LayerNorm(1e-5), [x, w, b]),
            (f"layer_norm_vjp-{dt}", LayerNormVjp(1e-5), [x, w, b, g]),
            (f"softmax-{dt}", Softmax(), [x]),
            (f"softmax_long-{dt}", Softmax(), [random((2, 70000), dt, 5)]),
            (f"logsumexp_long-{dt}", LogSumExp(), [random((2, 70000), dt, 6)]),
            (f"cross_entropy-{dt}", CrossEntropy(), [x, targets]),
            (f"cross_entropy_vjp-{dt}", CrossEntropyVjp(),
             [x, targets, loss, np.linspace(-1, 1, 5).astype(np.float32)]),
            (f"rope-{dt}", Rope(12, False, 10000.0, 1.0), [q, np.array(3, np.int32)]),
            (f"norm_rope-{dt}", NormRope(1e-5, 16, True, 10000.0, 1.0, 2, True),
             [random((2, 3, 8, 16), dt, 7), q, random((16,), dt, 8)]),
            (f"conv1d-{dt}", DepthwiseConv1d(2, 1, 2), [random((2, 19, 7), dt),
                                                       random((7, 3, 1), dt, 9)]),
            (f"paged_write-{dt}", PagedWrite(), [random((4, 3, 8, 5), dt), random((3, 3, 5), dt),
                                                np.array([0, 31, 40], np.int32)]),
            (f"fused_elementwise-{dt}", *fused_case(x, w)),
        ]
        delta = [random((2, 3, 1, 32), dt, 10, 0.2), random((2, 3, 1, 32), dt, 11, 0.2),
                 random((2, 3, 2, 17), dt, 12), np.full((2, 3, 2), 0.9, np.float32),
                 np.full((2, 3, 2), 0.5, np.float32)]
        out += [
            (f"gated_delta-{dt}", GatedDelta(False), [*delta, random((2, 2, 17, 32), dt, 13)]),
            (f"gated_delta_steps-{dt}", GatedDelta(True), [*delta, random((2, 2, 17, 32), dt, 13)]),
            (f"gated_delta_slots-{dt}", GatedDeltaSlots(),
             [*delta, random((3, 2, 17, 32), dt, 14), np.array([2, -3], np.int32)]),
            *gather_cases(dt),
        ]
    return out


def gather_cases(dt):
    """gather_mm with and without offsets, gather_qmm both ways (4-bit, groups of 32)."""
    from nuvec.fast.gather import GatherMm, GatherQmm
    from nuvec.ops.quantized import quantize

    rhs = np.array([0, 0, 2, 2, 2, 3], np.uint32)
    lhs = np.array([1, 0, 3, 2, 2, 0], np.uint32)
    offsets = np.array([0, 2, 2, 5], np.int32)
    out = [(f"gather_mm_segments-{dt}", GatherMm(),
            [random((4, 1, 40), dt), random((4, 40, 70), dt, 1), lhs, rhs, offsets]),
           (f"gather_mm-{dt}", GatherMm(),
            [random((2, 5, 24), dt), random((3, 24, 9), dt, 1), lhs[:3] % 2, rhs[:3]])]
    for transpose in (True, False):
        w, s, b = (np.asarray(a) for a in quantize(random((4, 64, 64), "float32", 2), 32, 4))
        s, b = s.astype(DTYPES[dt]), b.astype(DTYPES[dt])
        out.append((f"gather_qmm-{'t' if transpose else 'n'}-{dt}", GatherQmm(32, 4, transpose),
                    [random((4, 1, 64), dt), w, s, b, lhs, rhs, offsets]))
    return out


def fused_case(x, w):
    """(primitive, inputs) of a compiled 8-op chain over `x [N, D]` and `w [D]`."""
    import nuvec as mx
    from nuvec.fast.fused import FusedElementwise

    chain = mx.compile(lambda x, w: mx.tanh(mx.exp(x * 0.5) * w + 1) * 0.5 - mx.sin(x) / 3)
    y = chain(mx.array(x), mx.array(w))
    assert isinstance(y.primitive, FusedElementwise)
    return y.primitive, [np.asarray(a) for a in y.inputs]
