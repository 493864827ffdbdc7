"""Buffer donation: an elementwise kernel writes into an input buffer that nothing else can see.

Donation must never change a value anyone can still read: a handle, a view, `np.asarray` of an
array, a kept (traced) graph, an input used twice. Inputs here are large enough to donate.
"""

import threading

import numpy as np
import pytest

import nuvec as mx
from nuvec.backends.vector_math import exp as cpu_exp  # NumPy's, or MKL's where installed
from nuvec.backends.numpy.registry import kernels, writes_into
from nuvec.graph.array import record1
from nuvec.graph.device import to_stream
from nuvec.ops.families import Unary

N = 1 << 16  # float32 elements: 256 KiB, the smallest size that may be donated


@pytest.fixture
def x_np():
    return np.linspace(-1.0, 1.0, N, dtype=np.float32)


def _peak_of(fn):
    """Bytes the evaluation in `fn` held at its peak, beyond what was held before."""
    mx.reset_peak_memory()
    before = mx.get_active_memory()
    fn()
    return mx.get_peak_memory() - before


def test_chain_reuses_one_buffer(x_np):
    x = mx.array(x_np)
    y = mx.sin(mx.exp(mx.negative(x)) * 0.5 + 0.25)
    peak = _peak_of(lambda: mx.eval(y))
    assert peak == x.nbytes  # every step wrote into the buffer of the step before
    np.testing.assert_allclose(np.asarray(y), np.sin(np.exp(-x_np) * 0.5 + 0.25), rtol=1e-6)


def test_without_reuse_a_chain_holds_two_buffers(x_np):
    x = mx.array(x_np)
    a = mx.exp(x)
    y = mx.exp(a)
    assert _peak_of(lambda: mx.eval(y)) == 2 * x.nbytes  # `a` is held: y needs its own buffer
    np.testing.assert_allclose(np.asarray(a), np.exp(x_np), rtol=1e-6)


def test_leaf_held_by_the_user_is_never_overwritten(x_np):
    x = mx.array(x_np)
    mx.eval(mx.exp(x))
    np.testing.assert_array_equal(np.asarray(x), x_np)


def test_numpy_data_of_a_leaf_is_never_overwritten(x_np):
    data = x_np.copy()
    y = mx.exp(mx.array(data))
    mx.eval(y)
    np.testing.assert_array_equal(data, x_np)
    np.testing.assert_allclose(np.asarray(y), np.exp(x_np), rtol=1e-6)


@pytest.mark.parametrize(
    "keep",
    [np.asarray, lambda a: np.asarray(a)[::3], lambda a: memoryview(np.asarray(a))],
    ids=["asarray", "strided-view", "memoryview"],
)
def test_evaluated_input_seen_through_numpy_is_never_overwritten(x_np, keep):
    a = mx.exp(mx.array(x_np))
    y = mx.sin(a)
    mx.eval(a)
    seen = keep(a)
    before = np.array(seen, copy=True)
    del a  # only `y`'s node and `seen` refer to the buffer now
    mx.eval(y)
    np.testing.assert_array_equal(np.asarray(seen), before)
    np.testing.assert_allclose(np.asarray(y), np.sin(np.exp(x_np)), rtol=1e-6)


def test_rebound_handle_keeps_both_values(x_np):
    a = mx.exp(mx.array(x_np))
    y = mx.sin(a)
    a += 1  # `a` now names exp(x) + 1; `y` still reads exp(x)
    mx.eval(y)
    np.testing.assert_allclose(np.asarray(y), np.sin(np.exp(x_np)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(a), np.exp(x_np) + 1, rtol=1e-6)


def test_input_used_twice_or_by_two_consumers(x_np):
    a = mx.exp(mx.array(x_np))
    square = a * a
    total = mx.sin(a) + mx.cos(a)
    del a
    mx.eval(square, total)
    e = np.exp(x_np.astype(np.float64))  # (float32 `exp` is NumPy's or MKL's: within an ulp)
    np.testing.assert_allclose(np.asarray(square), e * e, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(total), np.sin(e) + np.cos(e), rtol=0, atol=1e-6)


def test_evaluated_root_is_never_overwritten(x_np):
    a = mx.exp(mx.array(x_np))
    y = mx.sin(a)
    mx.eval(a, y)  # `a` is a root of the same evaluation, and held
    np.testing.assert_allclose(np.asarray(a), np.exp(x_np), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(y), np.sin(np.exp(x_np)), rtol=1e-6)


def test_gradient_through_large_chain(x_np):
    def f(x):
        return mx.sum(mx.sin(mx.exp(x) * 2.0))

    value, g = mx.value_and_grad(f)(mx.array(x_np))
    e = np.exp(x_np.astype(np.float64))
    np.testing.assert_allclose(np.asarray(g), np.cos(2 * e) * 2 * e, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(value.item(), np.sum(np.sin(2 * e)), rtol=1e-4)


def test_gradient_evaluating_inside_the_traced_function(x_np):
    def f(x):
        y = mx.sin(mx.exp(x))  # traced nodes keep their inputs: the rule of sin reads exp(x)
        mx.eval(y)
        return mx.sum(y)

    g = mx.grad(f)(mx.array(x_np))
    e = np.exp(x_np.astype(np.float64))
    np.testing.assert_allclose(np.asarray(g), np.cos(e) * e, rtol=1e-5, atol=1e-5)


def test_views_of_one_buffer_are_not_donated(x_np):
    r = mx.exp(mx.array(x_np))
    a, b = mx.reshape(r, (256, 256)), mx.reshape(r, (256, 256))
    y, z = mx.sin(a), b * 1.0
    del r, a, b
    mx.eval(y, z)  # y runs first; its input is a view of the buffer z still reads
    e = np.exp(x_np).reshape(256, 256)
    np.testing.assert_allclose(np.asarray(y), np.sin(e), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(z), e, rtol=1e-6)


def test_other_dtypes_shapes_and_broadcasts_are_not_donated(x_np):
    a = mx.exp(mx.array(x_np))
    less = a < 2.0  # bool output: no float32 buffer fits
    grid = mx.reshape(mx.exp(mx.array(x_np)), (256, 256)) + mx.arange(256, dtype=mx.float32)
    mx.eval(less, grid)
    np.testing.assert_array_equal(np.asarray(less), np.exp(x_np) < 2.0)
    expected = np.exp(x_np).reshape(256, 256) + np.arange(256, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(grid), expected, rtol=1e-6)


def _random_step(rng, values):
    """A random elementwise op on earlier (array, NumPy reference) pairs, both computed."""
    (a, ra), (b, rb) = values[rng.integers(len(values))], values[rng.integers(len(values))]
    op = rng.integers(5)
    if op == 0:
        return a + b, ra + rb
    if op == 1:
        return a * b * 0.5, ra * rb * np.float32(0.5)
    if op == 2:
        return a - b, ra - rb
    if op == 3:
        return mx.exp(a * 0.01), cpu_exp(ra * np.float32(0.01))
    return mx.sin(a), np.sin(ra)


@pytest.mark.parametrize("seed", range(6))
def test_random_graphs_with_partial_evaluations_match_numpy(seed):
    rng = np.random.default_rng(seed)
    data = [rng.standard_normal(N).astype(np.float32) for _ in range(3)]
    values = [(mx.array(d), d) for d in data]
    for _ in range(25):
        values.append(_random_step(rng, values))
    seen = []  # NumPy views of evaluated arrays whose handles are then dropped
    for i in rng.choice(len(values), 6, replace=False):
        mx.eval(values[i][0])
        if rng.random() < 0.5:
            seen.append((np.asarray(values[i][0]), values[i][1]))
    held = [values[i] for i in range(len(values)) if rng.random() < 0.3 or i >= len(values) - 3]
    del values  # every other intermediate is now referenced by the graph alone
    mx.eval([h for h, _ in held])
    for out, expected in held + seen:
        np.testing.assert_array_equal(np.asarray(out), expected)


class BrokenExp(Unary):
    """A test primitive whose kernel writes into its donated buffer and then fails."""

    __slots__ = ()


def _broken_kernel(primitive, x, out=None):
    if out is not None:
        np.exp(x, out=out)
    raise FloatingPointError("simulated failure after writing")


@pytest.fixture
def broken_exp():
    kernels[BrokenExp] = _broken_kernel
    writes_into.add(BrokenExp)
    yield lambda x: record1(BrokenExp(), (x,), to_stream(None))
    writes_into.discard(BrokenExp)
    del kernels[BrokenExp]


def test_failure_after_writing_never_exposes_the_overwritten_input(x_np, broken_exp):
    bad = broken_exp(mx.sin(mx.array(x_np)))
    with pytest.raises(mx.EvaluationError, match="simulated failure after writing"):
        mx.eval(bad)
    # the failure again, never a result computed from the overwritten buffer
    with pytest.raises(mx.EvaluationError, match="simulated failure after writing"):
        mx.eval(bad)


class Gated(Unary):
    """A test primitive whose kernel waits for a signal (an evaluation in progress)."""

    __slots__ = ()


def test_inputs_of_a_node_being_evaluated_appear_once_it_ran(x_np):
    go = threading.Event()
    kernels[Gated] = lambda p, x: (go.wait(10), x * 2)[1]
    try:
        y = record1(Gated(), (mx.exp(mx.array(x_np)),), to_stream(None))
        mx.async_eval(y)  # claims y at once; its kernel waits for `go`
        seen = []
        reader = threading.Thread(target=lambda: seen.append(y.inputs))
        reader.start()
        reader.join(0.2)
        assert reader.is_alive() and not seen  # no handle on an input while y runs
        go.set()
        reader.join(10)
        assert seen == [()]  # y ran and detached: it has no inputs any more
        np.testing.assert_allclose(np.asarray(y), 2 * np.exp(x_np), rtol=1e-6)
    finally:
        go.set()
        del kernels[Gated]
