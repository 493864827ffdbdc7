"""CPU kernels of `nuvec.ops.unary`."""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.graph.primitive import Copy
from nuvec.ops import unary as u


@kernel(Copy)
def copy(p, x):
    return x


@kernel(u.AsType)
def astype(p, x):
    return x.astype(p.dtype.np)


@kernel(u.Exp)
def exp(p, x):
    return np.exp(x)


@kernel(u.Negative)
def negative(p, x):
    return np.negative(x)
