"""On a GPU (marked `gpu`, skipped without CuPy and a device): every kernel through the CuPy
runner against its fallback graph, and against the emulator's result for the same inputs."""

import numpy as np
import pytest
from kernel_checks import TOL, as_tuple, cases, emulate

from nuvec.backends.cuda.launchers import LAUNCHERS
from nuvec.fast.base import run_on_cpu

pytestmark = pytest.mark.gpu


def _runner():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            pytest.skip("no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError:
        pytest.skip("no CUDA device")
    from nuvec.backends.cuda.runner import CupyRunner

    return CupyRunner()


def _to_device(runner, a):
    a = np.asarray(a)
    return runner.xp.asarray(a.view(np.uint16) if a.dtype.name == "bfloat16" else a)


def _to_host(a, like):
    host = a.get()
    return host.view(like.dtype) if like.dtype.name == "bfloat16" else host


@pytest.mark.parametrize("case", cases(), ids=lambda c: c[0])
def test_kernel_matches_fallback_and_emulator(case):
    runner = _runner()
    _, p, inputs = case
    got = as_tuple(LAUNCHERS[type(p)](runner, p, *[_to_device(runner, a) for a in inputs]))
    want = run_on_cpu(list(inputs), p.fallback)
    emulated = emulate(p, *inputs)
    rtol, atol = TOL[np.asarray(inputs[0]).dtype.name]
    for g, w, e in zip(got, want, emulated):
        g = _to_host(g, w).astype(np.float64)
        scale = max(float(np.abs(w.astype(np.float64)).max(initial=0.0)), 1.0)
        np.testing.assert_allclose(g, w.astype(np.float64), rtol=rtol, atol=atol * scale)
        np.testing.assert_allclose(g, e.astype(np.float64), rtol=rtol, atol=atol * scale)
