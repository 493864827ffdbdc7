"""GPU overrides that launch CUDA C kernels for fused ops (`nuvec/backends/cuda/launchers`).

Their nodes get their inputs unchanged (bfloat16 as the 2-byte bits the kernels read, the
table's `RAW` classes); outputs in 2-byte bits of a bfloat16 node come back as
`Bfloat16Buffer`s. Fused ops without a CUDA kernel yet are in `nuvec.backends.cpu_route`.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from nuvec.backends.cuda.launchers import packed_attention as packed
from nuvec.backends.cuda.runner import CupyRunner
from nuvec.backends.cupy.bfloat16 import Bfloat16Buffer
from nuvec.fast.packed_attention import PackedAttention, PackedAttentionVjp

CLASSES = (PackedAttention, PackedAttentionVjp)  # what `overrides` returns kernels for


def _bits(x: Any) -> Any:
    return x.bits if type(x) is Bfloat16Buffer else x


def _wrap(result: Any, half: bool) -> Any:
    """Results of a bfloat16 launch: 2-byte outputs are bfloat16 bits."""
    if isinstance(result, tuple):
        return tuple(_wrap(r, half) for r in result)
    return Bfloat16Buffer(result) if half and result.dtype == np.uint16 else result


def overrides(cupy: Any) -> dict[type, Callable]:
    """Kernels launching the CUDA sources on CuPy's current stream."""
    runner = CupyRunner()

    def forward(p, qkv, cos, sin):
        half = type(qkv) is Bfloat16Buffer
        return _wrap(packed.forward_node(runner, p, _bits(qkv), cos, sin), half)

    def backward(p, qkv, cos, sin, out, lse, dout, dlse=None):
        half = type(qkv) is Bfloat16Buffer
        args = [_bits(a) for a in (qkv, cos, sin, out, lse, dout)]
        return _wrap(packed.backward_node(runner, p, *args, _bits(dlse) if dlse is not None
                                          else None), half)

    return {PackedAttention: forward, PackedAttentionVjp: backward}
