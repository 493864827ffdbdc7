"""CPU kernels of `nuvec.ops.matmul`."""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.backends.numpy.unary import widen
from nuvec.ops.matmul import Matmul


@kernel(Matmul)
def matmul(p, a, b):
    # NumPy's float16 matmul has no BLAS path and is very slow: compute half types in float32.
    return np.matmul(widen(a), widen(b))
