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


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64], ids=["float32", "float64"])
def test_gated_delta_steps(dtype):
    rng = np.random.default_rng(1)
    arrays, refs = _inputs(rng, dtype)
    y, states = mx.fast.gated_delta_steps(*arrays)
    yr, sr = ref.gated_delta(*refs, steps=True)
    assert states.shape == (2, 3, 2, 3, 32)
    close(y, yr, dtype, TOL)
    close(states, sr, dtype, TOL)


def test_state_dtype_is_kept():
    rng = np.random.default_rng(2)
    arrays, refs = _inputs(rng, mx.float16, state_dtype=mx.float32)
    y, s = mx.fast.gated_delta(*arrays)
    assert y.dtype is mx.float16 and s.dtype is mx.float32
    close(s, ref.gated_delta(*refs)[1], mx.float32, TOL)


@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16], ids=str)
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


@pytest.mark.parametrize("masked", [False, True], ids=["no-mask", "mask"])
def test_gated_delta_update(masked):
    rng = np.random.default_rng(5)
    arrays, refs = _inputs(rng, mx.float32)
    q, k, v = arrays[:3]
    a, ar = sample(rng, (2, 3, 2), mx.float32)
    bb, br = sample(rng, (2, 3, 2), mx.float32)
    a_log, alr = sample(rng, (2,), mx.float32, 0.3)
    dt_bias, dbr = sample(rng, (2,), mx.float32, 0.3)
    mask = np.array([[True, False, True], [True, True, False]])
    y, s = mx.fast.gated_delta_update(q, k, v, a, bb, a_log, dt_bias,
                                      mask=mx.array(mask) if masked else None)
    beta = 1 / (1 + np.exp(-br))
    g = np.exp(-np.exp(alr) * _softplus(ar + dbr))
    if masked:
        g = np.where(mask[..., None], g, 1.0)
        beta = np.where(mask[..., None], beta, 0.0)
    yr, sr = ref.gated_delta(*refs[:3], g, beta, np.zeros((2, 2, 3, 32)))
    close(y, yr, mx.float32, TOL)
    close(s, sr, mx.float32, TOL)


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
     r"gated_delta: state must be \[1, 2, 4, 32\], got \(1, 2, 4, 16\)", ValueError),
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
], ids=str)
def test_a_node_built_directly_with_invalid_inputs_is_rejected(op, inputs):
    with pytest.raises(ValueError, match="^gated_delta: invalid inputs"):
        record(op, inputs, CPU)


def test_a_node_with_bad_ranks_is_rejected():
    with pytest.raises(ValueError, match=r"^gated_delta: q and k must be \[B, T, Hk, Dk\]"):
        record(GatedDelta(False), [Q, Q, mx.ones((1, 2, 2)), G, G, S], CPU)
