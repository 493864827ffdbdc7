"""CPU kernels of `nuvec.ops.contraction` and `nuvec.ops.einsum`: none, every contraction is a
composition of other families' primitives (matmul, diagonal, sums, products, transposes)."""

from __future__ import annotations
