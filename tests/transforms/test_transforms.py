"""The transformation API as MLX: vjp, jvp, vmap, grad, value_and_grad, custom_function,
checkpoint, depends, their errors and their compositions (references are NumPy formulas)."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import nuvec as mx
import nuvec.nn as nn
from nuvec.graph.primitive import Primitive, TransformError
from nuvec.ops.families import apply
from nuvec.testing import assert_allclose

F64 = mx.float64


def a64(x) -> mx.Array:
    return mx.array(np.asarray(x, np.float64), F64)


def x_exp(x):
    return x * mx.exp(x)


# -- vjp / jvp --------------------------------------------------------------------------------


def test_vjp_and_jvp_of_two_outputs() -> None:
    x, y = a64([0.5, -1.0]), a64([2.0, 3.0])
    cots = [a64([1.0, 2.0]), a64([1.0, 1.0])]
    outs, grads = mx.vjp(lambda a, b: [a * b, mx.exp(a)], [x, y], cots)
    assert_allclose(outs[0], [1.0, -3.0], F64)
    assert_allclose(grads[0], np.array([2.0, 6.0]) + np.exp([0.5, -1.0]), F64)
    assert_allclose(grads[1], [0.5, -2.0], F64)
    tans = [a64([1.0, 0.0]), a64([0.0, 1.0])]
    outs, tangents = mx.jvp(lambda a, b: (a * b, mx.exp(a)), [x, y], tans)
    assert_allclose(tangents[0], [2.0, -1.0], F64)
    assert_allclose(tangents[1], [np.exp(0.5), 0.0], F64)


def test_vjp_of_unused_and_integer_primals_is_zero() -> None:
    x, n = a64([1.0, 2.0]), mx.array([1, 2])
    _, (gx, gn) = mx.vjp(lambda a, b: a * 2.0, [x, n], [a64([1.0, 1.0])])
    assert_allclose(gx, [2.0, 2.0], F64)
    assert_allclose(gn, [0, 0], mx.int32)


def test_random_keys_get_no_gradient_and_bounds_do() -> None:
    key, low = mx.random.key(7), a64([0.5, -1.0])

    def sample(k, lo):
        return mx.random.uniform(lo, lo + 2.0, (2,), mx.float64, key=k)

    u = np.asarray(mx.random.uniform(shape=(2,), dtype=mx.float64, key=key))
    _, (g_key, g_low) = mx.vjp(sample, [key, low], [a64([1.0, 1.0])])
    assert_allclose(g_key, [0, 0], mx.uint32)
    assert_allclose(g_low, [1.0, 1.0], F64)  # lo + 2u moves one for one with lo
    _, (t,) = mx.jvp(lambda k: sample(k, low), [key], [mx.array([1, 1], mx.uint32)])
    assert_allclose(t, [0.0, 0.0], F64)
    assert_allclose(sample(key, low), np.asarray([0.5, -1.0]) + 2 * u, F64)
    with pytest.raises(TypeError, match=r"^grad: cannot differentiate with respect to an array "
                                        r"of uint32 \(shape \(2,\)\)"):
        mx.grad(lambda k: sample(k, low).sum())(key)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: mx.vjp(lambda x: x, mx.array(1.0), [mx.array(1.0)]), TypeError,
         "^vjp: primals must be a list of arrays"),
        (lambda: mx.vjp(lambda x: x, [1.0], [mx.array(1.0)]), TypeError, "^vjp: primals must be"),
        (lambda: mx.vjp(lambda x: x, [mx.array(1.0)], [mx.array(1.0), mx.array(1.0)]),
         ValueError, "^vjp: got 2 cotangents for 1 outputs"),
        (lambda: mx.vjp(lambda x: x, [mx.array([1.0])], [mx.array([1.0, 2.0])]), ValueError,
         r"^vjp: cotangent shape \(2,\) does not match output \(1,\)"),
        (lambda: mx.vjp(lambda x: 3.0, [mx.array(1.0)], [mx.array(1.0)]), TypeError,
         "^vjp: the function must return an array or a list of arrays, got float"),
        (lambda: mx.jvp(lambda x: x, [mx.array(1.0)], []), ValueError,
         "^jvp: got 0 tangents for 1 primals"),
        (lambda: mx.jvp(lambda x: x, [mx.array([1.0])], [mx.array(1.0)]), ValueError,
         r"^jvp: tangent shape \(\) does not match primal \(1,\)"),
        (lambda: mx.jvp(lambda x: [x, 2], [mx.array(1.0)], [mx.array(1.0)]), TypeError,
         "^jvp: the function's outputs must be arrays, got int"),
    ],
    ids=["primals-not-list", "primal-not-array", "cotangent-count", "cotangent-shape",
         "output-not-array", "tangent-count", "tangent-shape", "output-list-not-arrays"],
)
def test_vjp_jvp_errors(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call()


class NoRules(Primitive):
    """A primitive with no rules, to check the errors transformations raise."""

    __slots__ = ()

    def output_specs(self, inputs):
        return ((inputs[0].shape, inputs[0].dtype),)


@pytest.mark.parametrize(
    "transform, match",
    [
        (lambda f, x: mx.grad(lambda a: f(a).sum())(x), "^vjp: NoRules has no reverse-mode"),
        (lambda f, x: mx.jvp(f, [x], [x]), "^jvp: NoRules has no forward-mode"),
        (lambda f, x: mx.vmap(f)(x), "^vmap: NoRules has no batching rule"),
    ],
    ids=["vjp", "jvp", "vmap"],
)
def test_a_primitive_without_a_rule_is_named(transform, match) -> None:
    with pytest.raises(TransformError, match=match):
        transform(lambda a: apply(NoRules(), a), a64([1.0, 2.0]))


# -- grad / value_and_grad -------------------------------------------------------------------


def test_grad_argnums_and_argnames() -> None:
    def f(a, b, c=None, *, d):
        return (a * b * d).sum() + (c * c).sum()

    a, b, c, d = a64([1.0, 2.0]), a64([3.0, 4.0]), a64([5.0]), a64([0.5, 2.0])
    assert_allclose(mx.grad(f)(a, b, c, d=d), [1.5, 8.0], F64)
    ga, gb = mx.grad(f, argnums=(1, 0))(a, b, c, d=d)  # MLX sorts argnums
    assert_allclose(ga, [1.5, 8.0], F64)
    assert_allclose(gb, [0.5, 4.0], F64)
    pos, named = mx.grad(f, argnums=2, argnames="d")(a, b, c, d=d)
    assert_allclose(pos, [10.0], F64)
    assert list(named) == ["d"]
    assert_allclose(named["d"], [3.0, 8.0], F64)
    pos, named = mx.grad(f, argnames=["d"])(a, b, c, d=d)
    assert pos is None
    assert_allclose(named["d"], [3.0, 8.0], F64)


def test_grad_of_trees_returns_the_same_structure() -> None:
    Pair = namedtuple("Pair", "w b")
    params = {"layers": [Pair(a64([1.0, 2.0]), a64(0.5)), (a64([3.0]),)], "scale": a64(2.0)}

    def loss(p, x):
        w, b = p["layers"][0]
        return ((w * x + b).sum() + p["layers"][1][0].sum()) * p["scale"]

    g = mx.grad(loss)(params, a64([10.0, 20.0]))
    assert isinstance(g["layers"][0], Pair) and isinstance(g["layers"][1], tuple)
    assert_allclose(g["layers"][0].w, [20.0, 40.0], F64)
    assert_allclose(g["layers"][0].b, 4.0, F64)
    assert_allclose(g["layers"][1][0], [2.0], F64)
    assert_allclose(g["scale"], 1.0 * 10 + 2 * 20 + 0.5 * 2 + 3.0, F64)


class Vector(tuple):
    """A tuple subclass that is not a named tuple: a tree node of its own type (MLX)."""


class Items(list):
    """A list subclass: a tree node that the transforms rebuild as a plain list (MLX)."""


class Table(dict):
    """A dict subclass (as `nn.Module` is): rebuilt as a plain dict (MLX)."""


def test_grad_of_tuple_subclasses() -> None:
    a, b = a64(1.0), a64(4.0)
    seen = []

    def loss(t):
        seen.append(type(t))
        return (t[0] * t[1]).sum()

    g = mx.grad(loss)(Vector([a, b]))
    assert seen == [Vector] and type(g) is Vector  # (MLX's types)
    assert [g[0].item(), g[1].item()] == [4.0, 1.0]
    # tuple subclasses keep their type, list and dict subclasses come back plain (MLX)
    g = mx.grad(lambda t: t[0][0] * t[1][0] * t[2]["x"])([Vector([a]), Items([b]), Table(x=a)])
    assert [type(x) for x in g] == [Vector, list, dict]
    assert [g[0][0].item(), g[1][0].item(), g[2]["x"].item()] == [4.0, 1.0, 4.0]


@pytest.mark.parametrize("leaf", [0.5, 1, None, "s"], ids=["float", "int", "none", "str"])
def test_grad_rejects_non_array_leaves_of_differentiated_arguments(leaf) -> None:
    # MLX: "[tree_flatten] The argument should contain only arrays", a ValueError
    kind = type(leaf).__name__
    with pytest.raises(ValueError, match=rf"^value_and_grad: differentiated arguments must be "
                                         rf"arrays or trees of arrays, got {kind} at "
                                         r"args\[0\]\['x'\]$") as info:
        mx.value_and_grad(lambda p: p["y"] * 2.0)({"x": leaf, "y": mx.array(2.0)})
    assert isinstance(info.value, TypeError)
    with pytest.raises(ValueError, match=rf"^grad: .* got {kind} at kwargs\['q'\]\[1\]$"):
        mx.grad(lambda p, q: p * q[0], argnames="q")(mx.array(1.0), q=[mx.array(2.0), leaf])
    pair = Vector([leaf, mx.array(2.0)])
    with pytest.raises(ValueError, match=rf"^grad: .* got {kind} at args\[1\]\[0\]$"):
        mx.grad(lambda p, q: p * q[1], argnums=(0, 1))(mx.array(1.0), pair)


def test_arguments_not_differentiated_may_hold_anything() -> None:
    f = lambda p, cfg, name=None: p["w"] * cfg["scale"]  # noqa: E731
    params, cfg = {"w": mx.array(2.0)}, {"scale": mx.array(3.0), "tag": None, "n": 1}
    value, g = mx.value_and_grad(f)(params, cfg, name="s")
    assert value.item() == 6.0 and g["w"].item() == 3.0
    g = mx.grad(f, argnums=1)({"w": mx.array(2.0), "tag": "s"}, {"scale": mx.array(3.0)})
    assert g["scale"].item() == 2.0


def test_nn_value_and_grad_of_a_model_with_non_array_members() -> None:
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(2, 1)
            self.scale, self.sizes, self.name = 3.0, [1, 2], "m"
            self.config = {"depth": 4, "gain": mx.ones((1,))}

        def __call__(self, x):
            return (self.linear(x) * self.config["gain"]).sum() * self.scale

    model = Model()
    _, grads = nn.value_and_grad(model, lambda x: model(x))(mx.ones((3, 2)))
    # (MLX's trainable parameters hold empty dicts where the model holds other values)
    assert grads["sizes"] == [{}, {}] and grads["config"]["depth"] == {}
    assert grads["linear"]["weight"].tolist() == [[9.0, 9.0]]
    assert grads["config"]["gain"].shape == (1,)
    with pytest.raises(ValueError, match=r"^grad: .* got int at args\[0\]\['sizes'\]\[0\]$"):
        mx.grad(lambda m: m(mx.ones((3, 2))))(model)  # the module itself holds numbers


def test_value_and_grad_returns_aux_values() -> None:
    def f(x):
        return (x * x).sum(), {"doubled": x * 2.0}, "label"

    (loss, aux, label), g = mx.value_and_grad(f)(a64([1.0, 3.0]))
    assert_allclose(loss, 10.0, F64)
    assert_allclose(aux["doubled"], [2.0, 6.0], F64)
    assert label == "label"
    assert_allclose(g, [2.0, 6.0], F64)


def test_grad_closes_over_outside_arrays() -> None:
    w = a64([2.0, -1.0])
    f = lambda x: (mx.exp(x * w)).sum()  # noqa: E731
    x = np.array([0.3, 0.7])
    assert_allclose(mx.grad(f)(a64(x)), np.array([2.0, -1.0]) * np.exp(x * [2.0, -1.0]), F64)


def test_float64_gradients_are_accurate_to_float64() -> None:
    x = np.array([0.1, 1.7, -2.3])
    g = mx.grad(lambda a: x_exp(x_exp(a)).sum())(a64(x))
    inner = x * np.exp(x)
    expected = (1 + inner) * np.exp(inner) * (1 + x) * np.exp(x)
    assert g.dtype is F64
    np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-14, atol=0)


@pytest.mark.parametrize(
    "make, call, error, match",
    [
        (lambda: mx.grad(lambda x: x * 2.0), lambda g: g(mx.array([1.0, 2.0])), ValueError,
         r"^grad: the function must return a scalar array; got an array of shape \(2,\)"),
        (lambda: mx.grad(lambda x: x.sum(keepdims=True)), lambda g: g(mx.array([1.0, 2.0])),
         ValueError,  # one element is not a scalar (MLX's and JAX's rule)
         r"^grad: the function must return a scalar array; got an array of shape \(1,\)"),
        (lambda: mx.grad(lambda x: (x.sum(), x)), lambda g: g(mx.array([1.0])), ValueError,
         "^grad: the function must return a scalar array; got tuple"),
        (lambda: mx.value_and_grad(lambda x: ()), lambda g: g(mx.array(1.0)), ValueError,
         "^value_and_grad: the function must return a scalar array, or a tuple"),
        (lambda: mx.value_and_grad(lambda x: ("a", x)), lambda g: g(mx.array(1.0)), ValueError,
         "^value_and_grad: .* got str"),
        (lambda: mx.grad(lambda x: x.sum()), lambda g: g(mx.array([1, 2])), TypeError,
         r"^grad: cannot differentiate with respect to an array of int32 \(shape \(2,\)\)"),
        (lambda: mx.grad(lambda x: x), lambda g: g(1.0), TypeError,
         "^grad: differentiated arguments must be arrays or trees of arrays, got float"),
        (lambda: mx.grad(lambda x, y: x, argnums=1), lambda g: g(mx.array(1.0)), ValueError,
         "^grad: can't compute the gradient of argument index 1 because the function is "
         "called with only 1 positional arguments"),
        (lambda: mx.grad(lambda x, *, y: x, argnames="y"), lambda g: g(mx.array(1.0), z=1),
         ValueError, "^grad: can't compute the gradient of keyword argument 'y'"),
        (lambda: mx.grad(lambda x: x, argnums=-1), None, ValueError,
         "^grad: can't compute the gradient of negative argument index -1"),
        (lambda: mx.grad(lambda x: x, argnums=[0, 0]), None, ValueError,
         "^grad: duplicate argument index"),
        (lambda: mx.value_and_grad(lambda x: x, argnums=[]), None, ValueError,
         "^value_and_grad: gradient with respect to no argument requested"),
    ],
    ids=["non-scalar", "one-element", "grad-with-aux", "empty-tuple", "aux-first-not-array",
         "integer-input", "python-float", "argnum-out-of-range", "missing-argname",
         "negative-argnum", "duplicate-argnum", "no-argument"],
)
def test_grad_errors(make, call, error, match) -> None:
    with pytest.raises(error, match=match):
        g = make()
        call(g)


# -- vmap -------------------------------------------------------------------------------------


def test_vmap_in_axes_none_negative_and_out_axes() -> None:
    rng = np.random.default_rng(0)
    x, y, w = rng.standard_normal((3, 4)), rng.standard_normal((4, 3)), rng.standard_normal(4)
    f = mx.vmap(lambda a, b, c: a * b + c, in_axes=(0, -1, None), out_axes=-1)
    assert_allclose(f(a64(x), a64(y), a64(w)), (x * y.T + w).T, F64)
    g = mx.vmap(lambda a: (a.sum(), a * 2.0), in_axes=1, out_axes=(0, 1))
    s, d = g(a64(x))
    assert_allclose(s, x.sum(axis=0), F64)
    assert_allclose(d, 2 * x, F64)


def test_vmap_of_nested_structures() -> None:
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((2, 5)), rng.standard_normal(2)

    def f(tree):
        return {"out": tree["x"] * tree["pair"][0], "same": tree["pair"][1]}

    tree = {"x": a64(x), "pair": [a64(y), a64(y)]}
    axes = ({"x": 1, "pair": [None, None]},)
    out = mx.vmap(f, in_axes=axes, out_axes={"out": 0, "same": None})(tree)
    assert_allclose(out["out"], x.T * y, F64)
    assert_allclose(out["same"], y, F64)
    # a single argument takes its axes tree directly
    out = mx.vmap(f, in_axes={"x": 1, "pair": None}, out_axes={"out": 1, "same": None})(tree)
    assert_allclose(out["out"], (x.T * y).T, F64)


def test_vmap_of_subclassed_containers() -> None:
    # As MLX: a tuple subclass keeps its type, list and dict subclasses (a module) come plain.
    seen = []

    def f(t):
        seen.append([type(t), type(t[1]), type(t[2])])
        return Vector([t[0] * t[1][0], t[2]["x"]])

    x = a64([1.0, 2.0])
    out = mx.vmap(f)(Vector([x, Items([x]), Table(x=x)]))
    assert seen == [[Vector, list, dict]] and type(out) is Vector
    assert_allclose(out[0], [1.0, 4.0], F64)
    assert_allclose(out[1], [1.0, 2.0], F64)
    out = mx.vmap(lambda m, a: m["weight"] @ a, in_axes=(None, 0))(nn.Linear(2, 1), mx.ones((3, 2)))
    assert out.shape == (3, 1)


def test_vmap_output_that_ignores_the_batch_is_broadcast() -> None:
    out = mx.vmap(lambda a, b: b * 2.0, in_axes=(0, None))(a64(np.zeros((3, 2))), a64([1.0, 2.0]))
    assert_allclose(out, np.tile([2.0, 4.0], (3, 1)), F64)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: mx.vmap(lambda a, b: a + b)(mx.ones((2, 3)), mx.ones((3, 3))), ValueError,
         "^vmap: inconsistent batch sizes 2 and 3"),
        (lambda: mx.vmap(lambda a: a, in_axes=2)(mx.ones((2, 3))), IndexError,
         r"^vmap: invalid vectorization axis 2 for an array of shape \(2, 3\)"),
        (lambda: mx.vmap(lambda a: a)(mx.array(1.0)), IndexError,
         r"^vmap: invalid vectorization axis 0 for an array of shape \(\)"),
        (lambda: mx.vmap(lambda a: a, out_axes=2)(mx.ones((2, 3))), IndexError,
         r"^vmap: invalid output vectorization axis 2 for an array of shape \(3,\)"),
        (lambda: mx.vmap(lambda a: a, in_axes=None)(mx.ones((2,))), ValueError,
         "^vmap: at least one of in_axes must be non-None"),
        (lambda: mx.vmap(lambda a, b: a)(mx.ones((2,)), 1.0), TypeError,
         "^vmap: the arguments must be arrays or trees of arrays, got float"),
        (lambda: mx.vmap(lambda a: 1.0)(mx.ones((2,))), TypeError,
         "^vmap: the outputs must be arrays or trees of arrays, got float"),
        (lambda: mx.vmap(lambda a, b: a, in_axes=(0, 0, 0))(mx.ones((2,)), mx.ones((2,))),
         ValueError, "^vmap: axes .* have 3 entries for 2 values"),
        (lambda: mx.vmap(lambda a: a, in_axes="x")(mx.ones((2,))), ValueError,
         "^vmap: axis must be int or None"),
        (lambda: mx.vmap(lambda a: a * 2.0, out_axes=None)(mx.ones((2,))), ValueError,
         "^vmap: out_axes None for an output that depends on a batched input"),
        (lambda: mx.vmap(lambda a: a.item())(mx.ones((2,))), ValueError,
         "^vmap: attempting to evaluate an array inside a vmapped function"),
    ],
    ids=["batch-size", "in-axis-range", "scalar-in-axis", "out-axis-range", "all-none",
         "non-array-arg", "non-array-output", "axes-length", "axis-type", "out-axes-none",
         "evaluation"],
)
def test_vmap_errors(call, error, match) -> None:
    with pytest.raises(error, match=match) as info:
        call()
    assert isinstance(info.value, ValueError)  # MLX's IndexErrors are ValueErrors too


# -- composition ------------------------------------------------------------------------------


def test_third_derivative_of_a_scalar_function() -> None:
    d3 = mx.grad(mx.grad(mx.grad(x_exp)))
    for x in (-1.5, 0.0, 0.7):
        assert_allclose(d3(a64(x)), (x + 3) * np.exp(x), F64, rtol=1e-13)


def _pair_energy(x, a):
    """sum_ij A_ij exp(x_i x_j)."""
    return (a * mx.exp(mx.expand_dims(x, 1) * mx.expand_dims(x, 0))).sum()


def _pair_energy_hessian(x, a):
    s, e = a + a.T, np.exp(np.outer(x, x))
    return s * e * (1 + np.outer(x, x)) + np.diag((s * e * x[None, :] ** 2).sum(axis=1))


def test_hessian_vector_products_by_jvp_of_grad() -> None:
    rng = np.random.default_rng(2)
    x, a, v = rng.standard_normal(4) * 0.5, rng.standard_normal((4, 4)), rng.standard_normal(4)
    gradient = mx.grad(_pair_energy)
    _, (hv,) = mx.jvp(lambda p: gradient(p, a64(a)), [a64(x)], [a64(v)])
    assert_allclose(hv, _pair_energy_hessian(x, a) @ v, F64, rtol=1e-12)
    # reverse over reverse gives the same product
    hv2 = mx.grad(lambda p: (gradient(p, a64(a)) * a64(v)).sum())(a64(x))
    assert_allclose(hv2, _pair_energy_hessian(x, a) @ v, F64, rtol=1e-12)


def test_vmap_of_grad_gives_per_example_gradients() -> None:
    rng = np.random.default_rng(3)
    w, xs = rng.standard_normal(3), rng.standard_normal((5, 3))
    per_example = mx.vmap(mx.grad(lambda w_, x: mx.exp(w_ * x).sum()), in_axes=(None, 0))
    assert_allclose(per_example(a64(w), a64(xs)), xs * np.exp(w * xs), F64)


def test_grad_of_vmap() -> None:
    rng = np.random.default_rng(4)
    w, xs = rng.standard_normal(3), rng.standard_normal((5, 3))
    batched = mx.vmap(lambda w_, x: mx.exp(w_ * x).sum(), in_axes=(None, 0))
    g = mx.grad(lambda w_: batched(w_, a64(xs)).sum())(a64(w))
    assert_allclose(g, (xs * np.exp(w * xs)).sum(axis=0), F64)


def test_nested_vmap_with_different_axes() -> None:
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    inner = mx.vmap(lambda a, b: (a * b).sum(), in_axes=(None, 1))  # over y's columns
    outer = mx.vmap(inner, in_axes=(0, None))                       # over x's rows
    assert_allclose(outer(a64(x), a64(y)), x @ y, F64)
    transposed = mx.vmap(mx.vmap(lambda a, b: a * b, in_axes=(0, None), out_axes=1),
                         in_axes=(1, None), out_axes=-1)
    out = transposed(a64(x), a64(y[:, 0]))
    assert_allclose(out, np.einsum("ij,k->kij", x, y[:, 0]), F64)


# -- custom_function, checkpoint, depends ------------------------------------------------------


def test_custom_function_rules_replace_the_derived_ones() -> None:
    calls = []

    @mx.custom_function
    def f(x, y):
        return mx.exp(x) * y

    @f.vjp
    def f_vjp(primals, cotangent, output):
        calls.append("vjp")
        x, y = primals
        assert isinstance(output, mx.Array)
        return cotangent * output * 10.0, None

    @f.jvp
    def f_jvp(primals, tangents):
        calls.append("jvp")
        x, y = primals
        dx, dy = tangents
        assert dy is None
        return dx * 100.0

    @f.vmap
    def f_vmap(inputs, axes):
        calls.append("vmap")
        x, y = inputs
        return mx.exp(x) * y + 1000.0, axes[0]

    x, y = a64([0.0, 1.0]), a64([2.0, 3.0])
    assert_allclose(f(x, y), np.exp([0.0, 1.0]) * [2.0, 3.0], F64)
    gx, gy = mx.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))(x, y)
    assert_allclose(gx, 10 * np.exp([0.0, 1.0]) * [2.0, 3.0], F64)
    assert_allclose(gy, [0.0, 0.0], F64)
    _, (t,) = mx.jvp(lambda a: f(a, y), [x], [a64([1.0, 2.0])])
    assert_allclose(t, [100.0, 200.0], F64)
    out = mx.vmap(f, in_axes=(0, None))(a64([[0.0], [1.0]]), a64([2.0]))
    assert_allclose(out, np.exp([[0.0], [1.0]]) * 2.0 + 1000.0, F64)
    assert calls == ["vjp", "jvp", "vmap"]


def test_custom_function_defaults_and_structures() -> None:
    @mx.custom_function
    def f(tree, scale=1.0):
        return {"sum": (tree["a"] * tree["b"]).sum() * scale, "a": tree["a"]}

    @f.vjp
    def f_vjp(tree, cotangents, outputs, scale=1.0):
        return {"a": cotangents["sum"] * tree["b"] * scale + cotangents["a"],
                "b": cotangents["sum"] * tree["a"] * scale}

    tree = {"a": a64([1.0, 2.0]), "b": a64([3.0, 4.0])}
    g = mx.grad(lambda t: f(t, scale=2.0)["sum"])(tree)
    assert_allclose(g["a"], [6.0, 8.0], F64)
    assert_allclose(g["b"], [2.0, 4.0], F64)
    # no custom jvp or vmap: the wrapped function's derived rules apply
    _, (t,) = mx.jvp(lambda a: f({"a": a, "b": tree["b"]})["sum"], [tree["a"]], [a64([1.0, 0.0])])
    assert_allclose(t, 3.0, F64)
    out = mx.vmap(lambda a: f({"a": a, "b": tree["b"]})["sum"])(a64([[1.0, 0.0], [0.0, 1.0]]))
    assert_allclose(out, [3.0, 4.0], F64)
    # without any rule, the function is called as is
    plain = mx.custom_function(lambda x: x * 2.0)
    assert_allclose(plain(a64(1.0)), 2.0, F64)


def test_custom_function_treats_closures_as_constants() -> None:
    def g(x, y):
        @mx.custom_function
        def f(a):
            return a * y

        @f.vjp
        def f_vjp(a, cotangent, output):
            return cotangent * y

        return f(x)

    x, y = a64(2.0), a64(3.0)
    assert_allclose(mx.grad(g)(x, y), 3.0, F64)
    assert_allclose(mx.grad(g, argnums=1)(x, y), 0.0, F64)


@pytest.mark.parametrize(
    "rule, call, match",
    [
        ("vjp", lambda f: mx.grad(lambda x: f(x, x).sum())(a64([1.0])),
         "^custom_function: the vjp returned 3 cotangents for 2 arguments"),
        ("vmap", lambda f: mx.vmap(f)(a64([1.0]), a64([1.0])),
         r"^custom_function: the vmap must return a tuple \(outputs, axes\)"),
        ("jvp", lambda f: mx.jvp(lambda x: f(x, x), [a64([1.0])], [a64([1.0])]),
         "^custom_function: the jvp returned 2 arrays, expected 1"),
    ],
    ids=["vjp-count", "vmap-result", "jvp-count"],
)
def test_custom_function_rule_errors(rule, call, match) -> None:
    f = mx.custom_function(lambda x, y: x * y)
    bad = {"vjp": lambda p, c, o: (c, c, c), "vmap": lambda i, a: i[0],
           "jvp": lambda p, t: (t[0], t[1])}
    getattr(f, rule)(bad[rule])
    with pytest.raises(ValueError, match=match):
        call(f)


def test_custom_function_gives_constants_no_tangent_or_axis() -> None:
    seen = []

    @mx.custom_function
    def f(x, scale, tree):
        return x * scale * tree["k"] * tree["l"][1]

    @f.jvp
    def f_jvp(primals, tangents):
        seen.append(tangents[1:])
        return tangents[0] * primals[1]

    @f.vmap
    def f_vmap(inputs, axes):
        seen.append(axes[1:])
        return f(*inputs), axes[0]

    x, y = a64([1.0, 2.0]), a64(1.0)
    _, (t,) = mx.jvp(lambda a: f(a, 2.0, {"k": y, "l": [y, 3.0]}), [x], [a64([1.0, 1.0])])
    assert_allclose(t, [2.0, 2.0], F64)
    out = mx.vmap(lambda a: f(a, 3, {"k": y, "l": [y, 3.0]}))(a64(np.ones((2, 2))))
    assert_allclose(out, np.full((2, 2), 9.0), F64)
    none_tree = {"k": None, "l": [None, None]}
    assert seen == [(None, none_tree), (None, none_tree)]


@pytest.mark.parametrize(
    "rule, second, expected",
    [
        (lambda p, c, o: (c * 5.0, None), 2.0, 0.0),
        (lambda p, c, o: (c * 5.0, 0.0), 2.0, 0.0),
        (lambda p, c, o: (c * 5.0, None), "y", 0.0),
        (lambda p, c, o: (c * 5.0,), "y", 0.0),
        (lambda p, c, o: c * 5.0, "y", 0.0),
        (lambda p, c, o: (c * 5.0, None), "tree", 0.0),
        (lambda p, c, o: [c * 5.0, {"k": c, "l": [c * 2.0, 1.0]}], "tree", 3.0),
    ],
    ids=["scalar-none", "scalar-float", "array-none", "fewer", "lone", "tree-none", "tree"],
)
def test_custom_vjp_returns_one_cotangent_per_argument(rule, second, expected) -> None:
    f = mx.custom_function(lambda a, b: a * 2.0)
    f.vjp(rule)
    x, y = a64([1.0, 2.0]), a64([3.0, 4.0])
    arg = {"y": lambda b: b, "tree": lambda b: {"k": b, "l": [b, 2.0]}}.get(second)
    gx, gy = mx.grad(lambda a, b: f(a, arg(b) if arg else second).sum(), argnums=(0, 1))(x, y)
    assert_allclose(gx, [5.0, 5.0], F64)
    assert_allclose(gy, [expected, expected], F64)


@pytest.mark.parametrize(
    "rule, error, match",
    [
        (lambda p, c, o: (c, {"k": a64([1.0, 2.0, 3.0]), "l": [c, None]}), ValueError,
         r"^custom_function: the vjp returned a cotangent of shape \(3,\) for an argument of "
         r"shape \(2,\)"),
        (lambda p, c, o: (c, [c, c]), ValueError,
         r"^custom_function: the vjp returned a cotangent of structure list\(\*, \*\) for an "
         r"argument of structure dict\(\*, list\(\*, \*\)\)"),
        (lambda p, c, o: (c, {"k": 0.0, "l": [c, None]}), TypeError,
         "^custom_function: the vjp must return an array or None for an array argument, got "
         "float"),
    ],
    ids=["shape", "structure", "non-array"],
)
def test_custom_vjp_result_errors(rule, error, match) -> None:
    f = mx.custom_function(lambda a, t: a * t["k"])
    f.vjp(rule)
    x = a64([1.0, 2.0])
    with pytest.raises(error, match=match):
        mx.grad(lambda a, b: f(a, {"k": b, "l": [b, 2.0]}).sum(), argnums=(0, 1))(x, x)


def test_custom_function_needs_a_callable() -> None:
    with pytest.raises(TypeError, match=r"^custom_function: fun must be callable, got 3 \(int\)"):
        mx.custom_function(3)


def test_custom_jvp_and_vmap_need_positional_arguments() -> None:
    f = mx.custom_function(lambda x, *, scale: x * scale)
    f.jvp(lambda p, t: t)
    assert_allclose(f(a64(2.0), scale=a64(3.0)), 6.0, F64)
    with pytest.raises(ValueError, match="^custom_function: a custom jvp needs positional "):
        mx.jvp(lambda a: f(a, scale=a64(3.0)), [a64(1.0)], [a64(1.0)])


def _chain(x, ws):
    for w in ws:
        x = mx.exp(x * w) * 0.5
    return x


def test_checkpoint_gives_the_same_derivatives() -> None:
    rng = np.random.default_rng(6)
    x, ws = a64(rng.standard_normal(4) * 0.3), [a64(rng.standard_normal(4) * 0.3) for _ in range(3)]
    plain = lambda x_, ws_: _chain(x_, ws_).sum()  # noqa: E731
    saved = mx.checkpoint(_chain)
    ckpt = lambda x_, ws_: saved(x_, ws_).sum()  # noqa: E731
    for argnums in (0, 1):
        expected = mx.grad(plain, argnums=argnums)(x, ws)
        got = mx.grad(ckpt, argnums=argnums)(x, ws)
        for e, g in zip(expected if argnums else [expected], got if argnums else [got]):
            assert_allclose(g, np.asarray(e), F64, rtol=1e-14)
    # second order, forward mode and batching through the checkpoint
    h = mx.grad(lambda a: mx.grad(ckpt)(a, ws).sum())(x)
    assert_allclose(h, np.asarray(mx.grad(lambda a: mx.grad(plain)(a, ws).sum())(x)), F64)
    _, (t,) = mx.jvp(lambda a: saved(a, ws), [x], [a64(np.ones(4))])
    _, (t0,) = mx.jvp(lambda a: _chain(a, ws), [x], [a64(np.ones(4))])
    assert_allclose(t, np.asarray(t0), F64)
    xs = a64(rng.standard_normal((2, 4)))
    assert_allclose(mx.vmap(lambda a: saved(a, ws))(xs),
                    np.stack([np.asarray(_chain(a64(row), ws)) for row in np.asarray(xs)]), F64)


def test_depends_passes_inputs_through() -> None:
    x, y = a64([1.0, 2.0]), a64(3.0)
    gx, gy = mx.grad(lambda a, b: mx.depends([a * 2.0], [b])[0].sum(), argnums=(0, 1))(x, y)
    assert_allclose(gx, [2.0, 2.0], F64)
    assert_allclose(gy, 0.0, F64)
    assert mx.depends([], [y]) == []
    with pytest.raises(TypeError, match="^depends: dependencies must be arrays, got float"):
        mx.depends([x], [1.0])


def test_stop_gradient_blocks_derivatives() -> None:
    f = lambda x: (x * mx.stop_gradient(x * x)).sum()  # noqa: E731
    x = np.array([1.0, -2.0])
    assert_allclose(mx.grad(f)(a64(x)), x * x, F64)
    _, (t,) = mx.jvp(lambda a: a * mx.stop_gradient(a), [a64(x)], [a64([1.0, 1.0])])
    assert_allclose(t, x, F64)


def test_vmap_releases_the_traced_graph() -> None:
    from nuvec.graph.array import Node
    import gc

    def kept() -> set[int]:
        gc.collect()
        return {id(o) for o in gc.get_objects() if type(o) is Node and o.keep}

    before = kept()
    w = a64([1.0, 2.0])
    out = mx.vmap(lambda a: a * mx.exp(w * 3.0))(a64(np.ones((4, 2))))
    mx.eval(out)
    assert kept() - before == set()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_overlapping_and_strided_windows_sum_their_cotangents(dtype) -> None:
    # Cotangents of slices are summed window by window (`add_cotangents`); the windows
    # overlap, step backwards and skip rows, and one use of the whole array mixes in.
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((24, 18)).astype(dtype)
    a = rng.standard_normal((24, 10)).astype(dtype)
    c = rng.standard_normal((24, 18)).astype(dtype)
    kind = mx.float32 if dtype == np.float32 else mx.float64

    def loss(x):
        return (mx.sum(mx.sin(x[:, :10]) * mx.array(a, kind)) + mx.sum(x[3:20:3, ::-2] ** 2)
                + mx.sum(x * mx.array(c, kind)) + mx.sum(x[:, 5:15]))

    g = np.asarray(mx.grad(loss)(mx.array(xv, kind)))
    x64 = xv.astype(np.float64)
    want = c.astype(np.float64).copy()
    want[:, :10] += np.cos(x64[:, :10]) * a
    want[3:20:3, ::-2] += 2 * x64[3:20:3, ::-2]
    want[:, 5:15] += 1
    assert g.dtype == dtype
    np.testing.assert_allclose(g, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


def test_cotangents_of_disjoint_windows_are_written_without_a_sum() -> None:
    # The parts of a split meet nowhere: their cotangents are written into one array of
    # zeros, window after window, with no addition recorded (an overlapping pair is summed).
    from nuvec.ops.binary import Add
    from nuvec.ops.slicing import SliceUpdate

    rng = np.random.default_rng(6)
    xv = rng.standard_normal((6, 12))
    a, b = (rng.standard_normal((6, 4)) for _ in range(2))

    def loss(x):
        p, q, r = mx.split(x, 3, axis=1)
        return mx.sum(mx.sin(p) * mx.array(a)) + mx.sum(q * mx.array(b)) + mx.sum(r ** 2)

    g = mx.grad(loss)(mx.array(xv))
    kinds, stack, seen = [], [g._node], set()
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            kinds.append(type(node.primitive))
            stack.extend(node.sources)
    assert kinds.count(SliceUpdate) == 3 and Add not in kinds
    want = np.concatenate([np.cos(xv[:, :4]) * a, b, 2 * xv[:, 8:]], axis=1)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-6, atol=1e-6)

    g = mx.grad(lambda x: mx.sum(x[:, :8] * mx.array(xv[:, :8])) + mx.sum(x[:, 6:] ** 2))(
        mx.array(xv))
    want = np.zeros_like(xv)
    want[:, :8] += xv[:, :8]
    want[:, 6:] += 2 * xv[:, 6:]
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-6, atol=1e-6)
