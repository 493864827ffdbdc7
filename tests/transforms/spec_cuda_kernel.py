"""Rule rows for `mx.fast.cuda_kernel` (no derivative; batching launches once per element)."""

from __future__ import annotations

import nuvec as mx
from nuvec.fast.custom_kernel import CustomKernel
from nuvec.testing import OpSpec

_SQUARE_PLUS = mx.fast.cuda_kernel("square_plus", ["x", "b"], ["y"], """
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 6) y[i] = x[i] * x[i] + b[i % 3];
""")


def _square_plus(x, b):
    return _SQUARE_PLUS(inputs=[x, b], output_shapes=[x.shape], output_dtypes=[x.dtype],
                        grid=(6,), threadgroup=(32,))[0]


SPECS = [
    OpSpec("cuda_kernel_emulated", _square_plus,
           lambda rng: [rng.standard_normal((2, 3)), rng.standard_normal((3,))],
           [CustomKernel], grad=False),
]
