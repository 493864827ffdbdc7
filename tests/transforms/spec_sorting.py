"""Rule rows for sorting and selection (`nuvec.ops.sorting`)."""

from __future__ import annotations

import numpy as np

import nuvec as mx
from nuvec.ops import sorting as so
from nuvec.testing import OpSpec


def _matrix(rng):
    return [rng.standard_normal((3, 5))]


SPECS = [
    OpSpec("sort_last", lambda x: mx.sort(x), _matrix, covers=[so.Sort]),
    OpSpec("sort_axis0", lambda x: mx.sort(x, axis=0), _matrix, covers=[so.Sort]),
    OpSpec("sort_flat", lambda x: mx.sort(x, axis=None), _matrix, covers=[so.Sort]),
    OpSpec("argsort", lambda x: mx.argsort(x, axis=0), _matrix, covers=[so.ArgSort]),
    OpSpec("partition", lambda x: mx.partition(x, 2), _matrix, covers=[so.Partition]),
    OpSpec("argpartition", lambda x: mx.argpartition(x, -2, axis=0), _matrix,
           covers=[so.ArgPartition]),
    OpSpec("topk", lambda x: mx.topk(x, 2), _matrix, covers=[so.Partition]),
    OpSpec("topk_axis0", lambda x: mx.topk(x, 1, axis=0), _matrix, covers=[so.Partition]),
    OpSpec("searchsorted", lambda a, v: mx.searchsorted(a, v, side="right"),
           lambda rng: [np.sort(rng.standard_normal(6)), rng.standard_normal((2, 3))],
           covers=[so.SearchSorted]),
]
