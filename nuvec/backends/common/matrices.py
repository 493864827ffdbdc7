"""Shared bodies of `nuvec.ops.matrices`."""

from __future__ import annotations

from nuvec.backends.common.registry import body
from nuvec.ops import matrices as m


@body(m.Tri)
def tri(xp, p):
    return xp.tri(p.n, p.m, p.k, dtype=p.dtype.np)


@body(m.Eye)
def eye(xp, p):
    return xp.eye(p.n, p.m, p.k, dtype=p.dtype.np)


@body(m.Triangle)
def triangle(xp, p, x):
    return xp.triu(x, p.k) if p.upper else xp.tril(x, p.k)


@body(m.Diagonal)
def diagonal(xp, p, x):
    return xp.diagonal(x, p.offset, p.axis1, p.axis2)


@body(m.DiagonalEmbed)
def diagonal_embed(xp, p, g):
    out = xp.zeros(p.shape, g.dtype)
    # A view with the two diagonal axes last, written through fancy indices.
    moved = xp.moveaxis(out, (p.axis1, p.axis2), (-2, -1))
    i = xp.arange(g.shape[-1])
    moved[..., i + max(-p.offset, 0), i + max(p.offset, 0)] = g
    return out
