"""`nn.Module` tree operations as MLX's: parameters, children, freezing, update and loading
with their `strict` failures, modes, dtypes and weight files."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
import nuvec.nn as nn
import nuvec.optimizers as optim
from nuvec.utils import tree_flatten, tree_map, tree_reduce


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 4)
        self.norm = nn.LayerNorm(4)
        self.extra = {"scale": mx.ones((4,)), "layers": [nn.Linear(4, 4), nn.Identity()]}
        self._private = mx.zeros((2,))
        self.name = "block"
        self.sizes = (3, 4)  # a tuple member is neither a parameter nor a child

    def __call__(self, x):
        x = self.norm(self.linear(x)) * self.extra["scale"]
        return self.extra["layers"][0](x)


def keys(tree) -> list[str]:
    return sorted(k for k, _ in tree_flatten(tree, is_leaf=nn.Module.is_module))


def test_parameters_children_and_modules() -> None:
    block = Block()
    assert keys(block.parameters()) == [
        "extra.layers.0.bias", "extra.layers.0.weight", "extra.scale", "linear.bias",
        "linear.weight", "norm.bias", "norm.weight"]
    assert block.name == "block" and "name" not in block and "_private" in block
    assert set(block.children()) == {"linear", "norm", "extra"}
    assert isinstance(block.children()["extra"]["layers"][1], nn.Identity)
    assert keys(block.leaf_modules()) == ["extra.layers.0", "extra.layers.1", "linear", "norm"]
    names = sorted(name for name, _ in block.named_modules())
    assert names == ["", "extra.layers.0", "extra.layers.1", "linear", "norm"]
    assert len(block.modules()) == 5
    with pytest.raises(AttributeError, match="'Block' object has no attribute 'missing'"):
        block.missing


def test_filter_and_map_leaves_mapped_or_as_they_are() -> None:
    block = Block()
    params = block.parameters()
    assert params["linear"]["weight"] is block.linear.weight  # no map: the arrays themselves
    assert params["extra"]["layers"][1] == {}  # a module without parameters
    shapes = block.filter_and_map(block.valid_parameter_filter, map_fn=lambda a: a.shape)
    assert shapes["extra"] == {"scale": (4,), "layers": [{"weight": (4, 4), "bias": (4,)}, {}]}
    # a leaf test of one's own is asked for every member, modules and containers included
    seen = []
    whole = block.filter_and_map(block.valid_child_filter, map_fn=type,
                                 is_leaf_fn=lambda m, k, v: seen.append(k) or k == "extra.layers")
    # (inside a dict or list a member the filter rejects stays, as an empty dict, as in MLX)
    assert whole == {"linear": {}, "norm": {}, "extra": {"scale": {}, "layers": list}}
    assert sorted(seen) == ["extra", "extra.layers", "linear", "norm"]


def test_freeze_and_unfreeze_with_keys_recurse_strict() -> None:
    block = Block()
    block.freeze()
    assert keys(block.trainable_parameters()) == []
    block.unfreeze(keys=["weight"])
    assert keys(block.trainable_parameters()) == [
        "extra.layers.0.weight", "linear.weight", "norm.weight"]
    block.unfreeze()
    block.freeze(keys="extra", recurse=False)
    assert "extra" not in block.trainable_parameters()
    assert keys(block.trainable_parameters()) == [
        "linear.bias", "linear.weight", "norm.bias", "norm.weight"]
    block.unfreeze()
    block.linear.freeze(keys=["bias"])
    assert "bias" not in block.trainable_parameters()["linear"]
    with pytest.raises(KeyError, match="module doesn't contain member nope"):
        block.freeze(keys=["nope"], strict=True)
    with pytest.raises(KeyError, match="module doesn't contain member nope"):
        block.unfreeze(keys="nope", recurse=False, strict=True)
    block.freeze(keys=["nope"])  # not strict: ignored
    assert "weight" in block.trainable_parameters()["linear"]


def test_strict_keys_with_recurse_need_only_be_somewhere_in_the_tree() -> None:
    seq = nn.Sequential(nn.Linear(1, 1), nn.ReLU())  # ReLU and Sequential have no "weight"
    seq.freeze(keys="weight", strict=True)
    assert keys(seq.trainable_parameters()) == ["layers.0.bias"]
    seq.unfreeze(keys=["weight"], strict=True)
    assert keys(seq.trainable_parameters()) == ["layers.0.bias", "layers.0.weight"]
    with pytest.raises(KeyError, match="Module.freeze: module doesn't contain member weight"):
        seq.freeze(keys="weight", recurse=False, strict=True)
    with pytest.raises(KeyError, match="Module.unfreeze: module doesn't contain member nope"):
        seq.unfreeze(keys="nope", strict=True)


def test_update_and_update_modules_strict_failures() -> None:
    layer = nn.Linear(2, 2)
    layer.update({"bias": mx.array([5.0, 6.0])})
    assert layer.bias.tolist() == [5.0, 6.0]
    with pytest.raises(ValueError, match='does not have parameter named "gamma"'):
        layer.update({"gamma": mx.zeros((2,))})
    with pytest.raises(ValueError, match="received invalid type: list"):
        layer.update({"bias": [1.0, 2.0]})
    layer.update({"gamma": mx.zeros((2,))}, strict=False)
    assert "gamma" not in layer
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    seq.update_modules({"layers": [nn.Identity(), {}]})
    assert isinstance(seq.layers[0], nn.Identity) and isinstance(seq.layers[1], nn.ReLU)
    with pytest.raises(ValueError, match='does not have sub-module named "head"'):
        seq.update_modules({"head": nn.Identity()})
    with pytest.raises(ValueError, match="received invalid type: int"):
        nn.Sequential(nn.Identity()).update_modules({"layers": [3]})
    layer.buf = mx.array([0.0])
    with pytest.raises(ValueError, match="Module.update_modules: received invalid type: Array"):
        layer.update_modules({"buf": mx.array([1.0])})
    layer.update_modules({"buf": {}})  # an empty dict sets nothing, as in MLX
    layer.update_modules({"buf": mx.array([1.0])}, strict=False)
    assert layer.buf.tolist() == [0.0]


def test_update_with_a_list_longer_than_the_module() -> None:
    seq = nn.Sequential(nn.Linear(1, 1))
    seq.update({"layers": [{}, {"weight": mx.ones((1, 1))}]}, strict=False)  # extra: skipped
    seq.update_modules({"layers": [{}, nn.Identity()]}, strict=False)
    assert len(seq.layers) == 1 and isinstance(seq.layers[0], nn.Linear)
    with pytest.raises(ValueError, match=r"^Module.update: list index 1 is out of bounds for "
                                         "destination of length 1"):
        seq.update({"layers": [{}, {"weight": mx.ones((1, 1))}]})
    with pytest.raises(ValueError, match=r"^Module.update_modules: list index 1 is out of "
                                         "bounds for destination of length 1"):
        seq.update_modules({"layers": [{}, nn.Identity()]})
    pairs = tree_flatten(seq.parameters())
    seq.load_weights(pairs + [("layers.5.weight", mx.zeros((1, 1)))], strict=False)


def test_update_through_lists_and_non_strict_leaves() -> None:
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    seq.update({"layers": [{"bias": mx.array([1.0, 2.0])}, {}, {"weight": mx.ones((1, 2))}]})
    assert seq.layers[0].bias.tolist() == [1.0, 2.0]
    assert seq.layers[2].weight.tolist() == [[1.0, 1.0]]
    with pytest.raises(ValueError, match="Module.update: received invalid type: float"):
        seq.update({"layers": [{"bias": 3.0}]})
    with pytest.raises(ValueError, match="Module.update: received invalid type: int"):
        seq.update({"layers": [7]})
    seq.update({"layers": [{"bias": 3.0, "extra": mx.zeros((1,))}, 7]}, strict=False)
    assert seq.layers[0].bias == 3.0 and "extra" not in seq.layers[0]  # MLX's non-strict


def test_apply_set_dtype_train_eval() -> None:
    block = Block()
    block.apply(lambda p: p * 0)
    assert all(float(mx.abs(v).max()) == 0 for _, v in tree_flatten(block.parameters()))
    block.set_dtype(mx.float16)
    assert {v.dtype for _, v in tree_flatten(block.parameters())} == {mx.float16}
    layer = nn.Linear(2, 2)
    layer.set_dtype(mx.int32, lambda d: True)
    layer.set_dtype(mx.float16)  # the default casts only floating parameters
    assert layer.weight.dtype == mx.int32
    layer.set_dtype(mx.int64, predicate=None)  # None casts them all, as MLX's
    assert layer.weight.dtype == mx.int64
    assert block._private.dtype == mx.float32  # private members are not parameters
    assert block.training and block.extra["layers"][1].training
    block.eval()
    assert not any(m.training for m in block.modules())
    block.train()
    assert all(m.training for m in block.modules())


def test_load_weights_strict_errors(tmp_path) -> None:
    layer = nn.Linear(3, 2)
    good = [("weight", mx.ones((2, 3))), ("bias", mx.zeros((2,)))]
    with pytest.raises(ValueError, match=r"received 1 parameters not in model: extra\."):
        layer.load_weights(good + [("extra", mx.zeros((1,)))])
    with pytest.raises(ValueError, match=r"missing 1 parameters: bias\."):
        layer.load_weights(good[:1])
    with pytest.raises(ValueError, match=r"expected shape \(2, 3\) but received shape \(3, 2\) "
                                         "for parameter weight"):
        layer.load_weights([("weight", mx.ones((3, 2))), ("bias", mx.zeros((2,)))])
    with pytest.raises(ValueError, match="expected an array but received list for parameter "
                                         "bias"):
        layer.load_weights([("weight", mx.ones((2, 3))), ("bias", [0.0, 0.0])])
    layer.load_weights(good[:1], strict=False)
    np.testing.assert_array_equal(np.asarray(layer.weight), np.ones((2, 3)))
    path = str(tmp_path / "w.npz")
    layer.save_weights(path)
    other = nn.Linear(3, 2).load_weights(path)
    np.testing.assert_array_equal(np.asarray(other.weight), np.ones((2, 3)))
    np.testing.assert_array_equal(np.asarray(other.bias), np.asarray(layer.bias))
    with pytest.raises(ValueError, match=r"unsupported file extension for .*w\.txt"):
        layer.save_weights(str(tmp_path / "w.txt"))
    layer.load_weights({"weight": mx.zeros((2, 3)), "bias": mx.ones((2,))})  # a dict, as MLX
    np.testing.assert_array_equal(np.asarray(layer.bias), np.ones(2))
    layer.load_weights((("weight", mx.zeros((2, 3))), ("bias", mx.full((2,), 2.0))))  # a tuple
    np.testing.assert_array_equal(np.asarray(layer.bias), np.full(2, 2.0))


def test_plain_functions_in_a_sequential_keep_the_positions_of_the_layers() -> None:
    # `layers.1` is a function: it stays in the trees as an empty dict, as in MLX, so the
    # second Linear is `layers.2` in the parameters, the gradients and the weights files
    model = nn.Sequential(nn.Linear(2, 3), nn.relu, nn.Linear(3, 1))
    assert keys(model.parameters()) == ["layers.0.bias", "layers.0.weight", "layers.2.bias",
                                        "layers.2.weight"]
    assert model.parameters()["layers"][1] == {}
    loss, grads = nn.value_and_grad(model, lambda x: model(x).sum())(mx.ones((4, 2)))
    before = np.asarray(model.layers[2].weight)
    optim.SGD(0.5).update(model, grads)
    np.testing.assert_allclose(np.asarray(model.layers[2].weight),
                               before - 0.5 * np.asarray(grads["layers"][2]["weight"]))
    model.load_weights(dict(tree_flatten(model.parameters())))


def test_eval_of_a_model_evaluates_its_parameters() -> None:
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    optimizer = optim.SGD(0.1)
    model.layers[0].weight = model.layers[0].weight * 2
    mx.eval(model)  # a module is a dict: eval walks into it, as MLX's
    assert model.layers[0].weight.is_evaluated
    model.layers[0].bias = model.layers[0].bias + 1
    mx.eval([model.state, optimizer.state])  # MLX's compiled-step idiom
    assert model.layers[0].bias.is_evaluated


def test_grad_with_respect_to_a_module_gives_a_dict_of_gradients() -> None:
    model = nn.Linear(2, 1)
    x = mx.array([[1.0, 2.0], [3.0, 4.0]])
    weight = model.weight
    grads = mx.grad(lambda m: m(x).sum())(model)  # a module is a dict, as in MLX
    assert type(grads) is dict and set(grads) == {"weight", "bias"}
    np.testing.assert_allclose(np.asarray(grads["weight"]), [[4.0, 6.0]])
    np.testing.assert_allclose(np.asarray(grads["bias"]), [2.0])
    assert model.weight is weight  # the module gets its own arrays back


def test_tree_utilities_walk_into_modules() -> None:
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    shapes = tree_map(lambda a: a.shape, model)  # a module is a dict: a plain dict comes back
    assert type(shapes) is dict and shapes["layers"][0] == {"weight": (3, 2), "bias": (3,)}
    assert [k for k, _ in tree_flatten(model)] == ["layers.0.weight", "layers.0.bias"]
    assert tree_reduce(lambda n, a: n + a.size, model, 0) == 9


def test_value_and_grad_uses_trainable_parameters_and_restores_them() -> None:
    model = nn.Linear(2, 1)
    model.freeze(keys="bias")
    weight = model.weight
    x = mx.array([[1.0, 2.0], [3.0, 4.0]])
    loss, grads = nn.value_and_grad(model, lambda x: (model(x) ** 2).sum())(x)
    w, b = np.asarray(model.weight, np.float64), np.asarray(model.bias, np.float64)
    xs = np.asarray(x, np.float64)
    y = xs @ w.T + b
    np.testing.assert_allclose(float(loss), (y**2).sum(), rtol=1e-5)
    assert list(grads) == ["weight"]
    np.testing.assert_allclose(np.asarray(grads["weight"]), 2 * y.T @ xs, rtol=1e-5)
    assert model.weight is weight


def test_repr_lists_children() -> None:
    text = repr(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    assert text.splitlines() == [
        "Sequential(", "  (layers.0): Linear(input_dims=2, output_dims=3, bias=True)",
        "  (layers.1): ReLU()", ")"]


def test_save_weights_safetensors_round_trip(tmp_path) -> None:
    model = nn.Sequential(nn.Linear(3, 2), nn.RMSNorm(2))
    model.set_dtype(mx.bfloat16)
    path = str(tmp_path / "w.safetensors")
    model.save_weights(path)
    other = nn.Sequential(nn.Linear(3, 2), nn.RMSNorm(2)).load_weights(path)
    for (k, a), (_, b) in zip(tree_flatten(model.parameters()), tree_flatten(other.parameters())):
        assert b.dtype == mx.bfloat16, k
        np.testing.assert_array_equal(np.asarray(a.astype(mx.float32)),
                                      np.asarray(b.astype(mx.float32)))
