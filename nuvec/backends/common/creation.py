"""Shared bodies of `nuvec.ops.creation`."""

from __future__ import annotations

import numpy as np

from nuvec.backends.common.registry import body
from nuvec.ops import creation as c


@body(c.Arange)
def arange(xp, p):
    if p.size == 1:  # also an infinite step, where 0 * step would be NaN
        return xp.full(1, p.start, np.float64)
    if p.dtype.kind in "iu":
        # integers step by T(start + step) - T(start), C casts truncating toward zero, as MLX
        # and NumPy do: arange(-1.5, 3, 1, int8) is [-1, 0, 1, 2, 3]
        first = int(p.start)
        return first + xp.arange(p.size, dtype=np.int64) * (int(p.start + p.step) - first)
    return p.start + xp.arange(p.size, dtype=np.float64) * p.step
