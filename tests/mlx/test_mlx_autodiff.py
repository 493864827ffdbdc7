"""Transform behaviours of mlx.core (issue 12, item 3): gradients of scans with ties, slices
and scatters, jvp with constant inputs, reduction jvps, in-place updates, non-array leaves."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from nuvec.testing import check_grads, check_jvp_vjp


def test_cummax_cummin_gradients_with_ties_are_subgradients():
    """With ties the cotangent of each output is split over the tied inputs of its window;
    each output's cotangent is conserved (sums to the total) and reaches only maxima."""
    x = np.array([3.0, 3.0, 1.0, 5.0, 5.0], np.float32)
    for name, ref in (("cummax", np.maximum.accumulate), ("cummin", np.minimum.accumulate)):
        g = np.asarray(mx.grad(lambda a, name=name: getattr(mx, name)(a).sum())(mx.array(x)))
        assert g.sum() == pytest.approx(len(x))
        y = ref(x)
        assert np.all((g == 0) | np.isin(x, y))
    g = mx.grad(lambda a: mx.cummax(a).sum())(mx.array([1.0, 3.0, 2.0, 4.0]))
    assert g.tolist() == [1.0, 2.0, 0.0, 1.0]  # no ties: each output to its maximum


def test_slice_gradients():
    cot = mx.array([1.0, 2.0, 3.0, 4.0, 5.0])
    _, (g,) = mx.vjp(lambda a: a[5:-6:-1], [mx.ones(5)], [cot])
    assert g.tolist() == cot.tolist()[::-1]
    _, (t,) = mx.jvp(lambda a: a[1::2], [mx.ones(5)], [cot])
    assert t.tolist() == [2.0, 4.0]


def test_scatter_gradients():
    idx = mx.array([0, 0, 2])
    x = mx.array([1.0, 2.0, 3.0], mx.float64)
    u = mx.array([4.0, 5.0, 6.0], mx.float64)
    for op in ("add", "multiply", "maximum", "minimum"):
        f = lambda a, b, op=op: getattr(a.at[idx], op)(b) ** 2
        check_grads(f, [x, u])
        check_jvp_vjp(f, [x, u])


def test_in_place_updates_inside_the_function():
    def fun(a, b):
        a[4:-5:-2] = b
        return a

    cot = mx.array([1.0, 2.0, 3.0, 4.0])
    _, (ga, gb) = mx.vjp(fun, [mx.ones(4), mx.zeros(2)], [cot])
    assert ga.tolist() == [1.0, 0.0, 3.0, 0.0] and gb.tolist() == [4.0, 2.0]
    _, (t,) = mx.jvp(fun, [mx.ones(4), mx.zeros(2)], [cot, mx.array([9.0, 8.0])])
    assert t.tolist() == [1.0, 8.0, 3.0, 9.0]

    def g(x):
        x += 1
        x *= x
        return x.sum()

    assert mx.grad(g)(mx.array([1.0, 2.0])).tolist() == [4.0, 6.0]


def test_jvp_with_constant_and_partly_traced_inputs():
    out, (t,) = mx.jvp(lambda x, y: x * y + 3, [mx.array(2.0), mx.array(5.0)],
                       [mx.array(1.0), mx.array(0.0)])
    assert out[0].item() == 13.0 and t.item() == 5.0
    _, (t,) = mx.jvp(lambda x: mx.array(7.0) + 0 * x, [mx.array(2.0)], [mx.array(1.0)])
    assert t.item() == 0.0
    _, (t,) = mx.jvp(lambda x: mx.ones(3), [mx.array(2.0)], [mx.array(1.0)])
    assert t.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "logsumexp", "var",
                                  "std"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reduction_jvps(name, axis):
    x = mx.array(np.array([[1.0, 2.5, 3.0], [4.0, -5.0, 7.0]]), mx.float64)
    check_jvp_vjp(lambda a: getattr(mx, name)(a, axis=axis), [x])
    check_grads(lambda a: getattr(mx, name)(a, axis=axis), [x])


def test_gradients_over_trees_with_non_array_leaves():
    # MLX rejects them in the differentiated arguments ("[tree_flatten] The argument should
    # contain only arrays", a ValueError); the other arguments may hold anything
    params = {"w": mx.array([1.0, 2.0]), "scale": 2.0, "name": "layer", "n": None}
    with pytest.raises(ValueError, match=r"^grad: .* got float at args\[0\]\['scale'\]$"):
        mx.grad(lambda p: (p["w"] * p["scale"]).sum())(params)
    grads = mx.grad(lambda w, p: (w * p["scale"]).sum())(params["w"], params)
    assert grads.tolist() == [2.0, 2.0]
    with pytest.raises(ValueError, match=r"^value_and_grad: .* got int at args\[0\]\[1\]$"):
        mx.value_and_grad(lambda p: p[0].sum())([mx.array([3.0]), 4])
    with pytest.raises(TypeError, match="^grad: differentiated arguments must be arrays or "
                                        "trees of arrays, got float"):
        mx.grad(lambda x: x)(1.0)


def test_writes_into_the_callers_containers_stay_as_in_mlx():
    def loss(model):
        model["b"] = model["w"].sum()  # a new entry
        model["layers"][0] = mx.array(2.0)  # a replaced leaf
        model["layers"][1][0] = 7.0  # an in-place update of a given array
        return model["w"].sum() * model["layers"][0] + model["layers"][1].sum()

    w, kept, updated = mx.array([1.0, 2.0]), mx.array(5.0), mx.array([1.0, 1.0])
    model = {"w": w, "layers": [mx.array(1.0), updated], "pair": (kept, [kept])}
    grads = mx.grad(loss)(model)
    assert grads["w"].tolist() == [2.0, 2.0] and grads["layers"][1].tolist() == [0.0, 1.0]
    assert model["w"] is w and model["pair"][0] is kept and model["pair"][1][0] is kept
    assert model["b"].item() == 3.0 and model["layers"][0].item() == 2.0
    assert model["layers"][1].tolist() == [7.0, 1.0] and updated.tolist() == [1.0, 1.0]


def test_the_callers_containers_are_restored_when_the_function_raises():
    def fails(params):
        assert params[0] is not original
        raise RuntimeError("inside")

    original = mx.array(1.0)
    params = [original]
    with pytest.raises(RuntimeError, match="inside"):
        mx.grad(fails)(params)
    assert params[0] is original
