"""The gated delta rule: outputs and states per dtype, steps, slots, checks, mlx-lm's update."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
import fast_refs as ref
from fast_refs import DTYPE_IDS, DTYPES, close, sample
from nuvec.fast.gated_delta import GatedDelta, GatedDeltaSlots
from nuvec.graph.array import record

CPU = mx.default_stream(mx.cpu)
TOL = {"float16": (1e-2, 1e-2), "bfloat16": (6e-2, 6e-2), "float32": (1e-5, 1e-5)}


def _inputs(rng, dtype, b=2, t=3, hk=1, hv=2, dv=3, dk=32, state_dtype=None):
    q, qr = sample(rng, (b, t, hk, dk), dtype, 0.2)
    k, kr = sample(rng, (b, t, hk, dk), dtype, 0.2)
    v, vr = sample(rng, (b, t, hv, dv), dtype)
    g = mx.array(rng.uniform(0.5, 1.0, (b, t, hv)), dtype)
    beta = mx.array(rng.uniform(0.1, 0.9, (b, t, hv)), dtype)
    s, sr = sample(rng, (b, hv, dv, dk), state_dtype or dtype, 0.5)
    arrays = [q, k, v, g, beta, s]
    return arrays, [qr, kr, vr, np.asarray(g, np.float64), np.asarray(beta, np.float64), sr]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", [dict(), dict(hk=2, hv=2, t=1), dict(t=0), dict(hv=4)],
                         ids=["gqa", "decode", "empty", "gqa4"])
def test_gated_delta(dtype, shape):
    rng = np.random.default_rng(0)
    arrays, refs = _inputs(rng, dtype, **shape)
    y, s = mx.fast.gated_delta(*arrays)
    yr, sr = ref.gated_delta(*refs)
    close(y, yr, dtype, TOL)
    close(s, sr, dtype, TOL)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("t", [3, 0], ids=["steps", "empty"])
def test_gated_delta_steps(dtype, t):
    rng = np.random.default_rng(1)
    arrays, refs = _inputs(rng, dtype, t=t)
    y, states = mx.fast.gated_delta_steps(*arrays)
    yr, sr = ref.gated_delta(*refs, steps=True)
    assert states.shape == (2, t, 2, 3, 32)
    close(y, yr, dtype, TOL)
    close(states, sr, dtype, TOL)


def test_state_dtype_is_kept():
    rng = np.random.default_rng(2)
    arrays, refs = _inputs(rng, mx.float16, state_dtype=mx.float32)
    y, s = mx.fast.gated_delta(*arrays)
    assert y.dtype is mx.float16 and s.dtype is mx.float32
    close(s, ref.gated_delta(*refs)[1], mx.float32, TOL)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_gated_delta_slots(dtype):
    rng = np.random.default_rng(3)
    arrays, refs = _inputs(rng, dtype)
    pool, pr = sample(rng, (4, 2, 3, 32), dtype, 0.5)
    slots = np.array([3, 1])
    y, new_pool = mx.fast.gated_delta_slots(*arrays[:5], pool, mx.array(slots, mx.int64))
    yr, sr = ref.gated_delta(*refs[:5], pr[slots])
    want = pr.copy()
    want[slots] = sr
    close(y, yr, dtype, TOL)
    close(new_pool, want, dtype, TOL)


def test_kernel_nodes_on_the_gpu_stream(fake_gpu):
    rng = np.random.default_rng(4)
    arrays, refs = _inputs(rng, mx.float32)
    pool, pr = sample(rng, (3, 2, 3, 32), mx.float32, 0.5)
    with mx.stream(fake_gpu):
        y, s = mx.fast.gated_delta(*arrays)
        assert isinstance(y.primitive, GatedDelta)
        y2, p2 = mx.fast.gated_delta_slots(*arrays[:5], pool, mx.array([2, 0]))
        assert isinstance(y2.primitive, GatedDeltaSlots)
    yr, sr = ref.gated_delta(*refs)
    close(y, yr, mx.float32, TOL)
    close(s, sr, mx.float32, TOL)
    yr2, sr2 = ref.gated_delta(*refs[:5], pr[[2, 0]])
    want = pr.copy()
    want[[2, 0]] = sr2
    close(y2, yr2, mx.float32, TOL)
    close(p2, want, mx.float32, TOL)


def _softplus(x):
    return np.logaddexp(x, 0.0)


def _masked_rule(q, k, v, g, beta, state, mask):
    """The rule step by step where a masked step (per batch row) keeps the state and
    outputs zeros (mlx-lm's kernel)."""
    ys = []
    for t in range(q.shape[1]):
        step = slice(t, t + 1)
        y, new = ref.gated_delta(q[:, step], k[:, step], v[:, step], g[:, step],
                                 beta[:, step], state)
        keep = mask[:, t]
        ys.append(np.where(keep[:, None, None], y[:, 0], 0.0))
        state = np.where(keep[:, None, None, None], new, state)
    return np.stack(ys, 1), state


@pytest.mark.parametrize("masked", [False, True], ids=["no-mask", "mask"])
@pytest.mark.parametrize("lower_bound", [None, -5.0], ids=["softplus", "lower-bound"])
def test_gated_delta_from_projections(masked, lower_bound):
    rng = np.random.default_rng(5)
    arrays, refs = _inputs(rng, mx.float32)
    q, k, v = arrays[:3]
    a, ar = sample(rng, (2, 3, 2), mx.float32)
    bb, br = sample(rng, (2, 3, 2), mx.float32)
    a_log, alr = sample(rng, (2,), mx.float32, 0.3)
    dt_bias, dbr = sample(rng, (2,), mx.float32, 0.3)
    mask = np.array([[True, False, True], [True, True, False]])
    y, s = mx.fast.gated_delta_from_projections(q, k, v, a, bb, a_log, dt_bias,
                                                mask=mx.array(mask) if masked else None,
                                                lower_bound=lower_bound)
    beta = 1 / (1 + np.exp(-br))
    if lower_bound is None:
        g = np.exp(-np.exp(alr) * _softplus(ar + dbr))
    else:
        g = np.exp(lower_bound / (1 + np.exp(-np.exp(alr) * (ar + dbr))))
    keep = mask if masked else np.ones((2, 3), bool)
    yr, sr = _masked_rule(*refs[:3], g, beta, np.zeros((2, 2, 3, 32)), keep)
    close(y, yr, mx.float32, TOL)
    close(s, sr, mx.float32, TOL)


@pytest.mark.parametrize("masked", [False, True], ids=["no-mask", "mask"])
def test_gated_delta_update_takes_the_gates_as_mlx(masked):
    rng = np.random.default_rng(9)
    arrays, refs = _inputs(rng, mx.float32)
    q, k, v, g, beta, state = arrays
    mask = np.array([[True, False, True], [True, True, False]])
    y, s = mx.fast.gated_delta_update(q, k, v, g, beta, state,
                                      mask=mx.array(mask) if masked else None)
    keep = mask if masked else np.ones((2, 3), bool)
    yr, sr = _masked_rule(*refs, keep)
    close(y, yr, mx.float32, TOL)
    close(s, sr, mx.float32, TOL)
    y0, s0 = mx.fast.gated_delta_update(q, k, v, g, beta)  # no state: float32 zeros
    yr, sr = ref.gated_delta(*refs[:5], np.zeros_like(refs[5]))
    close(y0, yr, mx.float32, TOL)
    assert s0.dtype is mx.float32


def test_gated_delta_from_projections_keeps_a_float32_state_for_half_inputs():
    rng = np.random.default_rng(6)
    arrays, refs = _inputs(rng, mx.float16)
    q, k, v = arrays[:3]
    a, ar = sample(rng, (2, 3, 2), mx.float16)
    y, s = mx.fast.gated_delta_from_projections(q, k, v, a, a, mx.zeros((2,)), mx.zeros((2,)))
    assert y.dtype is mx.float16 and s.dtype is mx.float32
    beta = 1 / (1 + np.exp(-ar))
    g = np.exp(-_softplus(ar))
    yr, sr = ref.gated_delta(*refs[:3], g, beta, np.zeros((2, 2, 3, 32)))
    close(y, yr, mx.float16, TOL)
    close(s, sr, mx.float32, {"float32": (2e-3, 2e-3)})


Q = mx.ones((1, 2, 1, 32))
V = mx.ones((1, 2, 2, 4))
G = mx.ones((1, 2, 2))
S = mx.ones((1, 2, 4, 32))


@pytest.mark.parametrize("call, message, error", [
    (lambda: mx.fast.gated_delta(Q, Q, V, G, G, mx.ones((1, 2, 4, 32), mx.int32)),
     "gated_delta: unsupported dtype int32", TypeError),
    (lambda: mx.fast.gated_delta(Q, mx.ones((1, 2, 1, 16)), V, G, G, S),
     r"gated_delta: q and k must be \[B, T, Hk, Dk\] and v \[B, T, Hv, Dv\], got", ValueError),
    (lambda: mx.fast.gated_delta(Q, Q, mx.ones((1, 2, 2)), G, G, S),
     r"gated_delta: q and k must be", ValueError),
    (lambda: mx.fast.gated_delta(Q, Q, mx.ones((1, 3, 2, 4)), G, G, S),
     r"gated_delta: v must be \[1, 2, Hv, Dv\] with Hv a multiple of 1, got", ValueError),
    (lambda: mx.fast.gated_delta(mx.ones((1, 2, 2, 32)), mx.ones((1, 2, 2, 32)),
                                 mx.ones((1, 2, 3, 4)), G, G, S),
     r"gated_delta: v must be \[1, 2, Hv, Dv\] with Hv a multiple of 2", ValueError),
    (lambda: mx.fast.gated_delta(Q, Q, V, mx.ones((1, 2, 3)), G, S),
     r"gated_delta: g and beta must be \[1, 2, 2\], got \(1, 2, 3\) and \(1, 2, 2\)",
     ValueError),
    (lambda: mx.fast.gated_delta(Q, Q, V, G, G, mx.ones((1, 2, 32, 4))),
     r"gated_delta: state must be \[1, 2, 4, 32\], got \(1, 2, 32, 4\)", ValueError),
    (lambda: mx.fast.gated_delta_slots(Q, Q, V, G, G, mx.ones((3, 2, 4)), mx.array([0])),
     r"gated_delta_slots: pool must be \[slots, Hv, Dv, Dk\] and slots \[1\] integers, got "
     r"\(3, 2, 4\) and int32 \(1,\)", ValueError),
    (lambda: mx.fast.gated_delta_slots(Q, Q, V, G, G, mx.ones((3, 2, 4, 32)), mx.array([0.0])),
     r"gated_delta_slots: pool must be", ValueError),
    (lambda: mx.fast.gated_delta_slots(Q, Q, V, G, G, mx.ones((3, 2, 4, 16)), mx.array([0])),
     r"gated_delta_slots: state must be \[1, 2, 4, 32\], got \(1, 2, 4, 16\)", ValueError),
    (lambda: mx.fast.gated_delta_from_projections(Q, Q, V, G, G, mx.zeros((3,)),
                                                  mx.zeros((2,))),
     r"gated_delta_from_projections: A_log must be \[2\] \(one per value head\), got "
     r"\(3,\)", ValueError),
    (lambda: mx.fast.gated_delta_update(Q, Q, V, G, G, mx.ones((1, 2, 32, 4))),
     r"gated_delta_update: state must be \[1, 2, 4, 32\], got \(1, 2, 32, 4\)", ValueError),
    (lambda: mx.fast.gated_delta_update(Q, Q, V, G, G, mask=mx.ones((2, 2), mx.bool_)),
     r"gated_delta_update: mask must be \[B, T\] = \[1, 2\], got \(2, 2\)", ValueError),
], ids=lambda v: v if isinstance(v, str) else None)
def test_rejected_inputs(call, message, error):
    with pytest.raises(error, match="^" + message):
        call()


@pytest.mark.parametrize("op, inputs", [
    (GatedDelta(False), [mx.ones((1, 2, 1, 16)), mx.ones((1, 2, 1, 16)), V, G, G,
                         mx.ones((1, 2, 4, 16))]),
    (GatedDelta(False), [Q, Q, V, G, G, mx.ones((1, 2, 4, 32), mx.int32)]),
    (GatedDelta(True), [Q, Q, V, mx.ones((1, 2, 3)), G, S]),
    (GatedDeltaSlots(), [Q, Q, V, G, G, mx.ones((3, 2, 4, 32)), mx.array([0], mx.int64)]),
    (GatedDeltaSlots(), [Q, Q, V, G, G, mx.ones((3, 2, 4, 32)), mx.array([0, 1], mx.int32)]),
    (GatedDelta(False), [Q, mx.ones((1, 2, 1, 32), mx.float16), V, G, G, S]),  # k's dtype
    (GatedDelta(False), [Q, Q, mx.ones((1, 2, 2, 4), mx.float16), G, G, S]),  # v's dtype
    (GatedDelta(False), [Q, Q, mx.ones((1, 3, 2, 4)), G, G, S]),  # v's [B, T]
    (GatedDelta(False), [mx.ones((1, 2, 2, 32)), mx.ones((1, 2, 2, 32)),
                         mx.ones((1, 2, 3, 4)), mx.ones((1, 2, 3)), mx.ones((1, 2, 3)),
                         mx.ones((1, 3, 4, 32))]),  # Hv not a multiple of Hk
    (GatedDelta(False), [mx.ones((1, 2, 0, 32)), mx.ones((1, 2, 0, 32)), V, G, G, S]),  # Hk 0
    (GatedDelta(False), [Q, Q, V, G, mx.ones((1, 2, 3)), S]),  # beta's shape
    (GatedDelta(False), [Q, Q, V, mx.ones((1, 2, 2), mx.int32), G, S]),  # g's dtype
    (GatedDelta(False), [Q, Q, V, G, mx.ones((1, 2, 2), mx.int32), S]),  # beta's dtype
    (GatedDelta(False), [Q, Q, V, G, G, mx.ones((1, 2, 4, 16))]),  # state's shape
    (GatedDeltaSlots(), [Q, Q, V, G, G, mx.ones((3, 2, 4)), mx.array([0], mx.int32)]),
    (GatedDeltaSlots(), [Q, Q, V, G, G, mx.ones((3, 2, 5, 32)), mx.array([0], mx.int32)]),
    (GatedDeltaSlots(), [Q, Q, V, G, G, mx.ones((3, 2, 4, 32), mx.int32),
                         mx.array([0], mx.int32)]),  # pool's dtype
], ids=str)
def test_a_node_built_directly_with_invalid_inputs_is_rejected(op, inputs):
    with pytest.raises(ValueError, match="^gated_delta: invalid inputs"):
        record(op, inputs, CPU)


@pytest.mark.parametrize("op, inputs", [
    (GatedDelta(False), [Q, Q, mx.ones((1, 2, 2)), G, G, S]),
    (GatedDelta(False), [mx.ones((2, 1, 32)), mx.ones((2, 1, 32)), V, G, G, S]),
    (GatedDeltaSlots(), [Q, mx.ones((1, 2, 1, 16)), V, G, G, S, mx.array([0], mx.int32)]),
], ids=["v-3d", "q-3d", "k-shape"])
def test_a_node_with_bad_ranks_is_rejected(op, inputs):
    with pytest.raises(ValueError, match=r"^gated_delta: q and k must be \[B, T, Hk, Dk\]"):
        record(op, inputs, CPU)
