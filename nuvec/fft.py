"""`nuvec.fft`: MLX's `mlx.core.fft` namespace (re-exports)."""

from nuvec.ops.fft import fft, fftfreq, fftshift, ifft, ifftshift, irfft, rfft, rfftfreq
from nuvec.ops.fftn import fft2, fftn, ifft2, ifftn, irfft2, irfftn, rfft2, rfftn
from nuvec.ops.stft import istft, stft

__all__ = [
    "fft", "fft2", "fftfreq", "fftn", "fftshift", "ifft", "ifft2", "ifftn", "ifftshift", "irfft",
    "irfft2", "irfftn", "istft", "rfft", "rfft2", "rfftfreq", "rfftn", "stft",
]
