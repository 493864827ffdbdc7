"""`nuvec.fft`: MLX's `mlx.core.fft` namespace (re-exports)."""

from nuvec.ops.fft import (
    fft, fft2, fftn, fftshift, ifft, ifft2, ifftn, ifftshift, irfft, irfft2, irfftn, rfft, rfft2,
    rfftn,
)

__all__ = [
    "fft", "fft2", "fftn", "fftshift", "ifft", "ifft2", "ifftn", "ifftshift", "irfft", "irfft2",
    "irfftn", "rfft", "rfft2", "rfftn",
]
