"""Iterative topological sort over nodes (no recursion, so million-node chains are fine)."""

from __future__ import annotations

from typing import Callable, Iterable

from nuvec.graph.array import Node


def toposort(roots: Iterable[Node], expand: Callable[[Node], bool]) -> list[Node]:
    """Nodes reachable from `roots` through nodes for which `expand` is true, inputs first.

    A node for which `expand` is false is neither entered nor listed.
    """
    order: list[Node] = []
    seen: set[int] = set()
    for root in roots:
        if id(root) in seen:
            continue
        seen.add(id(root))
        if not expand(root):
            continue
        stack = [(root, 0)]
        while stack:
            node, i = stack[-1]
            inputs = node.inputs
            if i < len(inputs):
                stack[-1] = (node, i + 1)
                child = inputs[i]._node
                if id(child) not in seen:
                    seen.add(id(child))
                    if expand(child):
                        stack.append((child, 0))
            else:
                stack.pop()
                order.append(node)
    return order
