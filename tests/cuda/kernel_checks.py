"""Running a fused node through its launcher in the kernel emulator and through its fallback
graph on the CPU (the reference), compared with per-dtype tolerances."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from nuvec.backends.cuda.launchers import LAUNCHERS
from nuvec.backends.cuda.runner import EmulatorRunner
from nuvec.fast.base import run_on_cpu

DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
# (rtol, atol) per input dtype of a kernel (float32 sums) against the fallback (which rounds
# each step to the input dtype); atol is relative to the reference's largest magnitude.
TOL = {"float32": (2e-5, 2e-5), "float16": (4e-3, 4e-3), "bfloat16": (3e-2, 3e-2)}
RUNNER = EmulatorRunner()


def as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def emulate(p, *inputs, runner=RUNNER):
    """The node's outputs from its launcher in the emulator."""
    return as_tuple(LAUNCHERS[type(p)](runner, p, *inputs))


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
