"""The CPU's `broadcast_to`: a read-only view of a C-contiguous array made directly from its
buffer and the broadcast strides, in a few NumPy calls where `np.broadcast_to` (built on an
iterator) takes several times as long; other layouts go through `np.broadcast_to`.

On the two-core machines of docs/performance.md `np.broadcast_to` of a 0-d array takes 6 to 9
us, about what NumPy takes to compute a small product; this view takes about 1 us. Fused
chains broadcast their inputs at each call (`nuvec.backends.numpy.fused`), and so does every
`BroadcastTo` node.
"""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.ops.shape import BroadcastTo

__all__ = ["broadcast"]


def broadcast(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`np.broadcast_to(x, shape)`: a read-only view of `x` (whose shape broadcasts to `shape`,
    as the graph has checked) repeating its values along the new and the size-1 axes.

    Example:
        >>> import numpy as np
        >>> from nuvec.backends.numpy.broadcast import broadcast
        >>> v = broadcast(np.array([1.0, 2.0]), (2, 2))
        >>> v.tolist(), v.flags.writeable
        ([[1.0, 2.0], [1.0, 2.0]], False)
    """
    if x.size == 1:  # (contiguous, whatever its strides say)
        strides: tuple[int, ...] = (0,) * len(shape)
    elif x.flags.c_contiguous and x.size:
        lead = len(shape) - x.ndim
        strides = (0,) * lead + tuple(0 if n == 1 else s for n, s in zip(x.shape, x.strides))
    else:
        return np.broadcast_to(x, shape)
    view = np.ndarray(shape, x.dtype, x, 0, strides)
    view.setflags(write=False)
    return view


@kernel(BroadcastTo, replace=True)
def broadcast_to(p, x):
    return broadcast(x, p.shape)
