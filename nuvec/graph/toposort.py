"""Iterative topological sort over nodes (no recursion, so million-node chains are fine)."""

from __future__ import annotations

from typing import Callable, Iterable

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
