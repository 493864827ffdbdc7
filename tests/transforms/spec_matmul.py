"""Rule rows for `nuvec.ops.matmul`: the Matmul primitive through matmul's 1-D, batched and
broadcast forms, and addmm."""

from __future__ import annotations

import nuvec as mx
from nuvec.ops.matmul import Addmm, Matmul
from nuvec.testing import OpSpec


def normal(*shapes):
    return lambda rng: [rng.standard_normal(s) for s in shapes]


SPECS = [
    OpSpec("matmul_2d", mx.matmul, normal((3, 4), (4, 2)), [Matmul]),
    OpSpec("matmul_batched_by_matrix", mx.matmul, normal((2, 3, 4), (4, 2)), [Matmul]),
    OpSpec("matmul_broadcast_batch", mx.matmul, normal((2, 1, 3, 4), (3, 4, 2)), [Matmul]),
    OpSpec("matmul_vector_matrix", mx.matmul, normal((4,), (4, 3)), [Matmul]),
    OpSpec("matmul_matrix_vector", mx.matmul, normal((2, 3, 4), (4,)), [Matmul]),
    OpSpec("matmul_operator", lambda a, b: a @ b, normal((3,), (3,)), [Matmul]),
    OpSpec("addmm", lambda c, a, b: mx.addmm(c, a, b, alpha=0.5, beta=2.0),
           normal((2,), (3, 4), (4, 2)), [Addmm]),
    OpSpec("addmm_unscaled", mx.addmm, normal((3, 2), (3, 4), (4, 2)), [Addmm]),
    OpSpec("addmm_batch_rows", lambda c, a, b: mx.addmm(c, a, b, beta=-1.5),
           normal((1, 2), (2, 3, 4), (4, 2)), [Addmm]),
    OpSpec("addmm_batched_matrices", lambda c, a, b: mx.addmm(c, a, b, alpha=3.0),
           normal((3, 1), (2, 3, 4), (2, 4, 2)), [Addmm]),
    # c varying along the flattened rows, and a 1-D operand: the composition
    OpSpec("addmm_composed", mx.addmm, normal((3, 2), (2, 3, 4), (4, 2)), [Matmul]),
    OpSpec("addmm_vector", mx.addmm, normal((3,), (4,), (4, 3)), [Matmul]),
]
