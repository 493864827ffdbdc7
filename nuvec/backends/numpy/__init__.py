"""The CPU backend: every primitive computed with NumPy; the reference semantics.

`kernels` maps a primitive class to `kernel(primitive, *inputs) -> output or outputs`. Kernels
receive NumPy arrays of the node's input dtypes and may return views or NumPy scalars; the
evaluator coerces results with `coerce`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.backends.numpy.registry import kernels, writes_into

from nuvec.backends.numpy import (  # noqa: F401,E402  (each module registers its kernels)
    binary,
    comparison,
    complex_parts,
    contraction,
    conv,
    custom,
    creation,
    fast,
    fast_attention,
    fast_packed,
    fft,
    indexing,
    join,
    linalg,
    matmul,
    matrices,
    misc,
    quantized,
    random,
    reduction,
    rounding,
    scan,
    shape,
    slicing,
    sorting,
    user_kernels,
    unary,
)


def available() -> bool:
    return True


def unavailable_reason() -> str:
    return ""


def to_host(data: Any) -> np.ndarray:
    return np.asarray(data)


def from_host(data: np.ndarray) -> np.ndarray:
    return data


def coerce(data: Any, dtype: np.dtype) -> np.ndarray:
    """A kernel result as an ndarray of exactly `dtype`."""
    return np.asarray(data).astype(dtype, copy=False)


def synchronize() -> None:
    """NumPy computes synchronously; nothing to wait for."""


__all__ = ["kernels", "writes_into", "available", "to_host", "from_host", "coerce", "synchronize"]
