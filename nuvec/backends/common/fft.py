"""Shared bodies of `nuvec.ops.fft` (NumPy's pocketfft; single precision stays single)."""

from __future__ import annotations

from nuvec.backends.common.registry import body
from nuvec.ops import fft as f


@body(f.FFT)
def fft(xp, p, x):
    if p.real:
        if p.inverse:
            return xp.fft.irfftn(x, s=p.sizes, axes=p.axes)
        return xp.fft.rfftn(x, axes=p.axes)
    return (xp.fft.ifftn if p.inverse else xp.fft.fftn)(x, axes=p.axes)
