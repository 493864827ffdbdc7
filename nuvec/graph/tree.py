"""Trees: nested lists, tuples and dicts whose leaves are arrays (or anything else).

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
        self.meta = meta  # dict keys, or the tuple type (for named tuples)
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
    """Whether `x` is an inner node of a tree: a list, tuple (named tuples too) or dict."""
    return type(x) in _CONTAINERS or (isinstance(x, tuple) and hasattr(x, "_fields"))


def flatten(tree: Any, is_leaf: IsLeaf = None,
            subclasses: bool = False) -> tuple[list[Any], TreeDef]:
    """The leaves of `tree` in order (dicts by insertion order) and its structure.

    With `subclasses`, subclasses of dict and list (an `nn.Module`) are nodes too, as in
    MLX's transforms; they come back from `unflatten` as plain dicts and lists.

    Example:
        >>> import nuvec as mx
        >>> leaves, treedef = mx.utils.flatten({"a": 1, "b": [2, 3]})
        >>> leaves, treedef
        ([1, 2, 3], dict(*, list(*, *)))
    """
    leaves: list[Any] = []
    return leaves, _build_def(tree, is_leaf, leaves, subclasses)


def is_mutable_node(x: Any) -> bool:
    """Whether `x` is a dict or list, subclasses (modules) included: a node updated in place."""
    return isinstance(x, (dict, list))


def _build_def(x: Any, is_leaf: IsLeaf, leaves: list[Any], subclasses: bool) -> TreeDef:
    # Module-level recursion: a nested self-referencing closure would form a reference cycle
    # holding the leaves (arrays) until the garbage collector runs.
    if (is_leaf is not None and is_leaf(x)) or not (
            is_node(x) or (subclasses and is_mutable_node(x))):
        leaves.append(x)
        return LEAF
    if isinstance(x, dict):
        return TreeDef("dict", tuple(x.keys()),
                       tuple(_build_def(v, is_leaf, leaves, subclasses) for v in x.values()))
    if isinstance(x, list):
        return TreeDef("list", None,
                       tuple(_build_def(v, is_leaf, leaves, subclasses) for v in x))
    return TreeDef("tuple", type(x),
                   tuple(_build_def(v, is_leaf, leaves, subclasses) for v in x))


def unflatten(treedef: TreeDef, leaves: list[Any]) -> Any:
    """Rebuilds a tree of structure `treedef` from `leaves` in order.

    Example:
        >>> import nuvec as mx
        >>> leaves, treedef = mx.utils.flatten({"a": 1, "b": [2, 3]})
        >>> mx.utils.unflatten(treedef, [x * 10 for x in leaves])
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
    if d.meta is tuple:
        return tuple(values)
    return d.meta(*values)


def all_leaves(tree: Any) -> list[Any]:
    """The leaves of `tree`, walking into subclasses of dict, list and tuple too (an
    `nn.Module` is a dict): what `eval` takes, as MLX's, so `mx.eval(model)` evaluates the
    model's parameters.

    Example:
        >>> from nuvec.graph.tree import all_leaves
        >>> class Box(dict): pass
        >>> all_leaves([Box(a=1, b=[2]), 3])
        [1, 2, 3]
    """
    leaves: list[Any] = []
    stack = [tree]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            stack.extend(reversed(list(x.values())))
        elif isinstance(x, (list, tuple)):
            stack.extend(reversed(x))
        else:
            leaves.append(x)
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
        items = [replace_leaves(x, replace) for x in tree]
        return type(tree)(*items) if hasattr(tree, "_fields") else type(tree)(items)
    return replace(tree)


def tree_leaves(tree: Any) -> list[Any]:
    """The leaves of a tree in `flatten`'s order, without building its structure.

    Example:
        >>> from nuvec.graph.tree import tree_leaves
        >>> tree_leaves(({"a": 1, "b": [2, 3]}, 4))
        [1, 2, 3, 4]
    """
    leaves: list[Any] = []
    if is_node(tree):
        _add_leaves(tree, leaves)
    else:
        leaves.append(tree)
    return leaves


def _add_leaves(node: Any, leaves: list[Any]) -> None:
    # `is_node` inline: this runs for every member of the trees `eval` and the transforms get
    for x in node.values() if type(node) is dict else node:
        if type(x) in _CONTAINERS or (isinstance(x, tuple) and hasattr(x, "_fields")):
            _add_leaves(x, leaves)
        else:
            leaves.append(x)
