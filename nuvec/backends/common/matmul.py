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
    return add_scaled(p, xp.matmul(widen(a), widen(b)), c)


def add_scaled(p: Addmm, product, c):
    """`p.alpha * product + p.beta * c` in the product's own (fresh) buffer, rounded as the
    composition of `multiply` and `add`."""
    if p.alpha != 1.0:
        product *= p.alpha
    product += c if p.beta == 1.0 else c * p.beta
    return product
