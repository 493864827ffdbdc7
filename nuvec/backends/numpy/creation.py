"""CPU kernels of `nuvec.ops.creation`."""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.ops import creation as c


@kernel(c.Arange)
def arange(p):
    if p.dtype.kind in "iu" and float(p.start).is_integer() and float(p.step).is_integer():
        return int(p.start) + np.arange(p.size, dtype=np.int64) * int(p.step)
    if p.size == 1:  # also an infinite step, where 0 * step would be NaN
        return np.full(1, p.start, np.float64)
    return p.start + np.arange(p.size, dtype=np.float64) * p.step
