"""The evaluator: laziness, detaching, several streams and threads, deep graphs, errors."""

import gc
import threading

import numpy as np
import pytest

import nuvec as mx
from nuvec.backends.numpy.registry import kernels
from nuvec.graph.array import record1
from nuvec.graph.device import to_stream
from nuvec.ops.families import Unary


def test_operations_are_lazy_until_evaluated():
    x = mx.array([1.0, 2.0])
    y = mx.exp(x) + 1
    assert not y.is_evaluated and y.primitive is not None
    mx.eval(y)
    assert y.is_evaluated
    np.testing.assert_allclose(np.asarray(y), np.exp([1.0, 2.0]) + 1, rtol=1e-6)


def test_evaluated_nodes_detach_and_free_intermediates():
    x = mx.array(np.ones((256, 256), np.float32))
    gc.collect()  # arrays an earlier test's exception cycles held are not freed meanwhile
    before = mx.get_active_memory()
    y = mx.exp(mx.exp(mx.exp(x)))
    mx.eval(y)
    assert y.primitive is None and y.inputs == ()
    # Only y's buffer remains: the two intermediate buffers were freed during evaluation.
    assert mx.get_active_memory() - before == x.nbytes


def test_nodes_made_while_another_thread_traces_still_detach():
    inside, release, kept = threading.Event(), threading.Event(), []

    def traced(x):
        inside.set()
        release.wait(10)
        y = mx.exp(x)
        mx.eval(y)
        kept.append(y.primitive is not None)  # a traced node keeps its graph after evaluation
        return mx.sum(y)

    tracer = threading.Thread(target=lambda: mx.grad(traced)(mx.array([1.0, 2.0])))
    tracer.start()
    try:
        assert inside.wait(10)
        y = mx.exp(mx.array([1.0]))
        mx.eval(y)
        assert y.primitive is None  # this thread is not tracing
    finally:
        release.set()
        tracer.join()
    assert kept == [True]


def test_memory_figures_follow_the_buffers():
    gc.collect()
    gc.disable()  # only this test's arrays may come and go while it reads the counters
    try:
        base = mx.get_active_memory()
        x = mx.array(np.ones(1000, np.float32))
        assert mx.get_active_memory() - base == 4000  # a leaf holds its buffer
        mx.reset_peak_memory()
        assert mx.get_peak_memory() == 0  # MLX's reset: zero until the next buffer
        y = mx.exp(mx.exp(x))
        mx.eval(y)
        assert mx.get_active_memory() - base == 2 * 4000
        del x, y
        assert mx.get_active_memory() == base
        assert mx.get_peak_memory() >= base + 2 * 4000  # the peak stays until reset
        mx.reset_peak_memory()
        assert mx.get_peak_memory() == 0
        z = mx.array(np.ones(10, np.float32))
        assert mx.get_peak_memory() == base + 40  # the next buffer sets it again
        del z
    finally:
        gc.enable()


def test_nodes_passing_an_input_through_count_no_new_memory():
    x = mx.array(np.ones((256, 256), np.float32))
    mx.eval(x)
    before = mx.get_active_memory()
    kept = mx.stop_gradient(x)
    (ordered,) = mx.depends([x], [kept])
    mx.eval(kept, ordered)
    assert mx.get_active_memory() == before


def test_views_of_inputs_count_no_new_memory():
    x = mx.array(np.ones((64, 32), np.float32))
    mx.eval(x)
    gc.collect()
    before = mx.get_active_memory()
    t = x.T  # a view of the leaf's buffer
    r = mx.reshape(t, (32, 8, 8))  # a view of a view: its base is the leaf's buffer too
    b = mx.broadcast_to(mx.reshape(x, (1, 64, 32)), (3, 64, 32))
    mx.eval(t, r, b)
    assert mx.get_active_memory() == before
    c = r * r  # a new buffer counts its bytes
    mx.eval(c)
    assert mx.get_active_memory() == before + c.nbytes
    np.testing.assert_array_equal(np.asarray(r), np.ones((32, 8, 8), np.float32))


class Strided(Unary):
    """A test primitive: x * 2, computed as every other element of a new buffer twice x's
    size (a view, whose base is no input's buffer)."""

    __slots__ = ()


def test_a_view_of_a_buffer_its_kernel_made_counts_that_buffer():
    kernels[Strided] = lambda p, x: np.repeat(x * 2, 2)[::2]
    try:
        x = mx.array(np.arange(12, dtype=np.float32))
        mx.eval(x)
        gc.collect()
        before = mx.get_active_memory()
        y = record1(Strided(), (x,), to_stream(None))
        mx.eval(y)
        assert mx.get_active_memory() == before + 2 * x.nbytes
        np.testing.assert_array_equal(np.asarray(y), np.arange(12, dtype=np.float32) * 2)
    finally:
        del kernels[Strided]


def test_eval_accepts_trees_and_ignores_none():
    a, b = mx.array(1.0) + 1, mx.array(2.0) * 3
    mx.eval({"a": [a, None], "b": (b,)})
    assert a.is_evaluated and b.is_evaluated


def test_eval_ignores_leaves_that_are_not_arrays():
    a = mx.array(1.0) + 1
    mx.eval([a, "x", 3, None])
    assert a.is_evaluated


def test_graph_across_streams_evaluates_correctly():
    s1, s2 = mx.new_stream(mx.cpu), mx.new_stream(mx.cpu)
    x = mx.array(np.arange(8, dtype=np.float32))
    with mx.stream(s1):
        a = mx.exp(x * 0.1)
    with mx.stream(s2):
        b = a * 2 + x
    c = mx.add(b, a, stream=s1)
    assert (a.stream, b.stream, c.stream) == (s1, s2, s1)
    expected = np.exp(np.arange(8) * 0.1)
    np.testing.assert_allclose(np.asarray(c), expected * 3 + np.arange(8), rtol=1e-5)


def _random_graph(rng, streams, leaves):
    """A random DAG of elementwise ops over `leaves`, each node on a random stream."""
    values = list(leaves)
    stream_rng = np.random.default_rng(rng.integers(1 << 30))  # same graph whatever the streams
    for _ in range(40):
        s = streams[stream_rng.integers(len(streams))]
        a = values[rng.integers(len(values))]
        b = values[rng.integers(len(values))]
        op = rng.integers(4)
        if op == 0:
            out = mx.add(a, b, stream=s)
        elif op == 1:
            out = mx.multiply(a, b, stream=s) * 0.5
        elif op == 2:
            out = mx.subtract(a, b, stream=s)
        else:
            out = mx.exp(mx.multiply(a, 0.01, stream=s), stream=s)
        values.append(out)
    return values[-5:]


def test_stress_many_graphs_over_streams_and_threads_match_single_stream():
    streams = [mx.new_stream(mx.cpu) for _ in range(4)]
    failures = []

    def worker(seed):
        try:
            rng = np.random.default_rng(seed)
            data = [rng.standard_normal((32,)).astype(np.float32) for _ in range(3)]
            for _ in range(10):
                graph_seed = int(rng.integers(1 << 30))
                multi = _random_graph(np.random.default_rng(graph_seed), streams,
                                      [mx.array(d) for d in data])
                single = _random_graph(np.random.default_rng(graph_seed), [mx.cpu],
                                       [mx.array(d) for d in data])
                mx.eval(multi)
                for m, s in zip(multi, single):
                    np.testing.assert_array_equal(np.asarray(m), np.asarray(s))
        except BaseException as exc:  # reported below, so a thread's failure fails the test
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures


def test_threads_evaluating_one_shared_graph():
    x = mx.array(np.linspace(0, 1, 64, dtype=np.float32))
    shared = x
    for _ in range(200):
        shared = mx.exp(shared * 0.5) - 1
    results = [None] * 4

    def worker(i):
        results[i] = np.asarray(shared + i)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(1, 4):
        np.testing.assert_allclose(results[i], results[0] + i, rtol=1e-6)


def test_async_eval_then_item():
    x = mx.array(3.0)
    y = x * x + 1
    mx.async_eval(y)
    assert y.item() == 10.0
    mx.synchronize()


def test_million_node_chain_builds_evaluates_and_drops():
    x, one = mx.array(0.0), mx.array(1.0)
    y = x
    for _ in range(1_000_000):
        y = mx.add(y, one)
    assert y.item() == 1_000_000.0
    # An unevaluated deep chain must also be dropped without recursion errors.
    z = x
    for _ in range(1_000_000):
        z = mx.multiply(z, one)
    del z
    gc.collect()


class FailingOp(Unary):
    """A test primitive whose CPU kernel raises, like a failure inside a backend."""

    __slots__ = ()


def _failing_kernel(primitive, x):
    raise FloatingPointError("simulated backend failure")


@pytest.fixture
def failing_op():
    kernels[FailingOp] = _failing_kernel
    yield lambda x: record1(FailingOp(), (x,), to_stream(None))
    del kernels[FailingOp]


def test_failure_during_eval_raises_at_eval_and_engine_stays_usable(failing_op):
    x = mx.array([1.0, 2.0])
    bad = failing_op(mx.exp(x)) + 1
    with pytest.raises(mx.EvaluationError, match="FailingOp.*simulated backend failure"):
        mx.eval(bad)
    # the same failure again, not a hang or a stale state
    with pytest.raises(mx.EvaluationError):
        bad.item() if bad.size == 1 else np.asarray(bad)
    # unrelated work (and the shared input) still evaluates
    good = mx.exp(x) * 2
    np.testing.assert_allclose(np.asarray(good), 2 * np.exp([1.0, 2.0]), rtol=1e-6)


class InterruptedOp(Unary):
    """A test primitive whose CPU kernel raises KeyboardInterrupt on its first run (a Ctrl-C
    arriving while a kernel computes), then doubles its input."""

    __slots__ = ()


@pytest.fixture
def interrupted_op():
    runs = []

    def kernel(primitive, x):
        runs.append(threading.current_thread().name)
        if len(runs) == 1:
            raise KeyboardInterrupt
        return x * 2

    kernels[InterruptedOp] = kernel
    yield lambda x: record1(InterruptedOp(), (x,), to_stream(None)), runs
    del kernels[InterruptedOp]


def test_interrupted_eval_propagates_and_the_arrays_evaluate_afterwards(interrupted_op):
    op, runs = interrupted_op
    x = op(mx.exp(mx.array([0.0, 1.0])))
    y = x + 1
    with pytest.raises(KeyboardInterrupt):
        mx.eval(y)
    assert not y.is_evaluated
    np.testing.assert_allclose(np.asarray(y), 2 * np.exp([0.0, 1.0]) + 1, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(x), 2 * np.exp([0.0, 1.0]), rtol=1e-6)
    assert len(runs) == 2


def test_interrupted_async_eval_leaves_the_arrays_usable(interrupted_op):
    op, runs = interrupted_op
    x = op(mx.array([1.0, 2.0]) + 0)
    mx.async_eval(x)  # interrupted on the async worker thread
    y = x * 3
    assert y.tolist() == [6.0, 12.0]  # the interrupted node is computed again
    assert len(runs) == 2


def test_interrupted_eval_on_another_stream(interrupted_op):
    op, runs = interrupted_op
    s = mx.new_stream(mx.cpu)
    with mx.stream(s):
        x = op(mx.array([1.0]) + 0)
    out = x + mx.array([1.0])
    with pytest.raises(KeyboardInterrupt):
        mx.eval(out)
    assert out.tolist() == [3.0]


def test_failure_on_another_stream_propagates(failing_op):
    s = mx.new_stream(mx.cpu)
    with mx.stream(s):
        bad = failing_op(mx.array([1.0]))
    out = bad * 2
    with pytest.raises(mx.EvaluationError):
        mx.eval(out)


def test_async_failure_surfaces_at_next_eval(failing_op):
    bad = failing_op(mx.array([1.0]))
    mx.async_eval(bad)
    mx.synchronize()
    with pytest.raises(mx.EvaluationError):
        mx.eval(bad)


def test_placeholder_cannot_be_evaluated_inside_vmap():
    def f(x):
        return mx.exp(x).item()

    with pytest.raises(ValueError, match="^vmap: attempting to evaluate an array inside a "
                                         "vmapped function"):
        mx.vmap(f)(mx.array([1.0, 2.0]))
