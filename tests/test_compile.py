"""`compile`, `disable_compile`, `enable_compile`: compiled functions return what the function
returns, compose with the transforms, and update captured state as MLX's do."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from functools import partial

import numpy as np
import pytest

import nuvec as mx
from nuvec import nn, optimizers
from nuvec.testing import assert_allclose


def test_compile_returns_the_function_outputs():
    def f(x, y):
        """Doc of f."""
        return mx.exp(x) * y, {"s": mx.sum(x)}

    g = mx.compile(f)
    x = np.array([0.0, 1.0, 2.0], dtype=np.float32)
    out, tree = g(mx.array(x), y=mx.array(2.0))
    assert_allclose(out, np.exp(x) * 2, dtype=mx.float32)
    assert_allclose(tree["s"], x.sum(), dtype=mx.float32)
    assert g.__name__ == "f" and g.__doc__ == "Doc of f."


def test_compile_as_decorator_with_shapeless():
    @partial(mx.compile, shapeless=True)
    def gelu(x):
        return x * (1 + mx.erf(x / np.sqrt(2))) / 2

    for n in (1, 5):
        x = np.linspace(-2, 2, n).astype(np.float32)
        want = x * (1 + np.vectorize(math.erf)(x / np.sqrt(2))) / 2
        assert_allclose(gelu(mx.array(x)), want, dtype=mx.float32)


def test_compiled_function_composes_with_grad_and_vmap():
    f = mx.compile(lambda x: mx.sum(mx.sin(x) ** 2))
    x = np.array([0.1, 0.7, -1.3], dtype=np.float32)
    assert_allclose(mx.grad(f)(mx.array(x)), 2 * np.sin(x) * np.cos(x), dtype=mx.float32)
    g = mx.vmap(mx.compile(lambda r: r * 2))
    assert_allclose(g(mx.array(x.reshape(3, 1))), x.reshape(3, 1) * 2, dtype=mx.float32)


def test_compile_with_captured_state_updates_it():
    state = [mx.array(0.0)]

    @partial(mx.compile, inputs=state, outputs=state)
    def step(x):
        state[0] = state[0] + x
        return state[0] * 2

    assert step(mx.array(1.0)).item() == 2.0
    assert step(mx.array(2.0)).item() == 6.0
    assert state[0].item() == 3.0


def test_captured_state_gets_new_arrays_and_kept_ones_keep_their_values():
    # as MLX: each call puts new arrays into the state's containers, so arrays taken out of
    # the state earlier (a history, an average of weights) keep the values they had
    state = {"total": mx.array(0.0), "seen": [mx.array(0), (mx.array(1.0), "tag")]}

    @partial(mx.compile, inputs=state, outputs=state)
    def step(x):
        state["total"] = state["total"] + x
        count, (scale, tag) = state["seen"][0], state["seen"][1]
        state["seen"] = [count + 1, (scale * 2, tag)]

    history = []
    for _ in range(4):
        step(mx.array(1.0))
        history.append((state["total"], state["seen"][0], state["seen"][1][0]))
    assert [[a.item() for a in h] for h in history] == [
        [1.0, 1, 2.0], [2.0, 2, 4.0], [3.0, 3, 8.0], [4.0, 4, 16.0]]
    assert state["seen"][1][1] == "tag"


def test_compiled_training_step_leaves_earlier_parameters_alone():
    model = nn.Linear(3, 2)
    optimizer = optimizers.SGD(learning_rate=0.1)
    state = [model.state, optimizer.state]
    x, y = mx.ones((4, 3)), mx.zeros((4, 2))
    loss_and_grad = nn.value_and_grad(model, lambda m: nn.losses.mse_loss(m(x), y))

    @partial(mx.compile, inputs=state, outputs=state)
    def step():
        loss, grads = loss_and_grad(model)
        optimizer.update(model, grads)
        return loss

    for _ in range(4):
        before = np.array(model.weight)
        kept = model.weight
        step()
        mx.eval(state)
        assert np.array_equal(np.array(kept), before)
        assert not np.array_equal(np.array(model.weight), before)


def test_state_stored_without_outputs_is_an_error_when_evaluated():
    state = [mx.array(0.0)]

    @mx.compile
    def step(x):
        state[0] = x * 2  # not named in `outputs`: a traced placeholder leaks out
        return x

    step(mx.ones(2))
    with pytest.raises(ValueError, match=r"shape \(2,\).*compile.*`outputs`"):
        mx.eval(state[0])


def test_compile_with_the_random_state_draws_fresh_numbers():
    f = mx.compile(lambda: mx.random.uniform(shape=(4,)), inputs=mx.random.state,
                   outputs=mx.random.state)
    mx.random.seed(7)
    a, b = f().tolist(), f().tolist()
    mx.random.seed(7)
    assert a != b and f().tolist() == a


def test_disable_and_enable_compile_keep_results():
    f = mx.compile(lambda x: x + 1)
    mx.disable_compile()
    try:
        assert f(mx.array(1)).item() == 2
        with pytest.raises(ValueError, match="^compile: function arguments must be trees"):
            f(mx.array(1), object())  # checked as when compiled, as MLX does
    finally:
        mx.enable_compile()
    assert f(mx.array(1)).item() == 2


def test_mlx_disable_compile_environment_variable_turns_compile_off():
    code = ("import nuvec as mx\n"
            "f = mx.compile(lambda x: x * x.sum().item())\n"  # evaluates: refused when compiled
            "print(f(mx.array([1.0, 2.0])).tolist())\n")
    env = {**os.environ, "MLX_DISABLE_COMPILE": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[3.0, 6.0]"


@pytest.mark.parametrize(
    "args, message",
    [((3,), "^compile: fun must be callable, got int"),
     ((lambda x: x, None, None, "yes"), "^compile: shapeless must be a bool, got str")],
    ids=["not-callable", "shapeless-str"],
)
def test_compile_rejects(args, message):
    with pytest.raises(TypeError, match=message):
        mx.compile(*args)


def test_compile_rejects_outputs_it_could_not_update():
    with pytest.raises(ValueError, match="^compile: outputs must be a list, tuple or dict of "
                                         "captured state .*, got an array"):
        mx.compile(lambda x: x, outputs=mx.array(1.0))


def test_compile_state_in_tuples():
    # as MLX: a tuple holding lists and dicts is read and written like them
    state = ([mx.array(2)],)
    f = mx.compile(lambda x: x + state[0][0], inputs=state)
    assert f(mx.array(1)).item() == 3
    state[0][0] = mx.array(3)
    assert f(mx.array(1)).item() == 4
    counter = ({"n": mx.array(0.0)},)

    def step(x):
        counter[0]["n"] = counter[0]["n"] + 1
        return x

    g = mx.compile(step, inputs=counter, outputs=counter)
    for _ in range(3):
        g(mx.array(0.0))
    assert counter[0]["n"].item() == 3.0
    w = mx.array(5.0)
    h = mx.compile(lambda x: x * w, inputs=w)  # an array as inputs: read at each call
    w += 1
    assert h(mx.array(2.0)).item() == 12.0


def _counted(fun):
    """`fun` and a list whose length counts the Python calls of it."""
    calls = []

    def wrapped(*args, **kwargs):
        calls.append(1)
        return fun(*args, **kwargs)

    return wrapped, calls


@pytest.mark.parametrize("transform", ["grad", "vmap", "jvp"])
def test_transforms_of_captured_arrays_inside_are_traced_once(transform):
    # a transform the compiled function applies to an array it reads from its scope (a
    # constant of the program) is part of the program: replayed, not traced again (as MLX)
    w = mx.array([1.0, 2.0])
    inner = {
        "grad": lambda x: mx.grad(lambda v: mx.sum(v * v * x))(w),
        "vmap": lambda x: mx.vmap(lambda v: v * x)(w),
        "jvp": lambda x: mx.jvp(lambda v: v * v * x, [w], [mx.ones(2)])[1][0],
    }[transform]
    f, calls = _counted(inner)
    g = mx.compile(f)
    expected = {"grad": [2.0, 4.0], "vmap": [1.0, 2.0], "jvp": [2.0, 4.0]}[transform]
    for k in (1.0, 2.0, 3.0):
        assert g(mx.array(k)).tolist() == [k * e for e in expected]
    assert len(calls) == 1


def test_later_calls_replay_without_running_python():
    f, calls = _counted(lambda x, y: mx.tanh(x @ y) * 2 + mx.sum(y))
    g = mx.compile(f)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x, y = rng.standard_normal((2, 3, 4))
        want = np.tanh(x[:, :3] @ y[:3]) * 2 + y[:3].sum()
        out = g(mx.array(x[:, :3], mx.float64), mx.array(y[:3], mx.float64))
        assert_allclose(out, want, dtype=mx.float64)
    assert len(calls) == 1


@pytest.mark.parametrize(
    "second",
    [lambda: (mx.ones((3, 2)),), lambda: (mx.ones((2, 2), mx.float64),),
     lambda: (mx.ones((2, 2)), 3.0), lambda: ([mx.ones((2, 2))],)],
    ids=["shape", "dtype", "constant", "structure"],
)
def test_changed_calls_retrace(second):
    def fun(x, c=2.0):
        return (x[0] if isinstance(x, list) else x) * c

    f, calls = _counted(fun)
    g = mx.compile(f)
    assert_allclose(g(mx.ones((2, 2)), 2.0), np.full((2, 2), 2.0), dtype=mx.float32)
    args = second()
    want = fun(*[[np.ones(a[0].shape)] if isinstance(a, list) else
                 np.ones(a.shape) if isinstance(a, mx.array) else a for a in args])
    got = g(*args)
    assert len(calls) == 2
    assert_allclose(got, want, dtype=got.dtype)


def test_shapeless_replays_across_shapes_but_not_ranks():
    f, calls = _counted(lambda x: mx.exp(x) - x)
    g = mx.compile(f, shapeless=True)
    # (2,) traces; (5,) traces again and finds the same graph; (7,) replays; (3, 2) traces
    for shape in [(2,), (5,), (7,), (4,), (3, 2)]:
        x = np.linspace(-1, 1, int(np.prod(shape))).reshape(shape)
        assert_allclose(g(mx.array(x, mx.float64)), np.exp(x) - x, dtype=mx.float64)
    assert len(calls) == 3
    # weak scalars (constants repeating one value) and a bias broadcast against a product
    # replay broadcast to the new shapes
    f, calls = _counted(lambda x, w, b: mx.tanh(x @ w + b) * 2 + 1)
    g = mx.compile(f, shapeless=True)
    rng = np.random.default_rng(0)
    w, b = rng.standard_normal((4, 3)), rng.standard_normal(3)
    for rows in (2, 5, 8, 1):
        x = rng.standard_normal((rows, 4))
        assert_allclose(g(mx.array(x, mx.float64), mx.array(w, mx.float64),
                          mx.array(b, mx.float64)), np.tanh(x @ w + b) * 2 + 1,
                        dtype=mx.float64)
    assert len(calls) == 2
    f, calls = _counted(mx.softmax)  # one primitive along the last axis, whatever its length
    g = mx.compile(f, shapeless=True)
    for n in (3, 5, 2):
        x = np.linspace(-1, 1, n)
        assert_allclose(g(mx.array(x, mx.float64)), np.exp(x) / np.exp(x).sum(),
                        dtype=mx.float64)
    assert len(calls) == 2


@pytest.mark.parametrize("fun, reference, traces", [
    # 1 / n is a constant: a trace at the first shape tells it from a changed closure
    (lambda x: mx.mean(x), np.mean, 4),
    (lambda x: mx.broadcast_to(x, (2, x.shape[0])), lambda x: np.broadcast_to(x, (2, len(x))),
     3),
    (lambda x: x[1:] * 2, lambda x: x[1:] * 2, 3),           # the slice's stop
    (lambda x: mx.reshape(x, (x.shape[0], 1)), lambda x: x.reshape(-1, 1), 3),
], ids=["mean", "broadcast_to", "slice", "reshape"])
def test_shapeless_functions_whose_graph_holds_the_shape_stay_right(fun, reference, traces):
    f, calls = _counted(fun)
    g = mx.compile(f, shapeless=True)
    for n in (3, 5, 2, 5):
        x = np.linspace(-1, 1, n)
        assert_allclose(g(mx.array(x, mx.float64)), reference(x), dtype=mx.float64)
    assert len(calls) == traces  # a program per shape, each traced once


def test_shapeless_compile_keeps_the_closure_of_its_first_trace():
    # MLX traces a shapeless function once: a number or array of its scope changed later is
    # not seen at a new shape, where the graph holds no shape of its own
    scale, bias = 1, mx.array(10)

    def f(x):
        return x * scale + bias

    g = mx.compile(f, shapeless=True)
    assert g(mx.array([1, 2])).tolist() == [11, 12]
    scale, bias = 3, mx.array(20)
    assert g(mx.array([1, 2, 3])).tolist() == [11, 12, 13]
    assert g(mx.array([[1, 2, 3]])).tolist() == [[23, 26, 29]]  # a new rank traces again

    def h(x):  # a graph that holds its shape: each shape's program reads the closure anew
        return mx.mean(x) + bias

    g = mx.compile(h, shapeless=True)
    assert g(mx.array([1.0, 3.0])).item() == 22.0
    bias = mx.array(30)
    assert g(mx.array([1.0, 2.0, 6.0])).item() == 33.0


def test_compile_replays_custom_functions_and_checkpoints():
    @mx.custom_function
    def scaled_exp(x):
        return mx.exp(x)

    @scaled_exp.vjp
    def scaled_exp_vjp(primals, cotangent, output):
        return cotangent * output * 10  # a rule of its own: 10 times the true one

    x = np.array([0.1, -0.4, 0.9])
    a = mx.array(x, mx.float64)
    for _ in range(2):  # the trace, then a replay
        assert_allclose(mx.compile(scaled_exp)(a), np.exp(x), dtype=mx.float64)
        grad = mx.compile(mx.grad(lambda v: scaled_exp(v).sum()))(a)
        assert_allclose(grad, 10 * np.exp(x), dtype=mx.float64)
    saved = mx.checkpoint(lambda v: mx.sin(v) * v)
    g = mx.compile(mx.grad(lambda v: saved(v).sum()))
    for _ in range(2):
        assert_allclose(mx.compile(saved)(a), np.sin(x) * x, dtype=mx.float64)
        assert_allclose(g(a), np.cos(x) * x + np.sin(x), dtype=mx.float64)
    assert_allclose(mx.grad(lambda v: mx.compile(saved)(v).sum())(a), np.cos(x) * x + np.sin(x),
                    dtype=mx.float64)


def test_compile_of_a_function_updating_its_argument_in_place():
    def fun(x):
        x += 1
        return x * 2

    g = mx.compile(fun)
    a = mx.array([1.0, 2.0])
    for _ in range(2):
        assert g(a).tolist() == [4.0, 6.0]
    assert a.tolist() == [1.0, 2.0]  # the caller's array is not the traced one


def test_common_subexpressions_and_constants_are_simplified():
    def fun(x):
        c = mx.exp(mx.array(1.0, mx.float64)) * 2  # constants only: folded
        a, b = mx.sin(x), mx.sin(x)  # equal: merged
        return a + b + c

    g = mx.compile(fun)
    x = np.array([0.2, 1.5])
    assert_allclose(g(mx.array(x, mx.float64)), 2 * np.sin(x) + 2 * np.e, dtype=mx.float64)
    out = g(mx.array(x, mx.float64))
    names, seen = [], set()
    stack = [out]
    while stack:  # the distinct nodes of the replayed graph
        a = stack.pop()
        if a.primitive is not None and id(a._node) not in seen:
            seen.add(id(a._node))
            steps = getattr(a.primitive, "steps", [(a.primitive,)])  # a fused chain's steps
            names += [step[0].name for step in steps]
            stack.extend(a.inputs)
    assert len(names) == 3, names  # sin, add, add: one sin, no exp or multiply


def test_transforms_compose_with_compile():
    def f(x):
        return mx.sum(mx.sin(x) * x ** 2)

    x = np.array([0.3, -1.1, 2.0])
    want = np.cos(x) * x ** 2 + 2 * x * np.sin(x)
    xa = mx.array(x, mx.float64)
    assert_allclose(mx.grad(mx.compile(f))(xa), want, dtype=mx.float64)
    assert_allclose(mx.compile(mx.grad(f))(xa), want, dtype=mx.float64)
    assert_allclose(mx.compile(mx.grad(f))(xa), want, dtype=mx.float64)  # replayed
    rows = mx.array(np.stack([x, 2 * x]), mx.float64)
    got = mx.vmap(mx.compile(f))(rows)
    assert_allclose(got, [np.sum(np.sin(r) * r ** 2) for r in (x, 2 * x)], dtype=mx.float64)


def test_captured_model_and_optimizer_state_train_as_uncompiled():
    def make():
        mx.random.seed(3)
        model = nn.Linear(3, 1)
        return model, optimizers.SGD(learning_rate=0.1)

    rng = np.random.default_rng(1)
    x, y = mx.array(rng.standard_normal((8, 3))), mx.array(rng.standard_normal((8, 1)))

    def run(compiled):
        model, opt = make()
        loss_grad = nn.value_and_grad(model, lambda m, a, b: mx.mean((m(a) - b) ** 2))

        def step(a, b):
            loss, grads = loss_grad(model, a, b)
            opt.update(model, grads)
            return loss

        step, calls = _counted(step)
        if compiled:
            state = [model.state, opt.state]
            step = mx.compile(step, inputs=state, outputs=state)
        losses = [step(x, y).item() for _ in range(4)]
        # the optimizer's state appears at the first update: one more trace, as in MLX
        assert len(calls) == (2 if compiled else 4)
        return losses, np.array(model.weight)

    losses, weight = run(True)
    want_losses, want_weight = run(False)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    np.testing.assert_allclose(weight, want_weight, rtol=1e-5)
    assert losses[-1] < losses[0]


def test_compile_refuses_evaluation_inside():
    def fun(x):
        y = x * 2
        print(y)
        return y

    with pytest.raises(ValueError, match="^compile: attempting to evaluate an array inside a "
                                         "compiled function"):
        mx.compile(fun)(mx.array([1.0]))
    with pytest.raises(ValueError, match="^compile: attempting to evaluate"):
        mx.compile(lambda x: x * x.item())(mx.array(1.0))


def test_compile_rejects_bad_arguments_and_outputs():
    with pytest.raises(ValueError, match="^compile: function arguments must be trees of arrays "
                                        "or constants .*, got object"):
        mx.compile(lambda x, o: x)(mx.array(1.0), object())


def test_compile_returns_non_array_outputs_as_traced():
    g = mx.compile(lambda x: (x * 2, 3, {"name": "s", "none": None}))
    for _ in range(2):
        out, three, tree = g(mx.array([1.0, 2.0]))
        assert out.tolist() == [2.0, 4.0] and three == 3 and tree == {"name": "s", "none": None}


class _Vector(tuple):
    """A tuple subclass that is not a named tuple (as in MLX's `test_compile_types`)."""


class _Items(list):
    """A list subclass."""


def test_compile_takes_and_returns_tuple_subclasses():
    # As MLX: a tuple subclass is a tree node of its own type; list and dict subclasses (a
    # module) reach the function, and come back, as plain lists and dicts.
    seen = []

    def fun(t, items):
        seen.append((type(t), type(items)))
        return _Vector([t[0] + 10, t[1] * 10]), _Items([items[0] * 2])

    g = mx.compile(fun)
    for _ in range(2):
        out, items = g(_Vector([mx.array([1]), mx.array([4])]), _Items([mx.array(2)]))
        assert type(out) is _Vector and out[0].tolist() == [11] and out[1].tolist() == [40]
        assert type(items) is list and items[0].item() == 4
    assert seen == [(_Vector, list)]
    g((mx.array([1]), mx.array([4])), [mx.array(2)])  # a plain tuple: another structure
    assert seen == [(_Vector, list), (tuple, list)]


def test_disabled_compile_runs_python_each_call():
    f, calls = _counted(lambda x: x + 1)
    g = mx.compile(f)
    mx.disable_compile()
    try:
        g(mx.array(1.0)), g(mx.array(1.0))
    finally:
        mx.enable_compile()
    g(mx.array(1.0)), g(mx.array(1.0))
    assert len(calls) == 3


def test_captured_random_state_draws_what_uncompiled_code_draws():
    def draw():
        return mx.random.normal((3,)) + mx.random.uniform(shape=(3,))

    f, calls = _counted(draw)
    g = mx.compile(f, inputs=mx.random.state, outputs=mx.random.state)
    mx.random.seed(11)
    compiled = [g().tolist() for _ in range(3)]
    mx.random.seed(11)
    plain = [draw().tolist() for _ in range(3)]
    np.testing.assert_allclose(compiled, plain, rtol=1e-6)
    assert len(calls) == 1


def test_nested_compile_and_closure_constants():
    w = mx.array(np.array([1.0, 2.0]), mx.float64)
    inner = mx.compile(lambda x: x * w)
    outer = mx.compile(lambda x: inner(x) + inner(x * 2))
    x = np.array([0.5, -1.0])
    assert_allclose(outer(mx.array(x, mx.float64)), 3 * x * np.array([1.0, 2.0]),
                    dtype=mx.float64)


def test_grad_through_a_compiled_closure_over_the_differentiated_array():
    def outer(x):
        scaled = mx.compile(lambda y: mx.sin(y * x))  # x is being traced by grad
        return mx.sum(scaled(mx.array(np.array([1.0, 2.0]), mx.float64)))

    x = 0.7
    want = np.sum(np.cos(np.array([1.0, 2.0]) * x) * np.array([1.0, 2.0]))
    assert_allclose(mx.grad(outer)(mx.array(x, mx.float64)), want, dtype=mx.float64)


def test_an_input_returned_unchanged_is_a_new_handle():
    a = mx.array([1.0, 2.0])
    b = mx.compile(lambda x: x)(a)
    b += 1  # rebinds `b` only
    assert a.tolist() == [1.0, 2.0] and b.tolist() == [2.0, 3.0]


def test_a_transform_mark_inside_the_function_is_no_step():
    from nuvec.graph.primitive import COPY

    f = mx.compile(lambda x: mx.grad(lambda y: mx.sum(mx.sin(y) * y))(x))
    x = mx.array(np.linspace(-1, 1, 4, dtype=np.float32))
    g = f(x)
    stack, seen = [g], set()
    while stack:  # no Copy node in the replayed graph
        a = stack.pop()
        if id(a._node) in seen or a.primitive is None:
            continue
        seen.add(id(a._node))
        assert a.primitive is not COPY
        stack.extend(a.inputs)
    xs = np.linspace(-1, 1, 4)
    assert_allclose(g, np.cos(xs) * xs + np.sin(xs), dtype=mx.float32)


def test_replays_multi_output_steps_constant_outputs_and_inputs_passed_through():
    c = mx.array([5.0, 6.0])
    mx.eval(c)

    def f(x):
        a, b = mx.split(x * 2, 2)  # a step with two outputs
        return a + c[:1], x, c, b * 3, mx.divmod(x, 2.0)[1]

    compiled = mx.compile(f)
    for data in ([1.0, 2.0], [3.0, 7.0]):  # the trace, then a replay
        x = mx.array(data)
        got, want = compiled(x), f(x)
        assert got[1] is not x  # an input comes back as a new handle
        for g, w in zip(got, want):
            assert g.tolist() == w.tolist()
