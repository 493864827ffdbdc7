"""What every transform shares: marking where a trace starts, tracing, walking the traced graph.

A transform wraps its primals in `Copy` nodes (`mark`), runs the function with tracing on
(`trace`), so nodes made meanwhile keep their graph, walks the nodes between the marks and the
outputs (`traced_graph`), calling each primitive's rule on its stream (`apply_rule`), and once
the outermost transform is done lets the traced nodes detach again (`release`).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterator, Sequence

from nuvec.graph.array import Array, Node, record1, tracing
from nuvec.graph.device import stream as stream_context
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import COPY
from nuvec.graph.toposort import toposort
from nuvec.graph.tree import all_leaves, is_mutable_node, is_node, sequence_of

Key = tuple[Node, int]  # (node, output index); nodes hash by identity


def key_of(a: Array) -> Key:
    """The (node, output index) pair that identifies `a`'s value in a graph."""
    return (a._node, a._index)


def check_arrays(op: str, what: str, values: Any) -> list[Array]:
    """`values` as a list, checked to be a list or tuple of arrays."""
    if isinstance(values, Array) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{op}: {what} must be a list of arrays, got {type(values).__name__}")
    for v in values:
        if not isinstance(v, Array):
            raise TypeError(f"{op}: {what} must be arrays, got {type(v).__name__}")
    return list(values)


class _Marks(threading.local):
    """The `Copy` nodes `mark` makes while a `trace(..., marks=...)` collects them."""

    made: set[Node] | None = None


_marks = _Marks()


def mark(primals: Sequence[Array]) -> list[Array]:
    """Wraps each primal in a `Copy` node that starts the trace."""
    marked = []
    made = _marks.made
    for p in primals:
        copy = record1(COPY, (p,), p.stream)
        copy._node.keep = True
        marked.append(copy)
        if made is not None:
            made.add(copy._node)
    return marked


_TRACED_FUNCTION = {"vmap": "a vmapped function", "compile": "a compiled function",
                    "export_function": "an exported function", "exporter": "an exported function"}


def trace(fun: Callable[..., Any], args: Sequence[Any], kwargs: dict | None = None,
          op: str | None = None, marks: set[Node] | None = None) -> Any:
    """Calls `fun(*args, **kwargs)` with tracing on: the nodes it records keep their graph.

    With `op` (`"vmap"`, `"compile"`: transforms whose traced arrays are placeholders), an
    evaluation of a traced array inside `fun` fails with an error naming `op`. `marks`
    collects the marks of the transforms `fun` itself applies (those of enclosing
    transforms were made before), nested traces' included.
    """
    outer = _marks.made
    if marks is not None:
        _marks.made = marks
    tracing.depth += 1
    try:
        return fun(*args, **(kwargs or {}))
    except ValueError as exc:
        if op is None or not str(exc).startswith("eval: cannot evaluate a placeholder"):
            raise
        raise ValueError(
            f"{op}: attempting to evaluate an array inside {_TRACED_FUNCTION[op]} (eval, item, "
            "tolist, print or a conversion to NumPy of a traced array) is not allowed"
        ) from exc
    finally:
        tracing.depth -= 1
        if marks is not None:
            _marks.made = outer
            if outer is not None:
                outer |= marks


def untraced(fun: Callable[[], Any]) -> Any:
    """Runs `fun` outside any trace: its nodes free their graph once evaluated."""
    depth, tracing.depth = tracing.depth, 0
    try:
        return fun()
    finally:
        tracing.depth = depth


def release(*trees: Any) -> None:
    """Once the outermost transform is done, traced nodes drop their graph like any other node.

    Nodes made while tracing keep their inputs after evaluation (an outer transform may still
    walk them); at depth 0 nothing will, so they detach now (or when they are evaluated).
    """
    if tracing.depth:
        return
    # a walk through the kept nodes, in no particular order: clearing `keep` marks a node done
    stack = [leaf._node for leaf in all_leaves(trees) if isinstance(leaf, Array)]
    pop, push = stack.pop, stack.extend
    while stack:
        node = pop()
        if node.keep:
            node.keep = False
            push(node.sources)
            if node.data is not None:
                node.detach()


def traced_graph(outputs: Sequence[Array], starts: set[Node],
                 into_custom: bool = False) -> list[Node]:
    """Traced nodes between the starts and the outputs, inputs first.

    A primitive with a `num_primals` attribute (custom functions, checkpoints) passes its later
    inputs through as values: transforms apply its own rules and do not walk into them, unless
    `into_custom` (`compile`, which replays the function's own graph before the node).
    """
    blocked: set[Node] = set()

    def expand(n: Node) -> bool:
        primitive = n.primitive
        if primitive is None or n in starts or n in blocked:
            return False
        hidden = getattr(primitive, "num_primals", None)
        if hidden is not None and not into_custom:
            blocked.update(n.sources[hidden:])
        return True

    return toposort([o._node for o in outputs], expand)


def apply_rule(node: Node, rule: Callable[..., Any], *args: Any) -> Any:
    """Calls a rule of `node`'s primitive with `node`'s stream as the default stream."""
    if to_stream(None) is node.stream:
        return rule(*args)
    with stream_context(node.stream):
        return rule(*args)


Slots = dict[tuple[int, Any], tuple[Array, Key, Array]]


def fill_in_place(tree: Any, leaves: Iterator[Any], slots: Slots) -> Any:
    """`tree` with its leaves replaced in order from `leaves`, as MLX passes traced arguments.

    Lists and dicts (their subclasses too: a module) are updated in place, so the function
    sees (and may change) the caller's containers; tuples are immutable and are rebuilt (as
    their own type). The order is that of `flatten`. Each array put into a container is
    recorded in `slots` under `(id(container), index or key)` as `(new array, its key, the
    caller's array)`, for `restore_unchanged`.
    """
    if not is_node(tree):
        return next(leaves)
    mutable = is_mutable_node(tree)
    filled = tree if mutable else list(tree)
    for k in list(tree) if isinstance(tree, dict) else range(len(tree)):
        old = filled[k]
        new = filled[k] = fill_in_place(old, leaves, slots)
        if not mutable:
            continue
        _record(slots, tree, k, old, new)
    if mutable:
        return tree
    rebuilt = sequence_of(type(tree), filled)
    for k, (old, new) in enumerate(zip(tree, rebuilt)):
        _record(slots, rebuilt, k, old, new)
    return rebuilt


def _record(slots: Slots, container: Any, k: Any, old: Any, new: Any) -> None:
    if isinstance(new, Array) and isinstance(old, Array):
        first = slots.get((id(container), k))  # a container passed twice keeps its first record
        slots[(id(container), k)] = (new, key_of(new), old if first is None else first[2])


def restore_unchanged(tree: Any, slots: Slots, kept: list[Array]) -> Any:
    """`tree` with the caller's arrays back in the slots where the function left the array it
    was given unchanged (lists and dicts in place, tuples rebuilt); slots it wrote (or whose
    array it updated in place) keep the new value, as in MLX. The arrays so kept are added to
    `kept`.
    """
    if not is_node(tree):
        return tree
    mutable = is_mutable_node(tree)
    restored = tree if mutable else list(tree)
    for k in list(tree) if isinstance(tree, dict) else range(len(tree)):
        v = restored[k]
        given, key, old = slots.get((id(tree), k), (None, None, None))
        if given is not None and given is v and key_of(v) == key:
            restored[k] = old
        elif isinstance(v, Array):
            kept.append(v)
        else:
            restored[k] = restore_unchanged(v, slots, kept)
    if mutable:
        return tree
    return sequence_of(type(tree), restored)
