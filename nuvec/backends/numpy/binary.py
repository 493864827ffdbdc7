"""CPU kernels of `nuvec.ops.binary`."""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.ops import binary as b


@kernel(b.Add)
def add(p, x, y):
    return np.add(x, y)


@kernel(b.Subtract)
def subtract(p, x, y):
    return np.subtract(x, y)


@kernel(b.Multiply)
def multiply(p, x, y):
    return np.multiply(x, y)
