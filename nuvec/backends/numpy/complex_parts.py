"""CPU kernels of `nuvec.ops.complex_parts`: NumPy's conjugate, real and imag."""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.backends.numpy.unary import plain
from nuvec.ops import complex_parts as c

kernel(c.Conjugate, out=True)(plain(np.conjugate))


@kernel(c.Real)
def real(p, x):
    return np.real(x)


@kernel(c.Imag)
def imag(p, x):
    return np.imag(x)
