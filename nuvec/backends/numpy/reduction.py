"""CPU kernels of `nuvec.ops.reduction`."""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.graph.dtypes import from_numpy_dtype
from nuvec.ops import reduction as r


def accumulator(dtype: np.dtype) -> np.dtype:
    """The dtype a reduction accumulates in: float32 for half types, else the output's."""
    if dtype.itemsize == 2 and dtype.kind in "fV" or dtype.name == "bfloat16":
        return np.dtype(np.float32)
    return r._sum_dtype(from_numpy_dtype(dtype)).np


@kernel(r.Sum)
def sum_(p, x):
    return np.sum(x, axis=p.axes, keepdims=True, dtype=accumulator(x.dtype))
