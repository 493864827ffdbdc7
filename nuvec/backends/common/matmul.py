"""Shared bodies of `nuvec.ops.matmul`."""

from __future__ import annotations

from nuvec.backends.common.registry import body
from nuvec.backends.common.unary import widen
from nuvec.ops.matmul import Matmul


@body(Matmul)
def matmul(xp, p, a, b):
    # NumPy's float16 matmul has no BLAS path and is very slow: compute half types in float32.
    return xp.matmul(widen(a), widen(b))
