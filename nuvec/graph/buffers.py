"""`get_array_buffer_size`, as MLX's: the bytes of the buffers behind evaluated arrays."""

from __future__ import annotations

from typing import Any

from nuvec.graph.array import Array
from nuvec.graph.memory import root_buffer
from nuvec.graph.tree import all_leaves

__all__ = ["get_array_buffer_size"]


def get_array_buffer_size(*args: Any) -> int:
    """The bytes of the distinct buffers backing the arrays in `args` (trees of arrays; other
    leaves are ignored). A view counts its whole buffer, and a buffer shared by several arrays
    counts once.

    Raises:
        ValueError: if an array is not evaluated yet.

    Example:
        >>> import nuvec as mx
        >>> a = mx.arange(10.0)
        >>> view = a[2:5]
        >>> mx.eval(a, view)
        >>> mx.get_array_buffer_size(a, view)
        40
    """
    seen: set[int] = set()
    total = 0
    for leaf in all_leaves(args):
        if not isinstance(leaf, Array):
            continue
        outputs = leaf._node.data
        if outputs is None:
            raise ValueError(f"get_array_buffer_size: arrays must be evaluated before querying "
                             f"their buffer size, got an unevaluated array of shape {leaf.shape}")
        root = root_buffer(outputs[leaf._index])
        if id(root) not in seen:
            seen.add(id(root))
            total += root.nbytes
    return total
