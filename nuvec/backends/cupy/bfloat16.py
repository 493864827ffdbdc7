"""bfloat16 on a namespace without it (CuPy): 2-byte buffers of uint16 bits, converted with
small elementwise kernels. Written against `xp`, so the NumPy test double checks them.

bfloat16 is the upper half of a float32: widening shifts the bits up; narrowing rounds to the
nearest even upper half, keeping NaNs quiet NaNs (as ml_dtypes and CUDA's `__float2bfloat16`).
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


class Bfloat16Buffer:
    """A bfloat16 array kept as its uint16 bits (`bits`), with the array attributes the
    evaluator reads (`dtype` is ml_dtypes' bfloat16; `base` is that of the bits)."""

    __slots__ = ("bits",)
    dtype = BFLOAT16

    def __init__(self, bits: Any):
        self.bits = bits

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.bits.shape)

    @property
    def ndim(self) -> int:
        return self.bits.ndim

    @property
    def size(self) -> int:
        return int(self.bits.size)

    @property
    def nbytes(self) -> int:
        return int(self.bits.nbytes)

    @property
    def base(self) -> Any:
        return self.bits.base

    def __repr__(self) -> str:
        return f"Bfloat16Buffer(shape={self.shape})"


def widen(xp: Any, x: Bfloat16Buffer) -> Any:
    """The float32 values of a bfloat16 buffer."""
    return (x.bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def narrow(xp: Any, values: Any) -> Bfloat16Buffer:
    """float32 (or wider real) values rounded to bfloat16, to nearest even."""
    f = xp.ascontiguousarray(xp.asarray(values).astype(np.float32, copy=False))
    bits = f.view(np.uint32)
    odd = (bits >> np.uint32(16)) & np.uint32(1)
    rounded = (bits + (np.uint32(0x7FFF) + odd)) >> np.uint32(16)
    quiet = (bits >> np.uint32(16)) | np.uint32(0x0040)  # NaN stays NaN (quiet bit set)
    out = xp.where(xp.isnan(f), quiet, rounded).astype(np.uint16)
    return Bfloat16Buffer(out)


def to_host(bits_host: np.ndarray) -> np.ndarray:
    """Host uint16 bits as an ml_dtypes bfloat16 array (no copy)."""
    return bits_host.view(BFLOAT16)


def bits_of_host(data: np.ndarray) -> np.ndarray:
    """An ml_dtypes bfloat16 host array as its uint16 bits (no copy when contiguous)."""
    return np.ascontiguousarray(data).view(np.uint16)


def coerce(xp: Any, data: Any, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
    """A kernel result as a buffer of exactly `dtype` and `shape` on namespace `xp`."""
    if type(data) is Bfloat16Buffer:
        if dtype == BFLOAT16:
            return data
        data = widen(xp, data)
    if dtype == BFLOAT16:
        return narrow(xp, xp.asarray(data).reshape(shape))
    return xp.asarray(data).astype(dtype, copy=False).reshape(shape)
