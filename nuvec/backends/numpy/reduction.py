"""CPU kernels of `nuvec.ops.reduction`: one NumPy reduction each, half types in float32."""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.graph.dtypes import from_numpy_dtype
from nuvec.ops import reduction as r


def is_half(dtype: np.dtype) -> bool:
    """float16 or bfloat16: NumPy computes these slowly and imprecisely, so kernels widen them."""
    return dtype == np.float16 or dtype.name == "bfloat16"


def accumulator(dtype: np.dtype) -> np.dtype:
    """The dtype a sum or product accumulates in: float32 for half types, else the output's."""
    if is_half(dtype):
        return np.dtype(np.float32)
    return r.sum_dtype(from_numpy_dtype(dtype)).np


@kernel(r.Sum)
def sum_(p, x):
    return np.sum(x, axis=p.axes, keepdims=True, dtype=accumulator(x.dtype))


@kernel(r.Prod)
def prod(p, x):
    return np.prod(x, axis=p.axes, keepdims=True, dtype=accumulator(x.dtype))


@kernel(r.Max)
def max_(p, x):
    return np.max(x, axis=p.axes, keepdims=True)


@kernel(r.Min)
def min_(p, x):
    return np.min(x, axis=p.axes, keepdims=True)


@kernel(r.ArgMax)
def argmax(p, x):
    return np.argmax(x, axis=p.axes[0], keepdims=True)


@kernel(r.ArgMin)
def argmin(p, x):
    return np.argmin(x, axis=p.axes[0], keepdims=True)


@kernel(r.AllTrue)
def all_(p, x):
    return np.all(x, axis=p.axes, keepdims=True)


@kernel(r.AnyTrue)
def any_(p, x):
    return np.any(x, axis=p.axes, keepdims=True)
