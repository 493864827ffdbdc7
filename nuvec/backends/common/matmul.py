"""Shared bodies of `nuvec.ops.matmul`."""

from __future__ import annotations

from nuvec.backends.common.registry import body
from nuvec.backends.common.unary import widen
from nuvec.ops.matmul import Addmm, Matmul


@body(Matmul)
def matmul(xp, p, a, b):
    # NumPy's float16 matmul has no BLAS path and is very slow: compute half types in float32.
    return xp.matmul(widen(a), widen(b))


@body(Addmm)
def addmm(xp, p, a, b, c):
    # scaled and added in the product's own (fresh) buffer, rounded as the composition
    out = xp.matmul(widen(a), widen(b))
    if p.alpha != 1.0:
        out *= p.alpha
    out += c if p.beta == 1.0 else c * p.beta
    return out
