"""CPU kernels of `nuvec.ops.shape` (views where NumPy gives them; data is never mutated)."""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.ops import shape as sh


@kernel(sh.Reshape)
def reshape(p, x):
    return x.reshape(p.shape)


@kernel(sh.Transpose)
def transpose(p, x):
    return x.transpose(p.axes)


@kernel(sh.BroadcastTo)
def broadcast_to(p, x):
    return np.broadcast_to(x, p.shape)
