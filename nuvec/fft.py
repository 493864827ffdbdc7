"""`nuvec.fft`: MLX's `mlx.core.fft` namespace (re-exports)."""

from nuvec.ops.fft import fft, fftshift, ifft, ifftshift, irfft, rfft
from nuvec.ops.fftn import fft2, fftn, ifft2, ifftn, irfft2, irfftn, rfft2, rfftn

__all__ = [
    "fft", "fft2", "fftn", "fftshift", "ifft", "ifft2", "ifftn", "ifftshift", "irfft", "irfft2",
    "irfftn", "rfft", "rfft2", "rfftn",
]
