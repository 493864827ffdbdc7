"""Trees: nested lists, tuples and dicts whose leaves are arrays (or anything else).

Subclasses are nodes too (an `nn.Module` is a dict, a named tuple a tuple), as in MLX.

`flatten` returns the leaves and a definition that `unflatten` fills with new leaves. The
public MLX-style helpers (`tree_map`, `tree_flatten` with key paths, ...) are in `nuvec.utils`.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

IsLeaf = Callable[[Any], bool] | None


class TreeDef:
    """The structure of a tree: its containers, with leaf slots to fill in order."""

    __slots__ = ("kind", "meta", "children")

    def __init__(self, kind: str, meta: Any = None, children: tuple[TreeDef, ...] = ()):
        self.kind = kind  # "leaf", "list", "tuple", "dict"
        self.meta = meta  # dict keys, or the tuple's type
        self.children = children

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TreeDef)
            and (self.kind, self.meta, self.children) == (other.kind, other.meta, other.children)
        )

    def __hash__(self) -> int:
        return hash((self.kind, self.children))

    def __repr__(self) -> str:
        if self.kind == "leaf":
            return "*"
        return f"{self.kind}({', '.join(map(repr, self.children))})"


LEAF = TreeDef("leaf")
_CONTAINERS = (list, tuple, dict)


def is_node(x: Any) -> bool:
    """Whether `x` is an inner node of a tree: a list, tuple or dict (subclasses too)."""
    return isinstance(x, _CONTAINERS)


def sequence_of(kind: type, values: list[Any]) -> Any:
    """A list or tuple of type `kind` holding `values` (a named tuple takes them as fields)."""
    return kind(*values) if hasattr(kind, "_fields") else kind(values)


def flatten(tree: Any, is_leaf: IsLeaf = None) -> tuple[list[Any], TreeDef]:
    """The leaves of `tree` in order (dicts by insertion order) and its structure.

    As in MLX's transforms, `unflatten` gives subclasses of dict and list (an `nn.Module`)
    back as plain dicts and lists, and tuples (named or not) as their own type.

    Example:
        >>> from nuvec.graph.tree import flatten
        >>> leaves, treedef = flatten({"a": 1, "b": [2, 3]})
        >>> leaves, treedef
        ([1, 2, 3], dict(*, list(*, *)))
    """
    leaves: list[Any] = []
    return leaves, _build_def(tree, is_leaf, leaves)


def is_mutable_node(x: Any) -> bool:
    """Whether `x` is a dict or list, subclasses (modules) included: a node updated in place."""
    return isinstance(x, (dict, list))


def _build_def(x: Any, is_leaf: IsLeaf, leaves: list[Any]) -> TreeDef:
    # Module-level recursion: a nested self-referencing closure would form a reference cycle
    # holding the leaves (arrays) until the garbage collector runs.
    if (is_leaf is not None and is_leaf(x)) or not isinstance(x, _CONTAINERS):
        leaves.append(x)
        return LEAF
    if isinstance(x, dict):
        return TreeDef("dict", tuple(x.keys()),
                       tuple(_build_def(v, is_leaf, leaves) for v in x.values()))
    if isinstance(x, list):
        return TreeDef("list", None, tuple(_build_def(v, is_leaf, leaves) for v in x))
    return TreeDef("tuple", type(x), tuple(_build_def(v, is_leaf, leaves) for v in x))


def unflatten(treedef: TreeDef, leaves: list[Any]) -> Any:
    """Rebuilds a tree of structure `treedef` from `leaves` in order.

    Example:
        >>> from nuvec.graph.tree import flatten, unflatten
        >>> leaves, treedef = flatten({"a": 1, "b": [2, 3]})
        >>> unflatten(treedef, [x * 10 for x in leaves])
        {'a': 10, 'b': [20, 30]}
    """
    return _build_tree(treedef, iter(leaves))


def _build_tree(d: TreeDef, leaves: Iterator[Any]) -> Any:
    if d.kind == "leaf":
        return next(leaves)
    values = [_build_tree(c, leaves) for c in d.children]
    if d.kind == "dict":
        return dict(zip(d.meta, values))
    if d.kind == "list":
        return values
    return sequence_of(d.meta, values)


def all_leaves(tree: Any) -> list[Any]:
    """The leaves of `tree` in `flatten`'s order, without building its structure: what `eval`
    takes, as MLX's, so `mx.eval(model)` evaluates the model's parameters.

    Example:
        >>> from nuvec.graph.tree import all_leaves
        >>> class Box(dict): pass
        >>> all_leaves([Box(a=1, b=[2]), (3,)])
        [1, 2, 3]
    """
    leaves: list[Any] = []
    if isinstance(tree, _CONTAINERS):
        _add_leaves(tree, leaves)
    else:
        leaves.append(tree)
    return leaves


def replace_leaves(tree: Any, replace: Callable[[Any], Any]) -> Any:
    """`tree` with each leaf `x` replaced by `replace(x)`, visited in `all_leaves`' order:
    dicts and lists (subclasses too: an `nn.Module`) are updated in place, tuples are rebuilt
    (so a tuple at the top comes back as a new tuple), as MLX fills captured state.

    Example:
        >>> from nuvec.graph.tree import replace_leaves
        >>> state = {"w": 1, "m": [2, (3, 4)]}
        >>> _ = replace_leaves(state, lambda x: x * 10)
        >>> state
        {'w': 10, 'm': [20, (30, 40)]}
    """
    if isinstance(tree, dict):
        for k in list(tree):
            tree[k] = replace_leaves(tree[k], replace)
        return tree
    if isinstance(tree, list):
        for i, x in enumerate(tree):
            tree[i] = replace_leaves(x, replace)
        return tree
    if isinstance(tree, tuple):
        return sequence_of(type(tree), [replace_leaves(x, replace) for x in tree])
    return replace(tree)


def _add_leaves(node: Any, leaves: list[Any]) -> None:
    # recursion, not a stack: twice as fast for the trees `eval` and the transforms get
    for x in node.values() if isinstance(node, dict) else node:
        if isinstance(x, _CONTAINERS):
            _add_leaves(x, leaves)
        else:
            leaves.append(x)
