"""Rule rows for contractions (`nuvec.ops.contraction`, `nuvec.ops.einsum`): compositions, so
the rows cover the primitives they are built from (matmul, diagonal, sums, products)."""

from __future__ import annotations

import nuvec as mx
from nuvec.ops import binary, reduction, shape
from nuvec.ops.matmul import Matmul
from nuvec.ops.matrices import Diagonal
from nuvec.testing import OpSpec


def _shapes(*shapes):
    return lambda rng: [rng.standard_normal(s) for s in shapes]


SPECS = [
    OpSpec("einsum_batched_matmul", lambda a, b: mx.einsum("bij,bjk->bik", a, b),
           _shapes((2, 3, 4), (2, 4, 5)), covers=[Matmul]),
    OpSpec("einsum_attention", lambda q, k: mx.einsum("bhqd,bhkd->bhqk", q, k),
           _shapes((1, 2, 3, 4), (1, 2, 5, 4)), covers=[Matmul]),
    OpSpec("einsum_trace", lambda a: mx.einsum("ii", a), _shapes((4, 4)),
           covers=[Diagonal, reduction.Sum]),
    OpSpec("einsum_diagonal", lambda a: mx.einsum("iji->ij", a), _shapes((3, 2, 3)),
           covers=[Diagonal, shape.Transpose]),
    OpSpec("einsum_three", lambda a, b, c: mx.einsum("ij,jk,kl->il", a, b, c),
           _shapes((2, 3), (3, 4), (4, 2)), covers=[shape.Reshape]),
    OpSpec("einsum_ellipsis", lambda a, b: mx.einsum("...ij,jk", a, b),
           _shapes((2, 1, 3, 4), (4, 2)), covers=[shape.Reshape]),
    OpSpec("einsum_hadamard", lambda a, b: mx.einsum("ij,ij->ij", a, b), _shapes((3, 4), (3, 4)),
           covers=[binary.Multiply]),
    OpSpec("tensordot", lambda a, b: mx.tensordot(a, b, axes=([0, 2], [1, 0])),
           _shapes((3, 2, 4), (4, 3, 5)), covers=[shape.Transpose]),
    OpSpec("inner", lambda a, b: mx.inner(a, b), _shapes((2, 3), (4, 3)),
           covers=[shape.Reshape]),
    OpSpec("outer", lambda a, b: mx.outer(a, b), _shapes((3,), (4,)), covers=[binary.Multiply]),
    OpSpec("vecdot", lambda a, b: mx.vecdot(a, b, axis=0), _shapes((3, 4), (3, 1)),
           covers=[shape.BroadcastTo]),
    OpSpec("kron", lambda a, b: mx.kron(a, b), _shapes((2, 3), (3, 2)),
           covers=[binary.Multiply]),
]
