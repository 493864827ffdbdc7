"""CPU kernels of `nuvec.ops.quantized`: bit-stream packing and blocked quantized products.

Codes are a little-endian bit stream per row stored as uint32 (MLX's layout): code `i` of a row
occupies bits `[i * bits, (i + 1) * bits)`, so 3-, 5- and 6-bit codes straddle bytes and words.

`quantized_matmul` of at most `FEW_ROWS` rows of float32 against 2-D 4- or 8-bit weights
(`transpose=True`, groups a multiple of 32), as in decoding, is one pass of `quantized.c` over
the packed weights (on a machine with AVX-512 and a C compiler), the weight rows split over the
thread pool; other products dequantize blocks of weight rows and multiply through BLAS.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np

from nuvec.backends import native
from nuvec.backends.numpy.registry import kernel
from nuvec.backends.threads import parallel_rows
from nuvec.ops import quantized as q

# Rows of weights dequantized at once by quantized_matmul: about 32 MiB of float32 per block.
_BLOCK_ELEMENTS = 1 << 23
# Rows of x up to which `quantized.c` computes the product from the packed weights: it reads
# each weight once per 8 rows of x, where BLAS on dequantized weights gains with more rows.
# Against [1536, 576] 4-bit weights: 8 rows 314 us against 1631 dequantizing, 32 rows 1101
# against 2013, 48 rows 2057 against 2026.
FEW_ROWS = 32
_SOURCE = Path(__file__).with_name("quantized.c")


def _bind(lib: ctypes.CDLL) -> Any:
    lib.nuvec_qmv_width.restype = ctypes.c_int64
    if not lib.nuvec_qmv_width():
        return None
    fn = lib.nuvec_qmv_f32
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    fn.argtypes = [i64] * 4 + [ptr] * 4 + [i64, i64, ptr, i64]
    fn.restype = ctypes.c_int
    return fn


def _packed_product(p, x: np.ndarray, w: np.ndarray, scales: np.ndarray,
                    biases: np.ndarray) -> np.ndarray | None:
    """`x @ (scales * codes + biases)ᵀ` by `quantized.c` for 2-D float32 `x` of at most
    `FEW_ROWS` rows; None where it does not apply (the caller dequantizes)."""
    if (x.dtype != np.float32 or not p.transpose or p.bits not in (4, 8) or w.ndim != 2
            or p.group_size % 32 or x.ndim != 2 or not 0 < x.shape[0] <= FEW_ROWS):
        return None
    fn = native.bound(_SOURCE, _bind)
    if fn is None:
        return None
    m, k = x.shape
    n = w.shape[0]
    x = np.ascontiguousarray(x)
    data = np.ascontiguousarray(w).astype("<u4", copy=False)
    s = np.ascontiguousarray(scales, np.float32)
    b = np.ascontiguousarray(biases, np.float32)
    out = np.empty((m, n), np.float32)
    addresses = [native.address(a) for a in (x, data, s, b, out)]

    def rows(start: int, stop: int) -> None:
        if fn(m, k, p.bits, p.group_size, *addresses[:4], start, stop, addresses[4], n):
            raise MemoryError(f"quantized_matmul: no memory for {m} rows of {k}")

    parallel_rows(n, rows, row_bytes=k * p.bits // 8 * m)
    return out


def _work_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def unpack(w: np.ndarray, bits: int) -> np.ndarray:
    """uint32 words `[..., P]` -> uint8 codes `[..., P * 32 / bits]`."""
    data = np.ascontiguousarray(w).astype("<u4", copy=False).view(np.uint8)
    if bits == 8:
        return data
    if 8 % bits == 0:
        shifts = np.arange(0, 8, bits, dtype=np.uint8)
        codes = (data[..., None] >> shifts) & np.uint8((1 << bits) - 1)
        return codes.reshape(*data.shape[:-1], data.shape[-1] * (8 // bits))
    stream = np.unpackbits(data, axis=-1, bitorder="little")
    stream = stream.reshape(*data.shape[:-1], data.shape[-1] * 8 // bits, bits)
    weights = np.left_shift(np.uint8(1), np.arange(bits, dtype=np.uint8))
    return (stream * weights).sum(axis=-1, dtype=np.uint8)


def pack(codes: np.ndarray, bits: int) -> np.ndarray:
    """uint8 codes `[..., K]` (K * bits a multiple of 32) -> uint32 words `[..., K * bits / 32]`."""
    if bits == 8:
        data = codes
    elif 8 % bits == 0:
        per = 8 // bits
        shifts = np.arange(0, 8, bits, dtype=np.uint8)
        grouped = codes.reshape(*codes.shape[:-1], codes.shape[-1] // per, per)
        data = (grouped << shifts).sum(axis=-1, dtype=np.uint8)
    else:
        stream = (codes[..., None] >> np.arange(bits, dtype=np.uint8)) & np.uint8(1)
        stream = stream.reshape(*codes.shape[:-1], codes.shape[-1] * bits)
        data = np.packbits(stream, axis=-1, bitorder="little")
    return np.ascontiguousarray(data).view("<u4").astype(np.uint32, copy=False)


def _edge_parameters(w_min: np.ndarray, w_max: np.ndarray, n_bins: np.floating,
                     work: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """MLX's multi-bit scales and biases: the edge of larger magnitude is represented exactly
    (code 0) and, through the rounded q0, zero lands on a code when the group straddles it."""
    low_edge = np.abs(w_min) > np.abs(w_max)
    scales = np.maximum((w_max - w_min) / n_bins, work.type(1e-7))
    scales = np.where(low_edge, scales, -scales)
    edge = np.where(low_edge, w_min, w_max)
    q0 = np.rint(edge / scales)
    nonzero = q0 != 0
    scales = np.where(nonzero, edge / np.where(nonzero, q0, 1), scales)
    return scales, np.where(nonzero, edge, 0).astype(work)


@kernel(q.Quantize)
def quantize(p, w):
    work = _work_dtype(w.dtype)
    *lead, k = w.shape
    groups = w.astype(work).reshape(*lead, k // p.group_size, p.group_size)
    n_bins = work.type((1 << p.bits) - 1)
    w_max, w_min = groups.max(axis=-1), groups.min(axis=-1)
    if p.bits == 1:  # MLX's 1-bit rule: codes 0 and 1 are the group's minimum and maximum
        scales, biases = np.maximum(w_max - w_min, work.type(1e-7)), w_min
    else:
        scales, biases = _edge_parameters(w_min, w_max, n_bins, work)
    codes = np.rint((groups - biases[..., None]) / scales[..., None])
    codes = np.clip(codes, 0, n_bins).astype(np.uint8).reshape(*lead, k)
    return pack(codes, p.bits), scales.astype(w.dtype), biases.astype(w.dtype)


def dequantize_array(w: np.ndarray, scales: np.ndarray, biases: np.ndarray, group_size: int,
                     bits: int, work: np.dtype) -> np.ndarray:
    """`scales * q + biases` of packed `w`, in `work` precision."""
    codes = unpack(w, bits)
    grouped = codes.reshape(*codes.shape[:-1], codes.shape[-1] // group_size, group_size)
    grouped = grouped.astype(work)
    out = grouped * scales.astype(work)[..., None] + biases.astype(work)[..., None]
    return out.reshape(codes.shape)


@kernel(q.Dequantize)
def dequantize(p, w, scales, biases):
    return dequantize_array(w, scales, biases, p.group_size, p.bits, _work_dtype(scales.dtype))


def _scaled_planes(w: np.ndarray, scales: np.ndarray, group_size: int, bits: int,
                   work: np.dtype) -> np.ndarray:
    """`scales * q` of power-of-2-bit weights in plane order: `[..., rows, per, bytes]`.

    The words are read as their little-endian bytes; plane `j` holds the code at bit offset
    `j * bits` of every byte, i.e. column `byte * per + j`. Whole-plane shifts of bytes keep
    every NumPy loop long, contiguous and narrow; the caller permutes the other operand's
    columns to match instead of interleaving the weights, and adds the biases' contribution
    with one small product.
    """
    data = np.ascontiguousarray(w).astype("<u4", copy=False).view(np.uint8)
    per = 8 // bits
    group_bytes = group_size // per
    out = np.empty((*data.shape[:-1], per, data.shape[-1]), dtype=work)
    if group_bytes >= 32:  # long enough rows: broadcast the scales over each group's bytes
        shape = (*data.shape[:-1], scales.shape[-1], group_bytes)
        s_rep = scales.astype(work, copy=False)[..., None]
    else:  # short groups: one scale per byte, so the loops below stay long and flat
        shape = data.shape
        s_rep = np.repeat(scales.astype(work, copy=False), group_bytes, axis=-1)
    code = data if per == 1 else np.empty(data.shape, dtype=np.uint8)
    mask = np.uint8((1 << bits) - 1)
    for j in range(per):
        if per > 1:
            np.right_shift(data, np.uint8(j * bits), out=code)
            np.bitwise_and(code, mask, out=code)
        # Converts and scales in one pass.
        np.multiply(code.reshape(shape), s_rep, out=out[..., j, :].reshape(shape), dtype=work,
                    casting="unsafe")
    return out


def _to_planes(a: np.ndarray, per: int) -> np.ndarray:
    """Columns `word * per + j` of `a` reordered as `j * words + word` (plane order)."""
    return np.swapaxes(a.reshape(*a.shape[:-1], a.shape[-1] // per, per), -1, -2).reshape(a.shape)


def _from_planes(a: np.ndarray, per: int) -> np.ndarray:
    return np.swapaxes(a.reshape(*a.shape[:-1], per, a.shape[-1] // per), -1, -2).reshape(a.shape)


def _group_sums(x: np.ndarray, group_size: int) -> np.ndarray:
    return x.reshape(*x.shape[:-1], x.shape[-1] // group_size, group_size).sum(axis=-1)


@kernel(q.QuantizedMatmul)
def quantized_matmul(p, x, w, scales, biases):
    work = _work_dtype(x.dtype)
    vector = x.ndim == 1
    xw = x.astype(work, copy=False)
    xw = xw[None] if vector else xw
    lead = xw.shape[:-1]
    if w.ndim == 2 and xw.ndim > 2:  # one 2-D product: NumPy's stacked path is much slower
        xw = xw.reshape(-1, xw.shape[-1])
    packed = _packed_product(p, xw, w, scales, biases)
    if packed is not None:
        out = packed if xw.ndim == len(lead) + 1 else packed.reshape(*lead, packed.shape[-1])
        return out[..., 0, :] if vector else out
    rows = w.shape[-2]
    columns = w.shape[-1] * 32 // p.bits
    planes = 8 % p.bits == 0
    per = 8 // p.bits
    b_work = biases.astype(work, copy=False)
    if planes and p.transpose:
        # x @ (s q + b)^T = x_planes @ (s q)_planes^T + (group sums of x) @ b^T
        out = _group_sums(xw, p.group_size) @ np.swapaxes(b_work, -1, -2)
        xw = _to_planes(xw, per)
    elif planes:
        # x @ (s q + b) = x @ (s q)_planes + (x @ b) repeated over each group's columns
        bias = np.repeat(xw @ b_work, p.group_size // per, axis=-1)
        out = np.broadcast_to(bias[..., None, :], (*bias.shape[:-1], per, bias.shape[-1]))
        out = out.reshape(*bias.shape[:-1], per * bias.shape[-1]).copy()
    else:
        n = rows if p.transpose else columns
        out = np.zeros((*np.broadcast_shapes(xw.shape[:-2], w.shape[:-2]), xw.shape[-2], n),
                       dtype=work)
    step = max(1, _BLOCK_ELEMENTS // max(columns, 1))
    # Dequantize a block of weight rows at a time, then one BLAS product per block.
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        part, s_part = w[..., start:stop, :], scales[..., start:stop, :]
        if planes:
            block = _scaled_planes(part, s_part, p.group_size, p.bits, work)
            block = block.reshape(*part.shape[:-1], columns)
        else:
            block = dequantize_array(part, s_part, biases[..., start:stop, :], p.group_size,
                                     p.bits, work)
        if p.transpose:
            out[..., start:stop] += xw @ np.swapaxes(block, -1, -2)
        else:
            out += xw[..., start:stop] @ block
    if planes and not p.transpose:
        out = _from_planes(out, per)
    if out.ndim != len(lead) + 1:
        out = out.reshape(*lead, out.shape[-1])
    return out[..., 0, :] if vector else out
