"""CPU kernels of `nuvec.ops.matrices`."""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.ops import matrices as m


@kernel(m.Tri)
def tri(p):
    return np.tri(p.n, p.m, p.k, dtype=p.dtype.np)


@kernel(m.Eye)
def eye(p):
    return np.eye(p.n, p.m, p.k, dtype=p.dtype.np)


@kernel(m.Triangle)
def triangle(p, x):
    return np.triu(x, p.k) if p.upper else np.tril(x, p.k)


@kernel(m.Diagonal)
def diagonal(p, x):
    return np.diagonal(x, p.offset, p.axis1, p.axis2)


@kernel(m.DiagonalEmbed)
def diagonal_embed(p, g):
    out = np.zeros(p.shape, g.dtype)
    # A view with the two diagonal axes last, written through fancy indices.
    moved = np.moveaxis(out, (p.axis1, p.axis2), (-2, -1))
    i = np.arange(g.shape[-1])
    moved[..., i + max(-p.offset, 0), i + max(p.offset, 0)] = g
    return out
