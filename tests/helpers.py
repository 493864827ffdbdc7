"""Helpers shared by the test modules of several folders (pytest puts `tests/` on the path, see
`pythonpath` in pyproject.toml; the fused-op tests keep theirs in `tests/fast/fast_refs.py`)."""

from __future__ import annotations

import functools

import numpy as np

import nuvec as mx
from nuvec.backends.cuda import nvrtc
from nuvec.graph import dtypes as dt

# Kernels for `mx.fast.precompiled_cuda_kernel`: y[i] = (accumulate ? y[i] : 0) + x[i] * scale
# for i < n, in float (`scale_add_f32`) and double (`scale_add_f64`).
SCALE_ADD_SOURCE = r"""
#define SCALE_ADD(NAME, T)                                                              \
    extern "C" __global__ void NAME(const T* x, T* y, float scale, int n, bool accumulate) { \
        int i = blockIdx.x * blockDim.x + threadIdx.x;                                  \
        if (i < n) y[i] = (accumulate ? y[i] : T(0)) + x[i] * T(scale);                 \
    }
SCALE_ADD(scale_add_f32, float)
SCALE_ADD(scale_add_f64, double)
"""


def has_avx512() -> bool:
    """Whether this machine's processor has AVX-512 (what nuvec's fused C kernels of attention
    and of quantized rows need), from /proc/cpuinfo (False where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and "avx512f" in line.split() for line in f)
    except OSError:
        return False


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


@functools.cache
def scale_add_ptx(arch: str = "compute_80") -> bytes:
    """`SCALE_ADD_SOURCE` as PTX for `arch` from the NVRTC wheel (the driver compiles PTX for
    the GPU it runs on, so compute_80 PTX runs on every GPU nuvec supports)."""
    ptx, _, log = nvrtc.compile_program(SCALE_ADD_SOURCE, "scale_add.cu", [],
                                        [f"--gpu-architecture={arch}"], ptx=True)
    assert ptx is not None, log
    return ptx
