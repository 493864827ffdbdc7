"""CPU kernels of `nuvec.ops.indexing`: NumPy fancy indexing and `ufunc.at` scatters.

NumPy checks every index (negative ones wrap once); an out-of-range index raises IndexError,
which the evaluator reports as an `EvaluationError`.
"""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.ops import indexing as ix

_ACCUMULATE = {"add": np.add, "multiply": np.multiply, "max": np.maximum, "min": np.minimum}


@kernel(ix.Gather)
def gather(p, x, *indices):
    if len(indices) == 1:
        # np.take copies whole rows at once: faster than fancy indexing, same checks
        return np.take(x, indices[0], axis=0)
    return x[indices]


@kernel(ix.Scatter)
def scatter(p, x, *rest):
    indices, updates = rest[:-1], rest[-1]
    out = np.array(x, copy=True)
    if p.mode == "set":
        out[indices] = updates
    elif out.dtype == np.bool_ and p.mode == "add":
        np.logical_or.at(out, indices, updates)
    else:
        _ACCUMULATE[p.mode].at(out, indices, updates)
    return out
