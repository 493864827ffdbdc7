"""Shared bodies of `nuvec.ops.complex_parts`: conjugate, real and imag."""

from __future__ import annotations

from nuvec.backends.common.registry import SHARED, body
from nuvec.backends.common.unary import plain
from nuvec.ops import complex_parts as c

SHARED.add_factory(c.Conjugate, plain("conjugate"), out=True)


@body(c.Real)
def real(xp, p, x):
    return xp.real(x)


@body(c.Imag)
def imag(xp, p, x):
    return xp.imag(x)
