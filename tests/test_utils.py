"""`nuvec.utils` against the results `mlx.utils` documents for its tree functions."""

from __future__ import annotations

from collections import namedtuple

import pytest

import nuvec as mx
from nuvec.graph.tree import all_leaves, flatten, unflatten
from nuvec.utils import (
    tree_flatten,
    tree_map,
    tree_map_with_path,
    tree_merge,
    tree_reduce,
    tree_unflatten,
)

Pair = namedtuple("Pair", "first second")


def test_tree_map_keeps_structure_and_container_types():
    tree = {"a": [1, (2, 3)], "b": Pair(4, 5), "c": None}
    out = tree_map(lambda x: None if x is None else x * 10, tree)
    assert out == {"a": [10, (20, 30)], "b": Pair(40, 50), "c": None}
    assert type(out["a"][1]) is tuple and type(out["b"]) is Pair


def test_tree_map_with_rest_and_is_leaf():
    grads = {"w": [1.0, 2.0], "b": 3.0}
    params = {"w": [10.0, 20.0], "b": 30.0}
    assert tree_map(lambda p, g: p - g, params, grads) == {"w": [9.0, 18.0], "b": 27.0}
    # `rest` may be deeper where `tree` has a leaf: the subtree is passed whole
    assert tree_map(lambda x, y: (x, y), {"a": 1}, {"a": [2, 3]}) == {"a": (1, [2, 3])}
    # is_leaf stops the descent
    assert tree_map(len, {"a": [1, 2], "b": [3]}, is_leaf=lambda x: isinstance(x, list)) == {
        "a": 2, "b": 1}


def test_tree_map_with_rest_over_tuples_and_missing_children():
    a = {"p": Pair(1, (2, 3)), "q": [4]}
    b = {"p": Pair(10, (20, 30)), "q": [40], "unused": 0}
    out = tree_map(lambda x, y: x + y, a, b)
    assert out == {"p": Pair(11, (22, 33)), "q": [44]} and type(out["p"]) is Pair
    with pytest.raises(ValueError, match="^tree_map: tree argument 2 lacks the key 'a'"):
        tree_map(lambda x, y: x, {"a": 1}, {"b": 2})
    with pytest.raises(ValueError, match="^tree_map: tree argument 2 holds a list of 1 where"):
        tree_map(lambda x, y: x, [1, 2], [1])


def test_tree_map_over_arrays():
    out = tree_map(lambda x: x * 2, {"w": mx.ones((2,)), "layers": [mx.zeros((1,))]})
    assert out["w"].tolist() == [2.0, 2.0] and out["layers"][0].tolist() == [0.0]


def test_tree_map_with_path_gives_dotted_paths():
    tree = {"model": [{"w": 0, "b": 1}, {"w": 0, "b": 1}]}
    paths = []
    tree_map_with_path(lambda path, _: paths.append(path), tree)
    assert paths == ["model.0.w", "model.0.b", "model.1.w", "model.1.b"]
    assert tree_map_with_path(lambda p, x: p, [1, 2], path="root") == ["root.0", "root.1"]


@pytest.mark.parametrize(
    "tree, prefix, expected",
    [
        ([[[0]]], "", [("0.0.0", 0)]),
        ([[[0]]], ".hello", [("hello.0.0.0", 0)]),
        ({"a": {"b": 1, "c": [2, 3]}, "d": 4}, "", [("a.b", 1), ("a.c.0", 2), ("a.c.1", 3),
                                                     ("d", 4)]),
        (7, "", [("", 7)]),
        ({"a": [], "b": {}}, "", []),
    ],
    ids=["nested-lists", "prefix", "mixed", "leaf", "empty-containers"],
)
def test_tree_flatten(tree, prefix, expected):
    assert tree_flatten(tree, prefix) == expected


def test_tree_flatten_into_a_dict_and_with_is_leaf():
    assert tree_flatten({"a": [1, 2]}, destination={}) == {"a.0": 1, "a.1": 2}
    flat = tree_flatten({"a": [1, 2], "b": 3}, is_leaf=lambda x: isinstance(x, list))
    assert flat == [("a", [1, 2]), ("b", 3)]
    with pytest.raises(TypeError, match="^tree_flatten: destination must be a list or a dict"):
        tree_flatten([1], destination=())


@pytest.mark.parametrize(
    "flat, expected",
    [
        ([("hello.world", 42)], {"hello": {"world": 42}}),
        ([("0", "a"), ("1", "b")], ["a", "b"]),
        ([("0", "a"), ("2", "c")], ["a", {}, "c"]),
        ([("", 5)], 5),
        ({"layers.0.w": 1, "layers.1.w": 2}, {"layers": [{"w": 1}, {"w": 2}]}),
    ],
    ids=["dict", "list", "list-gap", "leaf", "from-dict"],
)
def test_tree_unflatten(flat, expected):
    assert tree_unflatten(flat) == expected


def test_flatten_unflatten_roundtrip():
    tree = {"model": {"layers": [{"w": 1, "b": 2}, {"w": 3, "b": 4}], "head": 5}}
    assert tree_unflatten(tree_flatten(tree)) == tree


class _Tuple(tuple):
    """A tuple subclass that is not a named tuple: a node, rebuilt as its own type (MLX)."""


class _List(list):
    """A list subclass: a node, rebuilt by the transforms as a plain list (MLX)."""


class _Dict(dict):
    """A dict subclass (as `nn.Module` is): a node, rebuilt as a plain dict (MLX)."""


@pytest.mark.parametrize("tree", [
    5,
    None,
    (),
    (1, 2.0, None),
    [[], {}, ()],
    ({"a": [1, (2, 3)], "b": Pair(4, [5, {"c": 6}])}, 7),
    [_Tuple((1, [2])), _Dict(x=3), {"d": _Dict(), "e": _List([8])}],
])
def test_all_leaves_are_the_leaves_flatten_lists(tree):
    leaves = all_leaves(tree)
    expected = flatten(tree)[0]
    assert len(leaves) == len(expected)
    assert all(a is b for a, b in zip(leaves, expected))


def test_unflatten_rebuilds_tuple_subclasses_and_plain_lists_and_dicts():
    tree = _Tuple([_Tuple([1]), Pair(2, 3), _List([4]), _Dict(x=5)])
    leaves, treedef = flatten(tree)
    assert leaves == [1, 2, 3, 4, 5]
    out = unflatten(treedef, [x * 10 for x in leaves])
    assert out == ((10,), (20, 30), [40], {"x": 50})
    assert [type(out), type(out[0]), type(out[1]), type(out[2]), type(out[3])] == [
        _Tuple, _Tuple, Pair, list, dict]
    assert flatten(_Tuple([1]))[1] != flatten((1,))[1]  # (compile traces each type apart)


def test_tree_map_keeps_list_and_tuple_subclasses():
    # mlx.utils rebuilds lists and tuples as `type(tree)(...)`, dicts as plain dicts
    out = tree_map(lambda x: x + 1, _Tuple([_List([1]), _Dict(a=2), Pair(3, 4)]))
    assert out == ([2], {"a": 3}, (4, 5))
    assert [type(out), type(out[0]), type(out[1]), type(out[2])] == [_Tuple, _List, dict, Pair]
    merged = tree_merge(_Tuple([1, None]), [None, 2])
    assert merged == (1, 2) and type(merged) is _Tuple


def test_tree_reduce():
    tree = {"a": [1, 2, 3], "b": [4, 5]}
    assert tree_reduce(lambda acc, x: acc + x, tree, 0) == 15
    assert tree_reduce(lambda acc, x: acc + x, tree) == 15
    assert tree_reduce(lambda acc, x: acc + [len(x)], tree, [],
                       is_leaf=lambda x: isinstance(x, list)) == [3, 2]
    assert tree_reduce(lambda acc, x: acc + x, {"a": []}, 7) == 7
    total = tree_reduce(lambda acc, x: acc + mx.sum(x), {"w": mx.ones((3,)), "b": mx.ones((2,))},
                        mx.array(0.0))
    assert total.item() == 5.0


def test_tree_merge():
    a = {"model": {"w": 1, "layers": [{"w": 2}, None]}, "step": 0}
    b = {"model": {"b": 3, "layers": [{}, {"w": 4}, {"w": 5}]}}
    assert tree_merge(a, b) == {
        "model": {"w": 1, "layers": [{"w": 2}, {"w": 4}, {"w": 5}], "b": 3}, "step": 0}
    assert tree_merge((1, None), [None, 2]) == (1, 2)
    assert tree_merge({}, {"a": 1}) == {"a": 1} and tree_merge([], None) is None
    assert tree_merge({"a": 1}, {"a": 2}, lambda x, y: x + y) == {"a": 3}


def test_tree_merge_needs_merge_fn_for_clashes():
    with pytest.raises(ValueError, match="^tree_merge: both trees hold a value"):
        tree_merge({"a": 1}, {"a": 2})
    with pytest.raises(ValueError, match="^tree_merge: both trees hold a value"):
        tree_merge({"a": [1]}, {"a": {"b": 2}})


TREE_ERRORS = [
    ("tree_map-missing-key", lambda: tree_map(lambda x, y: x, {"a": 1}, {"b": 1}), ValueError,
     r"^tree_map: tree argument 2 lacks the key 'a' of the first tree \(its keys: \['b'\]\) at "
     r"the root"),
    ("tree_map-nested-path", lambda: tree_map(lambda x, y: x, {"m": {"l": [1, 2]}},
                                              {"m": {"l": [1]}}), ValueError,
     r"^tree_map: tree argument 2 holds a list of 1 where the first tree holds a list of 2 "
     r"at 'm.l'"),
    ("tree_map-short-list", lambda: tree_map(lambda x, y: x, [1, 2], [1]), ValueError,
     "^tree_map: tree argument 2 holds a list of 1 where the first tree holds a list of 2"),
    ("tree_map-leaf-for-list", lambda: tree_map(lambda x, y: x, [1], 5), ValueError,
     "^tree_map: tree argument 2 holds a leaf of type int where the first tree holds a list"),
    ("tree_map-fn", lambda: tree_map(None, [1]), TypeError,
     "^tree_map: fn must be callable, got NoneType"),
    ("tree_map_with_path-missing-key",
     lambda: tree_map_with_path(lambda p, x, y: x, {"a": {"b": 1}}, {"a": {"c": 1}}),
     ValueError, "^tree_map_with_path: tree argument 2 lacks the key 'b' .* at 'a'"),
    ("tree_unflatten-int", lambda: tree_unflatten(3), TypeError,
     r"^tree_unflatten: expected a list of \(path, value\) pairs or a dict, got int"),
    ("tree_unflatten-str", lambda: tree_unflatten("abc"), TypeError,
     r"^tree_unflatten: expected a list of \(path, value\) pairs or a dict, got str"),
    ("tree_unflatten-not-pairs", lambda: tree_unflatten([("a", 1, 2)]), ValueError,
     r"^tree_unflatten: expected \(path, value\) pairs, got an entry of 3 values"),
    ("tree_unflatten-entry", lambda: tree_unflatten(["ab"]), TypeError,
     r"^tree_unflatten: expected \(path, value\) pairs, got an entry 'ab' \(str\)"),
    ("tree_unflatten-path", lambda: tree_unflatten([(1, 2)]), TypeError,
     "^tree_unflatten: paths must be strings, got 1"),
    ("tree_unflatten-gap", lambda: tree_unflatten([("a.0", 1), ("a.10000000000.w", 2)]),
     ValueError, r"^tree_unflatten: list index 10000000000 would fill 9999999999 missing "
     r"entries before it with \{\} \(at most 1048576\)"),
]


@pytest.mark.parametrize("call,error,message", [c[1:] for c in TREE_ERRORS],
                         ids=[c[0] for c in TREE_ERRORS])
def test_tree_utilities_reject_mismatched_trees(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_tree_map_keeps_errors_of_fn():
    def fn(x, y):
        raise KeyError("from fn")

    with pytest.raises(KeyError, match="from fn"):
        tree_map(fn, {"a": 1}, {"a": 2})
