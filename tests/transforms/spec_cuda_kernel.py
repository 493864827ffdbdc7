"""Rule rows for the user kernels (no derivative; batching launches once per element):
`mx.fast.cuda_kernel` in the emulator on the CPU, `mx.fast.precompiled_cuda_kernel` (PTX) on a
GPU only."""

from __future__ import annotations

import pytest
from helpers import scale_add_ptx

import nuvec as mx
from nuvec.fast.custom_kernel import CustomKernel, PrecompiledKernel
from nuvec.testing import OpSpec

_SQUARE_PLUS = mx.fast.cuda_kernel("square_plus", ["x", "b"], ["y"], """
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 6) y[i] = x[i] * x[i] + b[i % 3];
""")


def _square_plus(x, b):
    return _SQUARE_PLUS(inputs=[x, b], output_shapes=[x.shape], output_dtypes=[x.dtype],
                        grid=(6,), threadgroup=(32,))[0]


def _scale_add(x):
    if mx.default_device() == mx.cpu:  # the rows run once per device: PTX has no CPU run
        pytest.skip("precompiled_cuda_kernel runs only on a GPU stream")
    return mx.fast.precompiled_cuda_kernel(
        name="scale_add_f64", compiled_source=scale_add_ptx(), inputs=[x],
        output_shapes=[x.shape], output_dtypes=[x.dtype], scalars=[0.5, x.size, True],
        grid=(x.size, 1, 1), threadgroup=(32, 1, 1), init_value=1.0)[0]


SPECS = [
    OpSpec("cuda_kernel_emulated", _square_plus,
           lambda rng: [rng.standard_normal((2, 3)), rng.standard_normal((3,))],
           [CustomKernel], grad=False),
    OpSpec("precompiled_cuda_kernel", _scale_add, lambda rng: [rng.standard_normal((2, 3))],
           [PrecompiledKernel], grad=False),
]
