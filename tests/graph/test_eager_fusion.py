"""Eager fusion at `eval`: chains of large elementwise nodes run as one fused node.

Fused results must be bit-identical to the per-node path (random chains, broadcasting, dtype
promotion, weak scalars, thread counts), a value anyone can still read (a handle, a second
consumer, a kept graph, another stream's node) is never fused away, failures name the node
that failed as without fusion and leave the graph as recorded, and memory is counted as before.
"""

from __future__ import annotations

import gc

import ml_dtypes
import numpy as np
import pytest

import nuvec as mx
from nuvec.backends.numpy.registry import table
from nuvec.graph import eager
from nuvec.graph.array import record1
from nuvec.graph.device import to_stream
from nuvec.ops.families import Unary
from nuvec.ops.shape import Transpose

SMALL = 64  # elements: the threshold the tests fuse from, so that their arrays stay small
OFF = 1 << 62


@pytest.fixture
def fusing(monkeypatch, plans):
    """Fusion from `SMALL` elements on; yields the list of chains each `plan` fused."""
    monkeypatch.setattr(eager, "FUSE_MIN_ELEMENTS", SMALL)
    yield plans
    gc.collect()  # the failure tests' tracebacks hold arrays in cycles: free them now


def _both(monkeypatch, build):
    """`build()`'s outputs (a list of arrays) evaluated with fusion on and off, as NumPy."""
    outs = {}
    for threshold in (SMALL, OFF):
        monkeypatch.setattr(eager, "FUSE_MIN_ELEMENTS", threshold)
        arrays = build()
        mx.eval(arrays)
        outs[threshold] = [np.asarray(a) for a in arrays]
    return outs[SMALL], outs[OFF]


def _same(fused, unfused):
    for a, b in zip(fused, unfused):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)  # bit-identical (NaN where NaN)


UNARY = [lambda a: mx.exp(a * 0.5), mx.sin, mx.tanh, lambda a: mx.sqrt(mx.abs(a) + 1),
         lambda a: -a, mx.sigmoid, lambda a: mx.square(a) * 0.25, lambda a: mx.log1p(mx.abs(a))]
BINARY = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b,
          lambda a, b: a / (mx.abs(b) + 1), mx.maximum, mx.minimum, lambda a, b: a * 1.5 + 2]
SHAPES = [((40, 33), [(33,), (40, 1), ()]), ((3, 8, 9), [(8, 1), (9,), (3, 1, 1)]),
          ((500,), [(1,), (500,)])]
DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64]


def _random_chain(rng, shape, extra, dtype):
    ops = [(rng.integers(len(UNARY)), None) if rng.random() < 0.5
           else (rng.integers(len(BINARY)), rng.integers(len(extra) + 1)) for _ in range(7)]
    x = rng.standard_normal(shape).astype(dtype)
    ys = [rng.standard_normal(s).astype(dtype) for s in extra]

    def build():
        v = mx.array(x)
        others = [mx.array(y) for y in ys]
        for k, pick in ops:
            if pick is None:
                v = UNARY[k](v)
            else:
                v = BINARY[k](v, others[pick] if pick < len(others) else v)
        return [v]

    return build


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("seed", range(4))
def test_random_chains_are_bit_identical(monkeypatch, fusing, dtype, seed):
    rng = np.random.default_rng(seed)
    shape, extra = SHAPES[seed % len(SHAPES)]
    fused, unfused = _both(monkeypatch, _random_chain(rng, shape, extra, dtype))
    _same(fused, unfused)
    assert fusing[0] >= 1


def test_promotion_weak_scalars_and_casts_fuse_bit_identically(monkeypatch, fusing):
    rng = np.random.default_rng(7)
    xi = rng.integers(-5, 5, (30, 20)).astype(np.int32)
    xh = rng.standard_normal((30, 20)).astype(np.float16)
    xd = rng.standard_normal((20,))

    def build():
        i, h, d = mx.array(xi), mx.array(xh), mx.array(xd, dtype=mx.float64)
        a = (i * 3 + 1) / 7  # int32 -> float32 (divide), weak scalars
        b = mx.exp(h * 0.5) + a  # float16 + float32 -> float32
        c = b.astype(mx.float16) * 2 - 1  # a cast inside the chain
        return [mx.maximum(c, d) * 0.5]  # float16 with float64 -> float64, broadcast

    fused, unfused = _both(monkeypatch, build)
    _same(fused, unfused)
    assert fused[0].dtype == np.float64
    assert fusing[0] >= 1


@pytest.mark.parametrize("threads", [1, 2])
def test_thread_counts_do_not_change_values(monkeypatch, fusing, threads):
    before = mx.get_num_threads()
    mx.set_num_threads(threads)
    try:
        from nuvec.backends.numpy import fused as cpu_fused

        monkeypatch.setattr(cpu_fused, "BLOCK", 256)  # many blocks, split over the threads
        monkeypatch.setattr(cpu_fused, "WHOLE", 0)  # blocks even for this small an output
        x = np.linspace(-3, 3, 60000, dtype=np.float32).reshape(200, 300)
        fused, unfused = _both(monkeypatch, lambda: [mx.tanh(mx.exp(mx.array(x)) * 0.5 - 1)])
    finally:
        mx.set_num_threads(before)
    _same(fused, unfused)


def test_exp_w_b_matches_numpy_at_full_size(monkeypatch):
    # at the default threshold: the peer benchmark's workload, fused
    rng = np.random.default_rng(0)
    shape = (eager.FUSE_MIN_ELEMENTS // 1024, 1024)
    x, w = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    b = rng.standard_normal(1024).astype(np.float32)
    plans = []
    plan = eager.plan
    monkeypatch.setattr(eager, "plan", lambda rest: plans.append(1) or plan(rest))
    y = mx.exp(mx.array(x)) * mx.array(w) + mx.array(b)
    mx.eval(y)
    assert plans == [1]
    expected = (np.exp(x.astype(np.float64)) * w + b).astype(np.float32)
    np.testing.assert_allclose(np.asarray(y), expected, rtol=2e-6, atol=1e-6)
    assert not eager.saved


def test_a_held_intermediate_is_computed_and_kept(monkeypatch, fusing):
    x_np = np.linspace(-1, 1, 4096, dtype=np.float32)
    x = mx.array(x_np)
    a = mx.exp(x) * 2  # held by the test: must be computed, and stay as it is
    y = mx.sin(a + 1) * 3
    mx.eval(y)
    np.testing.assert_array_equal(np.asarray(a), np.exp(x_np) * np.float32(2))
    np.testing.assert_array_equal(np.asarray(y), np.sin(np.asarray(a) + np.float32(1))
                                  * np.float32(3))
    assert fusing == [2]  # exp * 2, and sin(a + 1) * 3 after it


def test_an_intermediate_read_by_two_chains_is_computed_once(monkeypatch, fusing):
    x_np = np.linspace(-1, 1, 4096, dtype=np.float32)
    x = mx.array(x_np)
    shared = mx.exp(x) + 1
    y1, y2 = mx.sin(shared) * 2, mx.cos(shared) * 3
    del shared
    mx.eval(y1, y2)
    s = np.exp(x_np) + np.float32(1)
    np.testing.assert_array_equal(np.asarray(y1), np.sin(s) * np.float32(2))
    np.testing.assert_array_equal(np.asarray(y2), np.cos(s) * np.float32(3))
    assert fusing == [3]


def test_an_unevaluated_consumer_outside_the_batch_keeps_its_input(monkeypatch, fusing):
    x = mx.array(np.linspace(-1, 1, 4096, dtype=np.float32))
    a = mx.exp(x)
    y = mx.sin(a) * 2
    later = a + 5  # not evaluated now: it still needs `a`
    del a
    mx.eval(y)
    np.testing.assert_array_equal(np.asarray(later), np.asarray(mx.exp(x)) + np.float32(5))


def test_results_and_siblings_stay_evaluated(monkeypatch, fusing):
    x = mx.array(np.linspace(0.5, 2, 4096, dtype=np.float32))
    y = mx.log(mx.abs(x) + 1) * 2
    mx.eval(y)
    assert y.is_evaluated and y.primitive is None  # the root ran and detached


def test_kept_nodes_under_a_transform_are_not_fused(monkeypatch, fusing):
    x_np = np.linspace(-1, 1, 4096, dtype=np.float32)

    def f(x):
        y = mx.sin(mx.exp(x) * 0.5 + 1)
        mx.eval(y)  # evaluated while tracing: every node is kept
        return mx.sum(y)

    fused_grad = mx.grad(f)(mx.array(x_np))
    monkeypatch.setattr(eager, "FUSE_MIN_ELEMENTS", OFF)
    unfused_grad = mx.grad(f)(mx.array(x_np))
    np.testing.assert_array_equal(np.asarray(fused_grad), np.asarray(unfused_grad))
    e = np.exp(x_np.astype(np.float64))
    np.testing.assert_allclose(np.asarray(fused_grad), np.cos(e * 0.5 + 1) * e * 0.5,
                               rtol=1e-5, atol=1e-6)


def test_chains_across_streams_are_correct(monkeypatch, fusing):
    x_np = np.linspace(-1, 1, 4096, dtype=np.float32)
    other = mx.new_stream(mx.cpu)

    def build():
        x = mx.array(x_np)
        a = mx.exp(x, stream=other) * 2  # a batch spanning streams runs node by node
        on_other = mx.sin(mx.array(x_np), stream=other) + 1
        return [mx.tanh(a) - 1, mx.multiply(on_other, 3, stream=other)]

    fused, unfused = _both(monkeypatch, build)
    _same(fused, unfused)
    with mx.stream(other):  # one stream, not the default one: fused
        _same(*_both(monkeypatch, lambda: [mx.tanh(mx.exp(mx.array(x_np)) * 2) - 1]))


def _memory_of(n):
    """(peak, active after, active once the result is dropped) of `exp(x) * w + 1` and a
    consumer that may take its buffer, beyond what was held before."""
    x, w = mx.array(np.ones(n, np.float32)), mx.array(np.full(n, 2, np.float32))
    mx.eval(x, w)
    y = mx.exp(x) * w + 1
    z = mx.sin(mx.sum(y, keepdims=True) * 0) + y  # the fused result's buffer may be donated
    del y
    mx.reset_peak_memory()
    before = mx.get_active_memory()
    mx.eval(z)
    peak, active = mx.get_peak_memory() - before, mx.get_active_memory() - before
    value = np.asarray(z).copy()
    del z
    return peak, active, mx.get_active_memory() - before, value


def test_memory_counts_and_donation_after_a_chain(monkeypatch, fusing):
    n = 1 << 16  # large enough to donate
    fused = _memory_of(n)
    assert fusing == [1]
    monkeypatch.setattr(eager, "FUSE_MIN_ELEMENTS", OFF)
    unfused = _memory_of(n)
    assert fused[:3] == unfused[:3]
    # one large buffer at any time: z wrote into the chain's (the rest: a few scalars)
    assert fused[0] < 4 * n + 64 and abs(fused[1] - 4 * n) < 64 and abs(fused[2]) < 64
    np.testing.assert_array_equal(fused[3], unfused[3])


class Fragile(Unary):
    """exp, failing on negative input (a kernel error at evaluation)."""

    __slots__ = ()


def _fragile(p, x, out=None):
    if (x < 0).any():
        raise FloatingPointError("negative input")
    return np.exp(x, out=out) if out is not None else np.exp(x)


@pytest.fixture
def fragile():
    table.add(Fragile, _fragile, out=True)
    yield lambda a: record1(Fragile(), (a,), to_stream(None))
    del table.kernels[Fragile]
    table.writes_into.discard(Fragile)


def _error_of(build):
    with pytest.raises(mx.EvaluationError) as info:
        mx.eval(build())
    return str(info.value)


def test_a_failing_fused_kernel_reports_the_node_as_without_fusion(monkeypatch, fusing,
                                                                    fragile):
    x_np = np.linspace(-1, 1, 4096, dtype=np.float32)
    y = mx.sin(fragile(mx.array(x_np) * 2)) + 1
    messages = {}
    for threshold in (SMALL, OFF):
        monkeypatch.setattr(eager, "FUSE_MIN_ELEMENTS", threshold)
        messages[threshold] = _error_of(lambda: mx.sin(fragile(mx.array(x_np) * 2)) + 1)
    assert messages[SMALL] == messages[OFF]
    assert "Fragile failed on inputs [(4096,) float32]: FloatingPointError" in messages[SMALL]
    # the failed graph is as recorded, released: it fails the same way again
    monkeypatch.setattr(eager, "FUSE_MIN_ELEMENTS", SMALL)
    assert _error_of(lambda: y) == messages[OFF]
    assert type(y.primitive).__name__ == "Add"


def test_a_batch_failing_before_a_chain_ran_leaves_it_as_recorded(monkeypatch, fusing,
                                                                   fragile):
    x_np = np.linspace(-1, 1, 4096, dtype=np.float32)
    x = mx.array(x_np)
    bad = fragile(x) * 2  # runs first, fails
    good = mx.tanh(mx.exp(x) * 0.5) + 1  # a chain the plan rewrote, never run
    with pytest.raises(mx.EvaluationError, match="Fragile failed"):
        mx.eval(bad, good)
    assert fusing and fusing[0] >= 1
    assert type(good.primitive).__name__ == "Add"
    assert [type(a.primitive).__name__ for a in good.inputs] == ["Tanh", "Full"] or \
        type(good.inputs[0].primitive).__name__ == "Tanh"
    mx.eval(good)
    np.testing.assert_array_equal(
        np.asarray(good), np.tanh(np.exp(x_np) * np.float32(0.5)) + np.float32(1))


def test_small_arrays_keep_the_per_node_path(monkeypatch):
    calls = []
    plan = eager.plan
    monkeypatch.setattr(eager, "plan", lambda rest: calls.append(1) or plan(rest))
    x = mx.array(np.ones(16, np.float32))
    mx.eval(mx.exp(x) * 2 + 1)  # the default threshold: no plan
    assert calls == []


def test_comparisons_where_and_integer_chains_fuse_bit_identically(monkeypatch, fusing):
    rng = np.random.default_rng(3)
    xa, xb = (rng.standard_normal((50, 40)).astype(np.float32) for _ in range(2))
    xi = rng.integers(-1000, 1000, (50, 40)).astype(np.int32)
    xj = rng.integers(1, 50, (50, 40)).astype(np.int32)

    def build():
        a, b, i, j = mx.array(xa), mx.array(xb), mx.array(xi), mx.array(xj)
        picked = mx.where(a > b, a, b) * 2 - mx.clip(a, -0.5, 0.5)
        ints = (i // j) % 7 + (i > 0)
        return [picked, ints, mx.logical_not(a < 0) | (b > 1)]

    fused, unfused = _both(monkeypatch, build)
    _same(fused, unfused)
    assert sum(fusing) >= 3


needs_cc = pytest.mark.skipif(__import__("nuvec.backends.native", fromlist=["x"]).compiler()
                              is None, reason="no C compiler: no generated chains")


@needs_cc
def test_chains_computed_as_generated_c_fuse_from_their_own_threshold(plans):
    """From `COVERED_CHAIN_ELEMENTS` a chain the CPU computes as generated C is fused (one pass
    instead of a temporary per node); a chain of NumPy calls waits for `FUSE_MIN_ELEMENTS`."""
    n = eager.COVERED_CHAIN_ELEMENTS
    rng = np.random.default_rng(3)
    x, w = (mx.array(rng.standard_normal(n).astype(np.float32)) for _ in range(2))
    mx.eval(x, w)
    covered = (x * w + 1.5) * x  # arithmetic: covered
    mx.eval(covered)
    assert plans == [1]
    want = (np.asarray(x) * np.asarray(w) + np.float32(1.5)) * np.asarray(x)
    np.testing.assert_array_equal(np.asarray(covered), want)
    numpy_calls = mx.sin(x * w) + 1.5  # `sin` is NumPy's: not covered
    mx.eval(numpy_calls)
    assert plans[1:] == [0]
    half = mx.array(np.ones(n // 2, np.float32))
    mx.eval(half)
    mx.eval((half + 1) * half)  # below the threshold: the per-node path, no plan
    assert len(plans) == 2


@needs_cc
def test_a_generated_chains_plan_ends_where_the_chain_can_reach(plans, monkeypatch):
    """A plan from a node of the generated chains' sizes covers the nodes reaching it (and
    what lies between), looking `REACH_GAP` nodes past the last one: two chains evaluated
    together are planned one after the other, and a chain interrupted by more than the gap
    is not joined across it."""
    n = eager.COVERED_CHAIN_ELEMENTS
    rng = np.random.default_rng(4)
    x, w, y = (mx.array(rng.standard_normal(n).astype(np.float32)) for _ in range(3))
    mx.eval(x, w, y)
    first, second = (x * w + 1.5) * x, (y * 2.0 - w) * y
    mx.eval(first, second)
    assert plans == [1, 1]
    xs, ws, ys = np.asarray(x), np.asarray(w), np.asarray(y)
    np.testing.assert_array_equal(np.asarray(first), (xs * ws + np.float32(1.5)) * xs)
    np.testing.assert_array_equal(np.asarray(second), (ys * np.float32(2.0) - ws) * ys)

    def interrupted():
        head = x * w  # its reader comes after the five small nodes of its other input
        small = mx.ones(())
        for _ in range(5):
            small = small + 1.0
        return [head + small]

    monkeypatch.setattr(eager, "REACH_GAP", 4)
    plans.clear()
    mx.eval(interrupted())
    assert sum(plans) == 0
    monkeypatch.setattr(eager, "REACH_GAP", 8)
    plans.clear()
    out = interrupted()
    mx.eval(out)
    assert sum(plans) == 1
    np.testing.assert_array_equal(np.asarray(out[0]), xs * ws + np.float32(6.0))


def test_a_repeated_plan_reuses_its_groups_and_still_checks_its_outputs(monkeypatch, fusing):
    """A part planned again with equal steps (a training loop's update at every step) takes
    the groups found the first time; one whose outputs differ (an intermediate now held) is
    planned afresh; a step that cannot be a member is kept by its class alone; a primitive
    whose parameters do not hash is planned every time."""
    groups, elementwise = eager._planner
    calls = []

    def counting(steps, outs):
        calls.append(len(steps))
        return groups(steps, outs)

    monkeypatch.setattr(eager, "_found", {})
    monkeypatch.setattr(eager, "_planner", [counting, elementwise])
    rng = np.random.default_rng(5)

    def chain(hold):
        x_np = rng.standard_normal(4096).astype(np.float32)
        x = mx.array(x_np)
        a = mx.exp(x) * 2
        y = mx.sin(a + 1) * 3
        held = [a] if hold else []
        del a
        mx.eval(y)
        a_np = np.exp(x_np) * np.float32(2)
        np.testing.assert_array_equal(np.asarray(y), np.sin(a_np + np.float32(1))
                                      * np.float32(3))
        for h in held:
            np.testing.assert_array_equal(np.asarray(h), a_np)

    chain(False)
    chain(False)
    assert fusing == [1, 1] and len(calls) == 1  # one chain, its groups found once
    chain(True)
    chain(True)
    assert fusing[2:] == [2, 2] and len(calls) == 2  # held: two chains, found once more

    square = mx.array(rng.standard_normal((64, 64)).astype(np.float32))
    mx.eval(mx.exp(square).T * 2 + 1)  # a transpose between the two chains: not a member
    kinds = [step[0] for key in eager._found for step in key[0]]
    assert Transpose in kinds and not any(isinstance(k, Transpose) for k in kinds)

    def unhashable(self):
        raise TypeError("unhashable parameters")

    monkeypatch.setattr(type(mx.sin(mx.ones(2)).primitive), "__hash__", unhashable)
    chain(False)
    chain(False)
    assert fusing[5:] == [1, 1] and len(calls) == 5
