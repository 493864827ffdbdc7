"""Helpers shared by the test modules of several folders (pytest puts `tests/` on the path, see
`pythonpath` in pyproject.toml; the fused-op tests keep theirs in `tests/fast/fast_refs.py`)."""

from __future__ import annotations

import numpy as np

import nuvec as mx
from nuvec.graph import dtypes as dt


def ids(x) -> str:
    """A parametrize id: a dtype's name, anything else as `str`."""
    return getattr(x, "name", str(x))


def int_data(shape, dtype: dt.Dtype = dt.float32, seed: int = 0) -> np.ndarray:
    """Integers in [0, 50) stored as `dtype` (parity for bool; complex gets an imaginary part)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 50, size=shape)
    if dtype is dt.bool_:
        return values % 2 == 0
    if dtype is dt.complex64:
        return (values + 1j * rng.integers(0, 5, size=shape)).astype(np.complex64)
    return values.astype(dtype.np)


def int_pair(shape, dtype: dt.Dtype = dt.float32, seed: int = 0):
    """`int_data` as a nuvec array of `dtype` and as the NumPy array it was made from."""
    x = int_data(shape, dtype, seed)
    return mx.array(x, dtype), x
