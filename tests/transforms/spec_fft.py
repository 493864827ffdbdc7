"""Rule rows for `nuvec.fft`: the FFT primitive in its complex, real and inverse-real forms.

Transforms compute in complex64 (MLX has no complex128), so these rows check batching only
(`grad=False`): the float64 tolerance of the shared gradient checks does not apply. The
gradient and jvp-against-vjp checks of the same functions run at float32 tolerances in
`tests/ops/test_fft.py`, which imports `GRAD_SPECS` from here. The functions return real
and imaginary parts, so every cotangent is real.
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


def normal(*shapes):
    return lambda rng: [rng.standard_normal(s) for s in shapes]


GRAD_SPECS = [
    OpSpec("fft", lambda x: parts(F.fft(x)), normal((2, 5)), [FFT]),
    OpSpec("fft_complex_padded", lambda x, y: parts(F.fft(to_complex(x, y), n=7, axis=0)),
           normal((4, 2), (4, 2)), [FFT]),
    OpSpec("ifft_truncated", lambda x, y: parts(F.ifft(to_complex(x, y), n=3)),
           normal((2, 5), (2, 5)), [FFT]),
    OpSpec("fft2", lambda x: parts(F.fft2(x)), normal((3, 4)), [FFT]),
    OpSpec("ifftn_s", lambda x, y: parts(F.ifftn(to_complex(x, y), s=(3, 5), axes=(0, 1))),
           normal((4, 4), (4, 4)), [FFT]),
    OpSpec("rfft_even", lambda x: parts(F.rfft(x)), normal((2, 6)), [FFT]),
    OpSpec("rfft_odd_axis0", lambda x: parts(F.rfft(x, axis=0)), normal((5, 2)), [FFT]),
    OpSpec("rfft2", lambda x: parts(F.rfft2(x)), normal((3, 4)), [FFT]),
    OpSpec("irfft_even", lambda x, y: F.irfft(to_complex(x, y)), normal((2, 4), (2, 4)), [FFT]),
    OpSpec("irfft_odd_n", lambda x, y: F.irfft(to_complex(x, y), n=5), normal((4,), (4,)),
           [FFT]),
    OpSpec("irfftn", lambda x, y: F.irfftn(to_complex(x, y), axes=(0, 1)),
           normal((3, 4), (3, 4)), [FFT]),
    OpSpec("irfft2_s", lambda x, y: F.irfft2(to_complex(x, y), s=(4, 5)),
           normal((2, 3, 3), (2, 3, 3)), [FFT]),
]

SPECS = [
    OpSpec(s.name, s.fn, s.make_args, s.covers, grad=False) for s in GRAD_SPECS
] + [
    OpSpec("fftshift", lambda x: F.fftshift(x, axes=(0,)), normal((5, 2)), [], grad=False),
]
