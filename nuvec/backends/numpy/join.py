"""CPU kernels of `nuvec.ops.join`."""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.ops import join as jn


@kernel(jn.Concatenate)
def concatenate(p, *xs):
    return np.concatenate(xs, axis=p.axis)
