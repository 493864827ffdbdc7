"""CPU kernels of `nuvec.ops.fft` (NumPy's pocketfft; single precision stays single)."""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.ops import fft as f


@kernel(f.FFT)
def fft(p, x):
    if p.real:
        if p.inverse:
            return np.fft.irfftn(x, s=p.sizes, axes=p.axes)
        return np.fft.rfftn(x, axes=p.axes)
    return (np.fft.ifftn if p.inverse else np.fft.fftn)(x, axes=p.axes)
