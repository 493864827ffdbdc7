"""Shared bodies of `nuvec.ops.sorting`."""

from __future__ import annotations

import math

import numpy as np

from nuvec.backends.common.registry import body
from nuvec.ops import sorting as so


def _sortable(x: np.ndarray) -> np.ndarray:
    """bfloat16 has no NumPy sort; it sorts as float32 (exactly representable)."""
    return x.astype(np.float32) if x.dtype.name == "bfloat16" else x


@body(so.Sort)
def sort(xp, p, x):
    return xp.sort(_sortable(x), axis=p.axis)


@body(so.ArgSort)
def argsort(xp, p, x):
    return xp.argsort(_sortable(x), axis=p.axis, kind="stable")


@body(so.Partition)
def partition(xp, p, x):
    # Gathered through argpartition, so that the rules (which recompute the indices) route
    # each cotangent to exactly the element the forward pass put there.
    order = xp.argpartition(_sortable(x), p.kth, axis=p.axis)
    return xp.take_along_axis(x, order, axis=p.axis)


@body(so.ArgPartition)
def argpartition(xp, p, x):
    return xp.argpartition(_sortable(x), p.kth, axis=p.axis)


@body(so.SearchSorted)
def searchsorted(xp, p, a, v):
    a, v = _sortable(a), _sortable(v)
    if p.batch == 0:
        return xp.searchsorted(a, v, side=p.side)
    # Batched rows: count, per value, the row entries before its insertion point.
    lead = a.shape[: p.batch]
    batch = math.prod(lead)  # explicit sizes: a -1 is ambiguous when a batch is empty
    rows = a.reshape(batch, a.shape[-1])
    values = v.reshape(batch, math.prod(v.shape[p.batch:]))
    before = xp.less if p.side == "left" else xp.less_equal
    counts = before(rows[:, None, :], values[:, :, None]).sum(axis=-1)
    return counts.reshape(*lead, *v.shape[p.batch:])
