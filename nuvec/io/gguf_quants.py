"""GGUF tensor types: their block sizes, the repacking of Q4_0, Q4_1 and Q8_0 into nuvec's
affine quantized layout, and the dequantization of the other types MLX reads.

Q4_0, Q4_1 and Q8_0 store blocks of 32 values along a row, each block a float16 scale `d`
(and for Q4_1 a float16 offset `m`) and 32 codes: `x = d * (q - 8)`, `x = d * q + m` and
`x = d * q` with `q` a signed byte. These are affine groups of 32, so (as MLX's GGUF loader
does) they become `quantized_matmul`'s uint32 codes with float16 scales and biases: bias
`-8 d`, `m` and `-128 d` (Q8_0's codes shifted to `q + 128`). Nothing is dequantized.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEQUANTIZED", "NAMES", "REPACKED", "TYPES", "dequantize", "repack"]

# type id -> (name, values per block, bytes per block, NumPy dtype of unquantized types)
TYPES: dict[int, tuple[str, int, int, np.dtype | None]] = {
    0: ("F32", 1, 4, np.dtype("<f4")), 1: ("F16", 1, 2, np.dtype("<f2")),
    24: ("I8", 1, 1, np.dtype(np.int8)), 25: ("I16", 1, 2, np.dtype("<i2")),
    26: ("I32", 1, 4, np.dtype("<i4")), 27: ("I64", 1, 8, np.dtype("<i8")),
    28: ("F64", 1, 8, np.dtype("<f8")), 30: ("BF16", 1, 2, np.dtype("V2")),
    2: ("Q4_0", 32, 18, None), 3: ("Q4_1", 32, 20, None), 8: ("Q8_0", 32, 34, None),
    6: ("Q5_0", 32, 22, None), 7: ("Q5_1", 32, 24, None), 10: ("Q2_K", 256, 84, None),
    12: ("Q4_K", 256, 144, None), 14: ("Q6_K", 256, 210, None),
}
# Types nuvec cannot read (neither can MLX), by id, for error messages.
NAMES = {9: "Q8_1", 11: "Q3_K", 13: "Q5_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS",
         18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS",
         29: "IQ1_M", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4", 40: "NVFP4", 41: "Q1_0"}
REPACKED = ("Q4_0", "Q4_1", "Q8_0")
DEQUANTIZED = ("Q5_0", "Q5_1", "Q2_K", "Q4_K", "Q6_K")


def _f16(blocks: np.ndarray, start: int) -> np.ndarray:
    """The float16 at byte `start` of each block, as a column `[blocks, 1]`."""
    return np.ascontiguousarray(blocks[:, start:start + 2]).view("<f2")


def _nibbles(qs: np.ndarray) -> np.ndarray:
    """GGML's 4-bit order (low nibbles are values 0-15, high nibbles 16-31) as codes."""
    return np.concatenate([qs & 0xF, qs >> 4], axis=1)


def repack(kind: str, raw: np.ndarray, shape: tuple[int, ...]
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q4_0/Q4_1/Q8_0 bytes of a tensor of `shape` as nuvec's `(w_q, scales, biases)`: uint32
    codes `[..., K * bits / 32]` (little-endian bit stream per row), float16 `[..., K / 32]`."""
    _, _, size, _ = next(v for v in TYPES.values() if v[0] == kind)
    blocks = raw.reshape(-1, size)
    d = _f16(blocks, 0)
    if kind == "Q8_0":
        codes = blocks[:, 2:] ^ np.uint8(0x80)  # signed q -> q + 128
        bias = d * np.float16(-128)
    else:
        q = _nibbles(blocks[:, 2:] if kind == "Q4_0" else blocks[:, 4:])
        codes = q[:, 0::2] | (q[:, 1::2] << 4)
        bias = d * np.float16(-8) if kind == "Q4_0" else _f16(blocks, 2)
    lead, k = shape[:-1], shape[-1]
    w_q = np.ascontiguousarray(codes).view("<u4").reshape(*lead, -1)
    return w_q, d.reshape(*lead, k // 32), np.ascontiguousarray(bias).reshape(*lead, k // 32)


def dequantize(kind: str, raw: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The values of a tensor of `shape` stored as `kind` bytes, in float16 (as MLX)."""
    _, _, size, _ = next(v for v in TYPES.values() if v[0] == kind)
    blocks = raw.reshape(-1, size)
    values = _DEQUANTIZERS[kind](blocks)
    return values.astype(np.float16).reshape(shape)


def _q4_0(b: np.ndarray) -> np.ndarray:
    return _f16(b, 0).astype(np.float32) * (_nibbles(b[:, 2:]).astype(np.float32) - 8)


def _q4_1(b: np.ndarray) -> np.ndarray:
    q = _nibbles(b[:, 4:]).astype(np.float32)
    return _f16(b, 0).astype(np.float32) * q + _f16(b, 2).astype(np.float32)


def _q8_0(b: np.ndarray) -> np.ndarray:
    return _f16(b, 0).astype(np.float32) * b[:, 2:].view(np.int8).astype(np.float32)


def _q5(b: np.ndarray, start: int) -> np.ndarray:
    """Q5 codes: 4 low bits from the nibbles at `start`, the fifth from a 32-bit mask."""
    high = np.ascontiguousarray(b[:, start - 4:start]).view("<u4")
    bits = (high >> np.arange(32, dtype=np.uint32)) & 1
    return (_nibbles(b[:, start:]) | (bits.astype(np.uint8) << 4)).astype(np.float32)


def _q5_0(b: np.ndarray) -> np.ndarray:
    return _f16(b, 0).astype(np.float32) * (_q5(b, 6) - 16)


def _q5_1(b: np.ndarray) -> np.ndarray:
    return _f16(b, 0).astype(np.float32) * _q5(b, 8) + _f16(b, 2).astype(np.float32)


def _q2_k(b: np.ndarray) -> np.ndarray:
    """Q2_K: 16 sub-blocks of 16 two-bit codes, 4-bit scales and minimums, two float16s."""
    scales, qs = b[:, :16], b[:, 16:80]
    d, dmin = _f16(b, 80).astype(np.float32), _f16(b, 82).astype(np.float32)
    shifts = np.array([0, 2, 4, 6], dtype=np.uint8)
    # codes[n, half, shift, 32]: byte l of half n holds values at shift j of position 32 j + l
    codes = (qs.reshape(-1, 2, 1, 32) >> shifts[None, None, :, None]) & 3
    codes = codes.reshape(-1, 16, 16).astype(np.float32)
    scale = d * (scales & 0xF).astype(np.float32)
    low = dmin * (scales >> 4).astype(np.float32)
    return (scale[:, :, None] * codes - low[:, :, None]).reshape(-1, 256)


def _k_scales(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The eight 6-bit scales and minimums packed in 12 bytes (Q4_K)."""
    q = packed.astype(np.uint8)
    sc = np.empty((q.shape[0], 8), np.uint8)
    mn = np.empty((q.shape[0], 8), np.uint8)
    sc[:, :4], mn[:, :4] = q[:, 0:4] & 63, q[:, 4:8] & 63
    sc[:, 4:] = (q[:, 8:12] & 0xF) | ((q[:, 0:4] >> 6) << 4)
    mn[:, 4:] = (q[:, 8:12] >> 4) | ((q[:, 4:8] >> 6) << 4)
    return sc.astype(np.float32), mn.astype(np.float32)


def _q4_k(b: np.ndarray) -> np.ndarray:
    """Q4_K: 8 sub-blocks of 32 four-bit codes with 6-bit scales and minimums."""
    d, dmin = _f16(b, 0).astype(np.float32), _f16(b, 2).astype(np.float32)
    sc, mn = _k_scales(b[:, 4:16])
    qs = b[:, 16:].reshape(-1, 4, 32)  # chunk c: low nibbles -> sub-block 2c, high -> 2c + 1
    codes = np.stack([qs & 0xF, qs >> 4], axis=2).reshape(-1, 8, 32).astype(np.float32)
    return ((d * sc)[:, :, None] * codes - (dmin * mn)[:, :, None]).reshape(-1, 256)


def _q6_k(b: np.ndarray) -> np.ndarray:
    """Q6_K: 16 sub-blocks of 16 six-bit codes (4 low bits, 2 high) with int8 scales."""
    ql, qh = b[:, :128].reshape(-1, 2, 64), b[:, 128:192].reshape(-1, 2, 32)
    scales = b[:, 192:208].view(np.int8).astype(np.float32)
    d = _f16(b, 208).astype(np.float32)
    low = np.stack([ql[:, :, :32] & 0xF, ql[:, :, 32:] & 0xF, ql[:, :, :32] >> 4,
                    ql[:, :, 32:] >> 4], axis=2)  # [n, half, quarter, 32]
    high = (qh[:, :, None, :] >> np.array([0, 2, 4, 6], np.uint8)[None, None, :, None]) & 3
    q = (low | (high << 4)).astype(np.float32) - 32
    q = q.reshape(-1, 16, 16)  # sub-block order: half, quarter, then 16 values
    return (d[:, :, None] * scales[:, :, None] * q).reshape(-1, 256)


_DEQUANTIZERS = {"Q4_0": _q4_0, "Q4_1": _q4_1, "Q8_0": _q8_0, "Q5_0": _q5_0, "Q5_1": _q5_1,
                 "Q2_K": _q2_k, "Q4_K": _q4_k, "Q6_K": _q6_k}
