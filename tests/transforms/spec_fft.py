"""Rule rows for `nuvec.fft`: the FFT primitive in its complex, real and inverse-real forms.

Transforms compute in complex64 (MLX has no complex128), so the rows carry float32
tolerances (`fft`); the FFT is linear, so a large finite-difference step has no truncation
error. The functions return real and imaginary parts, so every cotangent is real.
"""

from __future__ import annotations

import nuvec as mx
from nuvec.ops.fft import FFT
from nuvec.testing import OpSpec

F = mx.fft


def parts(z):
    """Real and imaginary parts; Im(z) is taken as Re(-i z) so only `real`'s rule is used."""
    return [mx.real(z), mx.real(z * -1j)]


def to_complex(x, y):
    return x + 1j * y


def fft(name, fn, make_args):
    return OpSpec(name, fn, make_args, [FFT], eps=1e-2, rtol=1e-4, atol=1e-4, jvp_rtol=1e-5,
                  jvp_atol=1e-5)


def normal(*shapes):
    return lambda rng: [rng.standard_normal(s) for s in shapes]


SPECS = [
    fft("fft", lambda x: parts(F.fft(x)), normal((2, 5))),
    fft("fft_complex_padded", lambda x, y: parts(F.fft(to_complex(x, y), n=7, axis=0)),
        normal((4, 2), (4, 2))),
    fft("ifft_truncated", lambda x, y: parts(F.ifft(to_complex(x, y), n=3)),
        normal((2, 5), (2, 5))),
    fft("fft2", lambda x: parts(F.fft2(x)), normal((3, 4))),
    fft("ifftn_s", lambda x, y: parts(F.ifftn(to_complex(x, y), s=(3, 5), axes=(0, 1))),
        normal((4, 4), (4, 4))),
    fft("rfft_even", lambda x: parts(F.rfft(x)), normal((2, 6))),
    fft("rfft_odd_axis0", lambda x: parts(F.rfft(x, axis=0)), normal((5, 2))),
    fft("rfft2", lambda x: parts(F.rfft2(x)), normal((3, 4))),
    fft("irfft_even", lambda x, y: F.irfft(to_complex(x, y)), normal((2, 4), (2, 4))),
    fft("irfft_odd_n", lambda x, y: F.irfft(to_complex(x, y), n=5), normal((4,), (4,))),
    fft("irfftn", lambda x, y: F.irfftn(to_complex(x, y), axes=(0, 1)),
        normal((3, 4), (3, 4))),
    fft("irfft2_s", lambda x, y: F.irfft2(to_complex(x, y), s=(4, 5)),
        normal((2, 3, 3), (2, 3, 3))),
    OpSpec("fftshift", lambda x: F.fftshift(x, axes=(0,)), normal((5, 2)), []),
]
