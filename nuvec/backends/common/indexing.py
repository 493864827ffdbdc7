"""Shared bodies of `nuvec.ops.indexing`: NumPy fancy indexing and `ufunc.at` scatters.

NumPy checks every index (negative ones wrap once); an out-of-range index raises IndexError,
which the evaluator reports as an `EvaluationError`.
"""

from __future__ import annotations

import numpy as np

from nuvec.backends.common.registry import body
from nuvec.ops import indexing as ix

_ACCUMULATE = {"add": "add", "multiply": "multiply", "max": "maximum", "min": "minimum"}


@body(ix.Gather)
def gather(xp, p, x, *indices):
    if len(indices) == 1:
        # take copies whole rows at once: faster than fancy indexing, same checks
        return xp.take(x, indices[0], axis=0)
    return x[indices]


@body(ix.Scatter)
def scatter(xp, p, x, *rest):
    indices, updates = rest[:-1], rest[-1]
    out = xp.array(x, copy=True)
    if p.mode == "set":
        out[indices] = updates
    elif out.dtype == np.bool_ and p.mode == "add":
        xp.logical_or.at(out, indices, updates)
    else:
        getattr(xp, _ACCUMULATE[p.mode]).at(out, indices, updates)
    return out
