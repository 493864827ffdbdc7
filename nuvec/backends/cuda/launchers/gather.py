"""Launchers of `nuvec/fast/kernels/gather_mm.cu`: `GatherMm` and `GatherQmm` nodes and
`QuantizedMatmul` (one product per batch, or one product for 2-D weights) through the same
tiled kernels.

With `offsets` (one-row products sorted by weight batch) a node runs `gather_segments`, a
grouped GEMM over each weight batch's segment; otherwise `gather_batched`, one tile of one
product per block. Tiles of 16 rows serve short segments and products of at most 16 rows,
tiles of 64 rows the others.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from nuvec.backends.cuda.launchers.rows import CTYPES, ITEMSIZE, OFFSET_LIMIT
from nuvec.backends.cuda.runner import KernelFile, Runner
from nuvec.fast.gather import GatherMm, GatherQmm
from nuvec.ops.quantized import QuantizedMatmul

__all__ = ["KERNEL", "gather_mm", "gather_qmm", "quantized_matmul", "takes", "tile_rows"]

BN = 64
THREADS = 128
TILE_ROWS = (16, 64)
GRID_X, GRID_Y = 2**31 - 1, 65535
DENSE, PACKED_T, PACKED = 0, 1, 2
KERNEL = KernelFile("gather_mm", tuple(
    f"{name}<{c}, {bm}, {kind}>" for name in ("gather_segments", "gather_batched")
    for c in CTYPES.values() for bm in TILE_ROWS for kind in (DENSE, PACKED_T, PACKED)))


def tile_rows(rows_per_product: float) -> int:
    """The tile height for products of about `rows_per_product` rows."""
    return 16 if rows_per_product <= 16 else 64


def _columns(p: Any, w: Any) -> int:
    """The columns of a node's products."""
    if isinstance(p, GatherMm):
        return w.shape[-1]
    return w.shape[-2] if p.transpose else w.shape[-1] * 32 // p.bits


def takes(p: Any, inputs: Sequence[Any]) -> bool:
    """Whether the kernels take the node: the output's offsets fit in 32 bits too, and the
    grid fits CUDA's limits (2³¹ − 1 row tiles, 65535 column tiles)."""
    x = inputs[0]
    if isinstance(p, QuantizedMatmul):
        products, m = 1, math.prod(x.shape[:-1])
    else:
        products, m = math.prod(inputs[4 if isinstance(p, GatherQmm) else 2].shape), x.shape[-2]
    n = _columns(p, inputs[1])
    tiles = products * -(-m // TILE_ROWS[0]) + math.prod(inputs[1].shape[:-2])
    return products * m * n < OFFSET_LIMIT and -(-n // BN) <= GRID_Y and tiles <= GRID_X


def shared_bytes(dtype: str, bm: int, segments: bool) -> int:
    """Dynamic shared memory of a kernel: the padded tiles, then the row offsets."""
    stride = 33 if dtype == "float32" else 40
    return (bm + BN) * stride * ITEMSIZE[dtype] + 4 * (3 * bm + 4 if segments else 2 * bm)


def _flags(runner: Runner, dtype: str, a: Any, k: int, b: Any | None, n: int) -> tuple:
    """16-byte loads of `a`'s rows (and of dense `b`'s rows) when sizes and addresses allow."""
    vec = 16 // ITEMSIZE[dtype]
    vec_a = k % vec == 0 and runner.address(a) % 16 == 0
    vec_b = b is not None and n % vec == 0 and runner.address(b) % 16 == 0
    return np.int32(vec_a), np.int32(vec_b)


def _launch(runner: Runner, kind: int, a: Any, b: Any, scales: Any, biases: Any, lhs: Any,
            rhs: Any, offsets: Any | None, m: int, n: int, experts: int,
            quant: tuple[int, int] = (0, 0)) -> Any:
    """`out [R, m, n]` of the products `a[lhs[i]] · B[rhs[i]]` (`a [A, m, K]`, R = lhs.size)."""
    dtype = runner.dtype_of(a)
    k = a.shape[-1]
    rows = lhs.size
    out = runner.empty((rows, m, n), dtype)
    if out.size == 0:
        return out
    if experts == 0:
        out[...] = 0
        return out
    c = CTYPES[dtype]
    vec_a, vec_b = _flags(runner, dtype, a, k, b if kind == DENSE else None, n)
    if scales is None:
        scales = biases = runner.empty((1,), dtype)
    tail = [np.uint32(k), np.uint32(n), np.uint32(quant[0]), np.uint32(quant[1]), vec_a, vec_b]
    if offsets is not None:
        bm = tile_rows(rows / experts)
        grid = (-(-rows // bm) + experts, -(-n // BN))
        runner.launch(KERNEL, f"gather_segments<{c}, {bm}, {kind}>", grid, (THREADS,),
                      shared_bytes(dtype, bm, True),
                      [a, b, scales, biases, lhs, rhs, offsets, out, np.uint32(rows),
                       np.uint32(experts), np.uint32(a.shape[0]), *tail])
        return out
    bm = tile_rows(m)
    grid = (rows * -(-m // bm), -(-n // BN))
    runner.launch(KERNEL, f"gather_batched<{c}, {bm}, {kind}>", grid, (THREADS,),
                  shared_bytes(dtype, bm, False),
                  [a, b, scales, biases, lhs, rhs, out, np.uint32(m), np.uint32(k), np.uint32(n),
                   np.uint32(a.shape[0]), np.uint32(experts), *tail[2:]])
    return out


def _flat(runner: Runner, a: Any, trailing: int) -> Any:
    """`a` contiguous with its batch axes flattened (`trailing` axes kept)."""
    a = runner.contiguous(a)
    return a.reshape((math.prod(a.shape[:-trailing]), *a.shape[-trailing:]))


def _indices(runner: Runner, lhs: Any, rhs: Any) -> tuple[Any, Any]:
    return (runner.contiguous(i).reshape(-1) for i in (lhs, rhs))


def gather_mm(runner: Runner, p: Any, a: Any, b: Any, lhs: Any, rhs: Any,
              offsets: Any | None = None) -> Any:
    """`GatherMm()` of `(a, b, lhs_indices, rhs_indices[, offsets])`."""
    m, n = a.shape[-2], _columns(p, b)
    fa, fb = _flat(runner, a, 2), _flat(runner, b, 2)
    li, ri = _indices(runner, lhs, rhs)
    offs = None if offsets is None else runner.contiguous(offsets)
    out = _launch(runner, DENSE, fa, fb, None, None, li, ri, offs, m, n, fb.shape[0])
    return out.reshape((*lhs.shape, m, n))


def gather_qmm(runner: Runner, p: Any, x: Any, w: Any, scales: Any, biases: Any, lhs: Any,
               rhs: Any, offsets: Any | None = None) -> Any:
    """`GatherQmm(group_size, bits, transpose)` of `(x, w, scales, biases, lhs_indices,
    rhs_indices[, offsets])`."""
    m, n = x.shape[-2], _columns(p, w)
    fx, fw, fs, fb = (_flat(runner, t, 2) for t in (x, w, scales, biases))
    li, ri = _indices(runner, lhs, rhs)
    offs = None if offsets is None else runner.contiguous(offsets)
    out = _launch(runner, PACKED_T if p.transpose else PACKED, fx, fw, fs, fb, li, ri, offs, m,
                  n, fw.shape[0], (p.bits, p.group_size))
    return out.reshape((*lhs.shape, m, n))


def quantized_matmul(runner: Runner, p: Any, x: Any, w: Any, scales: Any, biases: Any) -> Any:
    """`QuantizedMatmul(group_size, bits, transpose)` of `(x, w, scales, biases)`: one product
    of all of `x`'s rows for 2-D weights, else one per batch (the op broadcast them)."""
    n = _columns(p, w)
    lead = x.shape[:-1]
    if w.ndim == 2:
        fx = runner.contiguous(x).reshape((1, math.prod(lead), x.shape[-1]))
        fw, fs, fb = (runner.contiguous(t).reshape((1, *t.shape)) for t in (w, scales, biases))
    else:
        fx, fw, fs, fb = (_flat(runner, t, 2) for t in (x, w, scales, biases))
    index = runner.xp.arange(fx.shape[0], dtype=np.uint32)
    out = _launch(runner, PACKED_T if p.transpose else PACKED, fx, fw, fs, fb, index, index,
                  None, fx.shape[1], n, fw.shape[0], (p.bits, p.group_size))
    return out.reshape((*lead, n))
