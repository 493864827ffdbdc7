"""Tree utilities as `mlx.utils`: map, flatten to dotted keys, unflatten, reduce and merge.

A tree is nested lists, tuples (named tuples included) and dicts, subclasses too (an
`nn.Module` is a dict, so these walk into models as MLX's do); anything else is a leaf. The
structure-only helpers the transforms use live in `nuvec.graph.tree`.
"""

from __future__ import annotations

from itertools import zip_longest
from typing import Any, Callable

from nuvec.graph.tree import IsLeaf, sequence_of

__all__ = [
    "tree_map", "tree_map_with_path", "tree_flatten", "tree_unflatten", "tree_reduce", "tree_merge",
]


_NODES = (list, tuple, dict)


def _is_leaf(tree: Any, is_leaf: IsLeaf) -> bool:
    return (is_leaf is not None and is_leaf(tree)) or not isinstance(tree, _NODES)


def _rebuild(tree: Any, values: list[Any]) -> Any:
    """A container of `tree`'s kind holding `values` (keys of a dict in order): as in MLX, a
    dict subclass, a module, gives a plain dict; lists and tuples keep their type."""
    if isinstance(tree, dict):
        return dict(zip(tree.keys(), values))
    return sequence_of(type(tree), values)


def _children(tree: Any) -> list[tuple[Any, Any]]:
    """(key, child) pairs of a container: dict keys, or positions."""
    return list(tree.items()) if isinstance(tree, dict) else list(enumerate(tree))


def tree_map(fn: Callable[..., Any], tree: Any, *rest: Any, is_leaf: IsLeaf = None) -> Any:
    """Applies `fn` to the leaves of `tree`, returning a tree of the same structure.

    Args:
        fn: called as `fn(leaf, *corresponding_leaves_of_rest)`.
        tree: the tree whose structure the result has.
        *rest: trees with `tree`'s structure (or deeper: their subtrees are passed whole at
            positions where `tree` has a leaf).
        is_leaf: optional predicate marking extra leaves (containers passed to `fn` whole).

    Returns:
        The tree of `fn`'s results.

    Raises:
        ValueError: if a tree of `rest` lacks a child that `tree` has (a key of a dict, a
            position of a list or tuple), or holds a leaf where `tree` has a container.

    Example:
        >>> from nuvec.utils import tree_map
        >>> tree_map(lambda x: x * 2, {"a": [1, 2], "b": 3})
        {'a': [2, 4], 'b': 6}
    """
    _check_callable("tree_map", fn)
    try:
        return _map_with_rest(fn, tree, rest, is_leaf)
    except _Mismatch as error:
        raise error.public("tree_map") from None


class _Mismatch(ValueError):
    """A tree of `rest` that lacks a child of `tree`; `keys` (the path) is filled in while
    the walk unwinds, so a valid walk builds no path."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message, self.keys = message, []

    def public(self, name: str) -> ValueError:
        path = ".".join(str(k) for k in reversed(self.keys))
        where = f"at {path!r}" if path else "at the root"
        return ValueError(f"{name}: {self.message} {where}")


def _check_children(tree: Any, rest: Any) -> None:
    """Raises `_Mismatch` if a tree of `rest` lacks a child of the container `tree` (the
    check behind a failed lookup, so the walk itself pays nothing)."""
    for position, other in enumerate(rest, start=1):
        if isinstance(tree, dict):
            if not isinstance(other, dict):
                raise _Mismatch(f"tree argument {position + 1} holds {_kind(other)} where "
                                f"the first tree holds a dict")
            missing = [k for k in tree if k not in other]
            if missing:
                raise _Mismatch(f"tree argument {position + 1} lacks the key {missing[0]!r} "
                                f"of the first tree (its keys: {list(other)})")
        elif not isinstance(other, (list, tuple)) or len(other) < len(tree):
            raise _Mismatch(f"tree argument {position + 1} holds {_kind(other)} where the "
                            f"first tree holds {_kind(tree)}")


def _kind(tree: Any) -> str:
    if isinstance(tree, (list, tuple)):
        return f"a {type(tree).__name__} of {len(tree)}"
    return f"a leaf of type {type(tree).__name__}"


def _check_callable(name: str, fn: Any) -> None:
    if not callable(fn):
        raise TypeError(f"{name}: fn must be callable, got {type(fn).__name__}")


def _map_with_rest(fn: Callable[..., Any], tree: Any, rest: Any, is_leaf: IsLeaf) -> Any:
    """`tree_map(fn, tree, *rest, is_leaf=is_leaf)` (module-level recursion, `rest` passed as
    one sequence: the optimizers' path)."""
    if _is_leaf(tree, is_leaf):
        return fn(tree, *rest)
    key = None
    try:
        if isinstance(tree, dict):
            out = {}
            for key, child in tree.items():
                out[key] = _map_with_rest(fn, child, [r[key] for r in rest], is_leaf)
            return out
        values = []
        for key, child in enumerate(tree):
            values.append(_map_with_rest(fn, child, [r[key] for r in rest], is_leaf))
        return _rebuild(tree, values)
    except _Mismatch as error:  # a deeper level's: add this level's key to its path
        error.keys.append(key)
        raise
    except (KeyError, IndexError, TypeError):  # a lookup here, or an error of `fn`
        _check_children(tree, rest)
        raise


def tree_map_with_path(
    fn: Callable[..., Any], tree: Any, *rest: Any, is_leaf: IsLeaf = None,
    path: str | None = None,
) -> Any:
    """Like `tree_map`, but `fn` receives the leaf's dotted path first: `fn(path, leaf, *rest)`.

    Args:
        fn: called as `fn(path, leaf, *corresponding_leaves_of_rest)`.
        tree: the tree whose structure the result has.
        *rest: trees with `tree`'s structure.
        is_leaf: optional predicate marking extra leaves.
        path: the path of `tree` itself (the prefix of every path).

    Returns:
        The tree of `fn`'s results.

    Example:
        >>> from nuvec.utils import tree_map_with_path
        >>> tree_map_with_path(lambda p, x: p, {"a": [1, 2]})
        {'a': ['a.0', 'a.1']}

    Raises:
        ValueError: if a tree of `rest` lacks a child that `tree` has.
    """
    _check_callable("tree_map_with_path", fn)
    if _is_leaf(tree, is_leaf):
        return fn(path, tree, *rest)
    try:
        _check_children(tree, rest)
    except _Mismatch as error:
        where = f"at {path!r}" if path is not None else "at the root"
        raise ValueError(f"tree_map_with_path: {error.message} {where}") from None
    return _rebuild(tree, [
        tree_map_with_path(fn, child, *(r[key] for r in rest), is_leaf=is_leaf,
                           path=str(key) if path is None else f"{path}.{key}")
        for key, child in _children(tree)
    ])


def tree_flatten(
    tree: Any, prefix: str = "", is_leaf: IsLeaf = None, destination: list | dict | None = None
) -> list[tuple[str, Any]] | dict[str, Any]:
    """The leaves of `tree` with their dotted paths: `[("a.0.b", leaf), ...]`.

    List and tuple children are keyed by position, dict children by key.

    Args:
        tree: the tree.
        prefix: put before every key, starting with the separator as in MLX:
            `prefix=".model"` gives keys like `"model.a"`.
        is_leaf: optional predicate marking extra leaves.
        destination: a list to extend or a dict to fill (default: a new list).

    Returns:
        `destination` with the (path, leaf) pairs.

    Raises:
        TypeError: if `destination` is neither a list nor a dict.

    Example:
        >>> from nuvec.utils import tree_flatten
        >>> tree_flatten([[1, 2], {"a": 3}])
        [('0.0', 1), ('0.1', 2), ('1.a', 3)]
    """
    if destination is None:
        destination = []
    if isinstance(destination, list):
        add = lambda key, value: destination.append((key, value))  # noqa: E731
    elif isinstance(destination, dict):
        add = destination.__setitem__
    else:
        raise TypeError(
            f"tree_flatten: destination must be a list or a dict, got {type(destination).__name__}"
        )
    stack = [(prefix, tree)]
    while stack:
        path, node = stack.pop()
        if _is_leaf(node, is_leaf):
            add(path[1:], node)
            continue
        stack.extend((f"{path}.{key}", child) for key, child in reversed(_children(node)))
    return destination


def tree_unflatten(tree: list[tuple[str, Any]] | dict[str, Any]) -> Any:
    """Rebuilds a tree from `tree_flatten`'s (path, leaf) pairs.

    Levels whose keys are all integers become lists (missing positions are filled with empty
    dicts, as MLX does); other levels become dicts.

    Args:
        tree: a list of (dotted path, leaf) pairs, or a dict from path to leaf.

    Returns:
        The nested lists and dicts.

    Example:
        >>> from nuvec.utils import tree_unflatten
        >>> tree_unflatten([("a.0", 1), ("a.1", 2), ("b", 3)])
        {'a': [1, 2], 'b': 3}

    Raises:
        TypeError: if `tree` is neither a dict nor a list or tuple of (str, value) pairs.
        ValueError: for an entry that is not a pair, or a list index past more than
            2**20 missing entries.
    """
    return _unflatten(_flat_items(tree))


def _flat_items(tree: Any) -> list[tuple[str, Any]]:
    """`tree_unflatten`'s argument as a list of (path, value) pairs, checked."""
    if isinstance(tree, dict):
        items = list(tree.items())
    elif isinstance(tree, (list, tuple)):
        items = list(tree)
    else:
        raise TypeError(f"tree_unflatten: expected a list of (path, value) pairs or a dict, "
                        f"got {type(tree).__name__}")
    for item in items:
        if not isinstance(item, (list, tuple)):
            raise TypeError(f"tree_unflatten: expected (path, value) pairs, got an entry "
                            f"{item!r} ({type(item).__name__})")
        if len(item) != 2:
            raise ValueError(f"tree_unflatten: expected (path, value) pairs, got an entry of "
                             f"{len(item)} values: {item!r}")
        if not isinstance(item[0], str):
            raise TypeError(f"tree_unflatten: paths must be strings, got {item[0]!r} "
                            f"({type(item[0]).__name__})")
    return items


# Missing list entries `tree_unflatten` fills with `{}` before an index (a model's layers that
# a partial checkpoint leaves out); a larger gap is a malformed path, not a list to build.
_MAX_LIST_GAP = 1 << 20


def _unflatten(items: list[tuple[str, Any]]) -> Any:
    """`tree_unflatten` of checked pairs."""
    if len(items) == 1 and items[0][0] == "":
        return items[0][1]
    children: dict[str, list[tuple[str, Any]]] = {}
    for key, value in items:
        head, _, tail = key.partition(".")
        children.setdefault(head, []).append((tail, value))
    if children and all(k.lstrip("-").isdigit() for k in children):
        out: list[Any] = []
        for index, key in sorted((int(k), k) for k in children):
            if index - len(out) > _MAX_LIST_GAP:
                raise ValueError(
                    f"tree_unflatten: list index {key} would fill {index - len(out)} missing "
                    f"entries before it with {{}} (at most {_MAX_LIST_GAP})")
            out.extend({} for _ in range(index - len(out)))
            out.append(_unflatten(children[key]))
        return out
    return {k: _unflatten(v) for k, v in children.items()}


def tree_reduce(
    fn: Callable[[Any, Any], Any], tree: Any, initializer: Any = None, is_leaf: IsLeaf = None
) -> Any:
    """Folds the leaves of `tree` with `fn(accumulator, leaf)`, in flattening order.

    Args:
        fn: the reduction.
        tree: the tree.
        initializer: the first accumulator; without one, the first leaf is.
        is_leaf: optional predicate marking extra leaves.

    Returns:
        The final accumulator (`initializer` for a tree without leaves).

    Example:
        >>> from nuvec.utils import tree_reduce
        >>> tree_reduce(lambda acc, x: acc + x, {"a": [1, 2], "b": 3})
        6
    """
    accumulator = initializer
    first = initializer is None
    for _, leaf in tree_flatten(tree, is_leaf=is_leaf):
        if first:
            accumulator, first = leaf, False
        else:
            accumulator = fn(accumulator, leaf)
    return accumulator


def _absent(tree: Any) -> bool:
    return tree is None or (isinstance(tree, (dict, list, tuple)) and len(tree) == 0)


def tree_merge(
    tree_a: Any, tree_b: Any, merge_fn: Callable[[Any, Any], Any] | None = None
) -> Any:
    """Merges two trees into one holding the values of both: a deep `dict.update`.

    None and empty containers count as absent, so the other tree's value is kept there. Dicts
    merge key by key (`tree_a`'s keys first), lists and tuples position by position (the
    result has `tree_a`'s container type and the longer length); where both trees hold a
    value that is not a matching container, `merge_fn(a, b)` decides.

    Args:
        tree_a: the first tree.
        tree_b: the second tree.
        merge_fn: combines two values found at one position.

    Returns:
        The merged tree (None when both are absent).

    Raises:
        ValueError: if both trees hold a value at one position and `merge_fn` is None.

    Example:
        >>> from nuvec.utils import tree_merge
        >>> tree_merge({"a": [1, None], "b": 2}, {"a": [None, 3], "c": 4})
        {'a': [1, 3], 'b': 2, 'c': 4}
    """
    if _absent(tree_a) or _absent(tree_b):
        if _absent(tree_a) and _absent(tree_b):
            return None
        return tree_b if _absent(tree_a) else tree_a
    if isinstance(tree_a, dict) and isinstance(tree_b, dict):
        keys = list(tree_a) + [k for k in tree_b if k not in tree_a]
        return {k: tree_merge(tree_a.get(k), tree_b.get(k), merge_fn) for k in keys}
    if isinstance(tree_a, (list, tuple)) and isinstance(tree_b, (list, tuple)):
        pairs = zip_longest(tree_a, tree_b)
        return _rebuild(tree_a, [tree_merge(a, b, merge_fn) for a, b in pairs])
    if merge_fn is None:
        raise ValueError("tree_merge: both trees hold a value at one position and no merge_fn "
                         "was given")
    return merge_fn(tree_a, tree_b)
