"""CPU kernels of `nuvec.ops.sorting`."""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.ops import sorting as so


def _sortable(x: np.ndarray) -> np.ndarray:
    """bfloat16 has no NumPy sort; it sorts as float32 (exactly representable)."""
    return x.astype(np.float32) if x.dtype.name == "bfloat16" else x


@kernel(so.Sort)
def sort(p, x):
    return np.sort(_sortable(x), axis=p.axis)


@kernel(so.ArgSort)
def argsort(p, x):
    return np.argsort(_sortable(x), axis=p.axis, kind="stable")


@kernel(so.Partition)
def partition(p, x):
    # Gathered through argpartition, so that the rules (which recompute the indices) route
    # each cotangent to exactly the element the forward pass put there.
    order = np.argpartition(_sortable(x), p.kth, axis=p.axis)
    return np.take_along_axis(x, order, axis=p.axis)


@kernel(so.ArgPartition)
def argpartition(p, x):
    return np.argpartition(_sortable(x), p.kth, axis=p.axis)


@kernel(so.SearchSorted)
def searchsorted(p, a, v):
    a, v = _sortable(a), _sortable(v)
    if p.batch == 0:
        return np.searchsorted(a, v, side=p.side)
    # Batched rows: count, per value, the row entries before its insertion point.
    lead = a.shape[: p.batch]
    batch = int(np.prod(lead))  # explicit sizes: a -1 is ambiguous when a batch is empty
    rows = a.reshape(batch, a.shape[-1])
    values = v.reshape(batch, int(np.prod(v.shape[p.batch:])))
    before = np.less if p.side == "left" else np.less_equal
    counts = before(rows[:, None, :], values[:, :, None]).sum(axis=-1)
    return counts.reshape(*lead, *v.shape[p.batch:])
