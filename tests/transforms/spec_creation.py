"""Rule rows for `nuvec.ops.creation`: the input-less primitives (used inside differentiated
functions), tril/triu, diagonal and its transpose (diag of a vector)."""

from __future__ import annotations

import nuvec as mx
from nuvec.ops import creation as c
from nuvec.ops import matrices as m
from nuvec.ops.shape import BroadcastTo
from nuvec.testing import OpSpec


def normal(*shapes):
    return lambda rng: [rng.standard_normal(s) for s in shapes]


SPECS = [
    OpSpec("times_arange", lambda x: x * mx.arange(1.0, 5.0, dtype=mx.float64), normal((3, 4)),
           [c.Arange]),
    OpSpec("times_linspace", lambda x: x * mx.linspace(-1, 1, 4, dtype=mx.float64),
           normal((4,)), [c.Arange]),
    OpSpec("times_eye", lambda x: x * mx.eye(3, 4, 1, dtype=mx.float64), normal((3, 4)),
           [m.Eye]),
    OpSpec("times_tri", lambda x: x * mx.tri(3, 4, -1, dtype=mx.float64), normal((3, 4)),
           [m.Tri]),
    OpSpec("tril", lambda x: mx.tril(x, -1), normal((3, 4)), [m.Triangle]),
    OpSpec("triu_batched", lambda x: mx.triu(x, 1), normal((2, 3, 3)), [m.Triangle]),
    OpSpec("diagonal_axes", lambda x: mx.diagonal(x, 1, 2, 0), normal((3, 2, 4)), [m.Diagonal]),
    OpSpec("diagonal_negative_offset", lambda x: mx.diagonal(x, -1), normal((4, 3)),
           [m.Diagonal]),
    OpSpec("trace", lambda x: mx.trace(x, offset=1, axis1=1, axis2=2), normal((2, 3, 4)),
           [m.Diagonal]),
    OpSpec("diag_vector", lambda x: mx.diag(x, 1), normal((3,)), [m.DiagonalEmbed]),
    OpSpec("diag_of_diag", lambda x: mx.diag(mx.diag(x, -2) * 2.0, -2), normal((3,)),
           [m.DiagonalEmbed, m.Diagonal]),
    OpSpec("meshgrid", lambda x, y: mx.meshgrid(x, y)[0] * mx.meshgrid(x, y)[1],
           normal((3,), (2,)), [BroadcastTo]),
]
