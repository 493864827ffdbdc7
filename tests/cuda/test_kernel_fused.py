"""The generated CUDA kernel of compiled elementwise chains (`FusedElementwise`): NVRTC compiles
the generated sources for sm_80 and sm_90 without spills, the emulator runs them against the
unfused graph on the CPU, and on each device (the GPU case marked) a compiled chain fuses and
matches the unfused one."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_checks import DTYPES, RUNNER, check, random

import nuvec as mx
from nuvec.backends.cuda import loader, nvrtc
from nuvec.backends.cuda.launchers import fused as launcher
from nuvec.fast.fused import FusedElementwise
from nuvec.ops.families import apply
from nuvec.ops.unary import DerivativeProduct

CHAINS = {
    "exp_scale_shift": lambda x, w, b: mx.exp(x) * w + b,
    "tanh_sin_rational": lambda x, w, b: mx.tanh(mx.sin(x) * 2) - mx.sqrt(mx.abs(x)) / (1 + x * x),
    "extrema_sigmoid": lambda x, w, b: mx.maximum(mx.sigmoid(x), w) - mx.minimum(x, b) * 0.5,
    "log_cast": lambda x, w, b: mx.log(mx.abs(x) + 1).astype(mx.float32) * 3 - mx.square(w),
    "eight_ops": lambda x, w, b: mx.tanh(mx.exp(x * 0.5) * w + b) * 0.5 - mx.sin(x) / 3 + 1,
    # the derivative rules of tanh, sigmoid and relu, with a cotangent and from the output
    # alone
    "derivatives": lambda x, w, b: (
        apply(DerivativeProduct("tanh"), x * w, mx.tanh(b))
        - apply(DerivativeProduct("sigmoid"), w, mx.sigmoid(x))
        + apply(DerivativeProduct("tanh", False), mx.tanh(x))
        * apply(DerivativeProduct("sigmoid", False), mx.sigmoid(w))),
    "relu_derivatives": lambda x, w, b: (
        apply(DerivativeProduct("relu"), x * 3, x + b)
        - apply(DerivativeProduct("relu", False), x - w)),
}


def fused_node(f, *data):
    """The fused primitive of compiled `f` on `data` and its inputs' data (weak scalars
    included as 0-d constants)."""
    y = mx.compile(f)(*[mx.array(d) for d in data])
    assert isinstance(y.primitive, FusedElementwise), y.primitive
    return y.primitive, [np.asarray(a) for a in y.inputs]


def _operands(dtype, rows=5, cols=200):
    return random((rows, cols), dtype), random((cols,), dtype, 1), random((rows, 1), dtype, 2)


@pytest.mark.skipif(not nvrtc.available(), reason="NVRTC wheel missing")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(CHAINS))
def test_generated_source_compiles_without_spills(name, dtype, arch):
    p, inputs = fused_node(CHAINS[name], *_operands(dtype))
    kf = launcher.kernel_file(p, inputs, RUNNER.dtype_of)
    module = loader.load(kf.name, kf.variants, arch, source=kf.source)
    r = module.resources[kf.name]
    assert r.spill_stores == 0 and r.spill_loads == 0 and r.stack == 0, (name, arch, r)
    assert r.registers <= 40, (name, arch, r)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(CHAINS))
def test_emulated_kernel_matches_the_unfused_graph(name, dtype):
    p, inputs = fused_node(CHAINS[name], *_operands(dtype, rows=3, cols=130))
    check(p, *inputs)


def test_layouts_broadcast_strided_and_scalar():
    x = random((6, 10), "float32")
    # a transposed (strided) operand, a row and a column broadcast, a 0-d weak scalar
    p, inputs = fused_node(lambda a, w, b: mx.exp(a.T) * w - b * 2.0, x, x[0, :6].copy(),
                           x[:, :1].T.copy())
    check(p, *inputs)
    assert any(not a.flags.c_contiguous for a in inputs)
    assert any(a.shape != p.shape for a in inputs)
    strides = [launcher.element_strides(launcher.compact(RUNNER, a), p.shape) for a in inputs]
    dims, steps = launcher.collapse(p.shape, strides)
    assert dims and len(steps) == len(inputs)


def test_collapse_merges_contiguous_axes_only():
    assert launcher.collapse((2, 3, 4), [[12, 4, 1]]) == ([24], [[1]])
    assert launcher.collapse((2, 3, 4), [[12, 4, 1], [0, 0, 1]]) == ([6, 4], [[4, 1], [0, 1]])
    assert launcher.collapse((), [[]]) == ([], [[]])


def test_covers_floats_and_listed_steps():
    x = mx.ones(2)
    assert launcher.covers(mx.exp(x).primitive, mx.bfloat16)
    assert not launcher.covers(mx.exp(x).primitive, mx.float64)
    assert not launcher.covers((x > 1).primitive, mx.float32)  # comparisons: bool results
    assert not launcher.covers(mx.erfinv(x).primitive, mx.float32)


def test_takes_rejects_a_bfloat16_result_from_other_dtypes():
    p, inputs = fused_node(CHAINS["exp_scale_shift"], *_operands("float32"))
    assert launcher.takes(p, inputs)
    check(p, inputs[0][::-1], *inputs[1:])  # negative strides: compacted into a copy
    cast = FusedElementwise((*p.steps, (mx.astype(mx.ones(1), mx.bfloat16).primitive,
                                        (len(inputs) + len(p.steps) - 1,), mx.bfloat16)),
                            p.shape)
    assert not launcher.takes(cast, inputs)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
def test_compiled_chain_on_each_device_fuses_and_matches(device, dtype):
    x, w, b = (np.asarray(a, np.float32) for a in _operands("float32", 64, 300))
    f = CHAINS["eight_ops"]
    args = [mx.array(a, dtype) for a in (x, w, b)]
    y = mx.compile(f)(*args)
    assert isinstance(y.primitive, FusedElementwise)
    got, want = np.array(y.astype(mx.float32)), np.array(f(*args).astype(mx.float32))
    tol = {mx.float32: 1e-5, mx.float16: 4e-3, mx.bfloat16: 3e-2}[dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
