"""Iterative topological sort over nodes (no recursion, so million-node chains are fine)."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from nuvec.graph.array import Node


def toposort(roots: Iterable[Node], expand: Callable[[Node], bool]) -> list[Node]:
    """Nodes reachable from `roots` through nodes for which `expand` is true, inputs first.

    A node for which `expand` is false is neither entered nor listed.
    """
    order: list[Node] = []
    seen: set[Node] = set()  # nodes hash by identity
    mark = seen.add
    for root in roots:
        if root in seen:
            continue
        mark(root)
        if not expand(root):
            continue
        # each entry keeps an iterator over its node's sources, resumed when a child is done
        stack = [(root, iter(root.sources))]
        push = stack.append
        while stack:
            node, rest = stack[-1]
            for child in rest:
                if child not in seen:
                    mark(child)
                    if expand(child):
                        push((child, iter(child.sources)))
                        break
            else:
                stack.pop()
                order.append(node)
    return order


def claim_order(roots: list[Node], batch: Any, waits: set[Any],
                invalid: Callable[[Node], Exception]) -> tuple[list[Node], Any]:
    """The unevaluated nodes `roots` need that no other evaluation holds, inputs first, each
    claimed for `batch` (its `pending` set); the batches holding other needed nodes are added to
    `waits`. Also returns their one stream, or None if they span several.

    `toposort` with the evaluator's claim inline (this runs once per operation): a claimed
    node is marked by its `pending`, so no set of seen nodes is kept. A node without data and
    without primitive (a placeholder) raises `invalid(node)`, every claim undone.
    """
    order: list[Node] = []
    append = order.append
    stream: Any = None  # the stream of the first claimed node
    mixed = False
    stack: list[tuple[Node, Iterator[Node]]] = []
    try:
        for root in roots:
            if root.data is not None:
                continue
            if root.pending is not None:
                if root.pending is not batch:
                    waits.add(root.pending)
                continue
            if root.primitive is None:
                raise invalid(root)
            root.pending = batch
            if stream is None:
                stream = root.stream
            elif root.stream is not stream:
                mixed = True
            stack.append((root, iter(root.sources)))
            push = stack.append
            while stack:
                node, rest = stack[-1]
                for child in rest:
                    if child.data is not None:
                        continue
                    other = child.pending
                    if other is None:
                        if child.primitive is None:
                            raise invalid(child)
                        child.pending = batch
                        if child.stream is not stream:
                            mixed = True
                        push((child, iter(child.sources)))
                        break
                    if other is not batch:
                        waits.add(other)
                else:
                    stack.pop()
                    append(node)
    except BaseException:
        for node in order:
            node.pending = None
        for node, _ in stack:
            node.pending = None
        raise
    return order, None if mixed else stream
