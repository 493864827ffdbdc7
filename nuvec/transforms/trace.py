"""What every transform shares: marking where a trace starts, tracing, walking the traced graph.

A transform wraps its primals in `Copy` nodes (`mark`), runs the function with tracing on
(`trace`), so nodes made meanwhile keep their graph, walks the nodes between the marks and the
outputs (`traced_graph`), calling each primitive's rule on its stream (`apply_rule`), and once
the outermost transform is done lets the traced nodes detach again (`release`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from nuvec.graph.array import Array, Node, record1, tracing
from nuvec.graph.device import stream as stream_context
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import COPY
from nuvec.graph.toposort import toposort
from nuvec.graph.tree import flatten

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


def mark(primals: Sequence[Array]) -> list[Array]:
    """Wraps each primal in a `Copy` node that starts the trace."""
    marked = []
    for p in primals:
        copy = record1(COPY, (p,), p.stream)
        copy._node.keep = True
        marked.append(copy)
    return marked


def trace(fun: Callable[..., Any], args: Sequence[Any], kwargs: dict | None = None) -> Any:
    """Calls `fun(*args, **kwargs)` with tracing on: the nodes it records keep their graph."""
    tracing.depth += 1
    try:
        return fun(*args, **(kwargs or {}))
    finally:
        tracing.depth -= 1


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
    roots = [leaf._node for leaf in flatten(list(trees))[0] if isinstance(leaf, Array)]
    for node in toposort(roots, lambda n: n.keep):
        node.keep = False
        if node.data is not None:
            node.detach()


def traced_graph(outputs: Sequence[Array], starts: set[Node]) -> list[Node]:
    """Traced nodes between the starts and the outputs, inputs first.

    A primitive with a `num_primals` attribute (custom functions, checkpoints) passes its later
    inputs through as values: transforms apply its own rules and do not walk into them.
    """
    blocked: set[Node] = set()

    def expand(n: Node) -> bool:
        primitive = n.primitive
        if primitive is None or n in starts or n in blocked:
            return False
        hidden = getattr(primitive, "num_primals", None)
        if hidden is not None:
            blocked.update(n.sources[hidden:])
        return True

    return toposort([o._node for o in outputs], expand)


def apply_rule(node: Node, rule: Callable[..., Any], *args: Any) -> Any:
    """Calls a rule of `node`'s primitive with `node`'s stream as the default stream."""
    if to_stream(None) is node.stream:
        return rule(*args)
    with stream_context(node.stream):
        return rule(*args)
