"""`export_to_dot`, as MLX's: the unevaluated graph behind some arrays, in Graphviz's DOT."""

from __future__ import annotations

import itertools
import string
from typing import Any, Iterator

from nuvec.graph.array import Array
from nuvec.graph.toposort import toposort
from nuvec.graph.tree import all_leaves

__all__ = ["export_to_dot"]


def _letters() -> Iterator[str]:
    """A, B, ..., Z, AA, AB, ...: the names of arrays not named by the caller."""
    for size in itertools.count(1):
        for letters in itertools.product(string.ascii_uppercase, repeat=size):
            yield "".join(letters)


def export_to_dot(file: Any, *args: Any, **kwargs: Any) -> None:
    """Writes the graph computing `args` (arrays, or trees of them) to `file` in DOT format.

    The graph holds every unevaluated node the outputs need: a rectangle per primitive, an
    edge from each array it reads and to each array it makes. Evaluated arrays are the
    sources. Arrays are named A, B, ... in the order met, or by the keyword that passes them
    (`x=x`); a keyword array computed here is an output too, as MLX's. View it with Graphviz
    (`dot -Tsvg graph.dot`).

    Args:
        file: a path, or an object with a `write(str)` method.
        *args: the output arrays.
        **kwargs: arrays to name (in or out of the graph).

    Raises:
        TypeError: if `file` is neither a path nor writable, or a leaf is not an array.

    Example:
        >>> import io
        >>> import nuvec as mx
        >>> x = mx.array(1.0)
        >>> out = io.StringIO()
        >>> mx.export_to_dot(out, mx.exp(x), x=x)
        >>> print(out.getvalue())
        digraph {
        { rank=source; "x"; }
        { 0 [label="Exp", shape=rectangle]; }
        "x" -> 0
        { rank=sink; "A"; }
        0 -> "A"
        }
        <BLANKLINE>
    """
    if not isinstance(file, str) and not callable(getattr(file, "write", None)):
        raise TypeError(f"export_to_dot: file must be a path or have a write method, got "
                        f"{type(file).__name__}")
    outputs = all_leaves(args) + list(kwargs.values())
    for leaf in outputs:
        if not isinstance(leaf, Array):
            raise TypeError(f"export_to_dot: the outputs must be arrays, got "
                            f"{type(leaf).__name__}")
    names = {(a._node, a._index): key for key, a in kwargs.items()}
    fresh = _letters()
    sinks = {(a._node, a._index) for a in outputs}

    def name(key: Any) -> str:
        if key not in names:
            names[key] = next(fresh)
        return names[key]

    nodes = toposort([a._node for a in outputs],
                     lambda n: n.data is None and n.primitive is not None)
    computed = set(nodes)
    lines = ["digraph {"]
    drawn: set[Any] = set()
    for number, node in enumerate(nodes):
        for key in zip(node.sources, node.indices):
            if key not in drawn and key[0] not in computed:
                lines.append(f'{{ rank=source; "{name(key)}"; }}')
                drawn.add(key)
        lines.append(f'{{ {number} [label="{node.primitive.name}", shape=rectangle]; }}')
        lines += [f'"{name(key)}" -> {number}' for key in zip(node.sources, node.indices)]
        for index in range(len(node.shapes)):
            key = (node, index)
            rank = "rank=sink; " if key in sinks else ""
            lines.append(f'{{ {rank}"{name(key)}"; }}')
            lines.append(f'{number} -> "{name(key)}"')
            drawn.add(key)
    lines += [f'{{ rank=sink; "{name(key)}"; }}' for key in dict.fromkeys(
        (a._node, a._index) for a in outputs) if key not in drawn]  # evaluated outputs
    lines.append("}")
    text = "\n".join(lines) + "\n"
    if isinstance(file, str):
        with open(file, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        file.write(text)
