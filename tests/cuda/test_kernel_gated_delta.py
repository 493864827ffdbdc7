"""The gated delta kernels in the emulator against the fallback graph (final state, every
step's state, pool slots), the node's kernel choice, and (marked `gpu`) the same on a device."""

import numpy as np
import pytest
from kernel_checks import DTYPES, TOL, RecordingRunner, check, emulate, random

from nuvec.backends.cuda.launchers import gated_delta as launcher
from nuvec.backends.cuda.launchers import takes
from nuvec.fast.base import run_on_cpu
from nuvec.fast.gated_delta import GatedDelta, GatedDeltaSlots

DT = list(DTYPES)


def _inputs(dtype, b=2, t=3, hk=1, hv=2, dv=5, dk=32, state=None, gates=("float32",) * 2,
            seed=0):
    rng = np.random.default_rng(seed)
    q = random((b, t, hk, dk), dtype, seed, 0.2)
    k = random((b, t, hk, dk), dtype, seed + 1, 0.2)
    v = random((b, t, hv, dv), dtype, seed + 2)
    g = rng.uniform(0.5, 1.0, (b, t, hv)).astype(DTYPES[gates[0]])
    beta = rng.uniform(0.1, 0.9, (b, t, hv)).astype(DTYPES[gates[1]])
    s = random((b, hv, dv, dk), state or dtype, seed + 3, 0.5)
    return [q, k, v, g, beta, s]


# (b, t, hk, hv, dv, dk, state dtype or None for q's, g and beta dtypes): decode (T = 1) and
# several steps, grouped heads (Hv / Hk = 1, 2, 4), row tails (Dv not a multiple of the 16
# rows of a block, Dv < 16), Dk past 128 (8 registers per lane, fewer used), float32 states of
# 16-bit inputs, 16-bit gates.
CASES = [
    (2, 1, 2, 2, 16, 32, None, ("float32", "float32")),
    (3, 4, 1, 4, 20, 64, None, ("float16", "bfloat16")),
    (1, 5, 2, 4, 7, 160, "float32", ("float32", "float16")),
    (2, 2, 1, 1, 33, 256, None, ("bfloat16", "float32")),
]


@pytest.mark.parametrize("steps", [False, True], ids=["final", "steps"])
@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_gated_delta(dtype, case, steps):
    b, t, hk, hv, dv, dk, state, gates = case
    if state == "float32" and dtype == "float32":
        state = None
    inputs = _inputs(dtype, b, t, hk, hv, dv, dk, state, gates)
    assert takes(GatedDelta(steps), inputs)
    check(GatedDelta(steps), *inputs)


# (pool entries, slots, steps): distinct slots, negative slots, a slot shared by two sequences
# (the last one writes, as the fallback's scatter), untouched entries.
SLOTS = [
    (4, [3, 1], 1),
    (5, [-1, 0, 2], 3),
    (3, [1, 2, 1, -2], 2),
]


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("case", SLOTS, ids=str)
def test_gated_delta_slots(dtype, case):
    entries, slots, t = case
    b = len(slots)
    inputs = _inputs(dtype, b, t, 1, 2, 18, 64, gates=("bfloat16", "float16"), seed=entries)
    pool = random((entries, 2, 18, 64), dtype, 9, 0.5)
    assert takes(GatedDeltaSlots(), [*inputs[:5], pool])
    check(GatedDeltaSlots(), *inputs[:5], pool, np.array(slots, np.int32))


def test_a_slot_out_of_range_reads_zeros_and_writes_nothing():
    inputs = _inputs("float32", 2, 2, 1, 2, 5, 32)
    pool = random((3, 2, 5, 32), "float32", 4)
    y, out = emulate(GatedDeltaSlots(), *inputs[:5], pool, np.array([7, 1], np.int32))
    zero = np.zeros((1, 2, 5, 32), np.float32)
    first = [a[:1] for a in inputs[:5]]
    want_y0, _ = run_on_cpu([*first, zero], GatedDelta(False).fallback)
    want_y1, want_s1 = run_on_cpu([*[a[1:] for a in inputs[:5]], pool[1:2]],
                                  GatedDelta(False).fallback)
    rtol, atol = TOL["float32"]
    np.testing.assert_allclose(y[:1], want_y0, rtol=rtol, atol=atol)
    np.testing.assert_allclose(y[1:], want_y1, rtol=rtol, atol=atol)
    np.testing.assert_allclose(out[1:2], want_s1, rtol=rtol, atol=atol)
    assert np.array_equal(out[[0, 2]], pool[[0, 2]])


def test_no_steps_copy_the_state():
    inputs = _inputs("float16", 2, 0, 1, 2, 5, 32)
    y, s = emulate(GatedDelta(False), *inputs)
    assert y.shape == (2, 0, 2, 5) and np.array_equal(s, inputs[5])
    y, s = emulate(GatedDelta(True), *inputs)
    assert s.shape == (2, 0, 2, 5, 32)


@pytest.mark.parametrize("op, want", [
    (GatedDelta(False), "gated_delta<__half, float, 4>"),
    (GatedDelta(True), "gated_delta_steps<__half, float, 4>"),
    (GatedDeltaSlots(), "gated_delta_slots<__half, float, 4>"),
], ids=["final", "steps", "slots"])
def test_each_node_launches_its_kernel(op, want):
    inputs = _inputs("float16", state="float32")
    if isinstance(op, GatedDeltaSlots):
        inputs.append(np.array([1, 0], np.int32))
    runner = RecordingRunner()
    (launcher.gated_delta_slots if isinstance(op, GatedDeltaSlots)
     else launcher.gated_delta)(runner, op, *inputs)
    assert runner.launched == [want] and launcher.kernel_name(op) == want.split("<")[0]


def test_inputs_the_kernels_do_not_take():
    # Dk past 256, a 16-bit state of other 16-bit inputs, a float16 state of float32 inputs
    assert not takes(GatedDelta(False), _inputs("float32", dk=288))
    assert not takes(GatedDelta(False), _inputs("bfloat16", state="float16"))
    assert not takes(GatedDelta(True), _inputs("float32", state="float16"))
    assert takes(GatedDelta(True), _inputs("bfloat16", state="float32"))

    class Big:  # every step's state past 2^32 elements (the 32-bit offsets)
        def __init__(self, shape, dtype):
            self.shape, self.dtype, self.size = shape, dtype, int(np.prod(shape))

    q = Big((1, 2**13, 32, 128), "float32")
    state = Big((1, 32, 128, 128), "float32")
    big = [q, q, Big((1, 2**13, 32, 128), "float32"), None, None, state]
    assert not launcher.takes(GatedDelta(True), big)
    assert launcher.takes(GatedDelta(False), big)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("op", [GatedDelta(False), GatedDelta(True), GatedDeltaSlots()],
                         ids=["final", "steps", "slots"])
def test_gpu_kernels_match_fallback(dtype, op):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    if not cupy.cuda.is_available():
        pytest.skip("no CUDA device")
    from nuvec.backends.cuda.runner import CupyRunner

    inputs = _inputs(dtype, 3, 4, 1, 4, 20, 128, gates=("float16", "float32"))
    if isinstance(op, GatedDeltaSlots):
        inputs = [*inputs[:5], random((4, 4, 20, 128), dtype, 5), np.array([2, -1, 0], np.int32)]
    dev = [cupy.asarray(a.view(np.uint16) if a.dtype.name == "bfloat16" else a)
           for a in inputs]
    fn = launcher.gated_delta_slots if isinstance(op, GatedDeltaSlots) else launcher.gated_delta
    got = fn(CupyRunner(), op, *dev)
    want = run_on_cpu(inputs, op.fallback)
    rtol, atol = TOL[dtype]
    for g, w in zip(got, want):
        g = g.get()
        g = g.view(w.dtype) if dtype == "bfloat16" else g
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                   atol=atol * max(float(np.abs(w).max()), 1.0))
