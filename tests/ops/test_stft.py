"""`fft.stft` and `fft.istft` against a float64 NumPy reference of the formula (padding,
framing, windowing, transform), the round trip, gradients, batching and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from nuvec.testing import assert_allclose, check_grads

F = mx.fft
RNG = np.random.default_rng(11)


def stft_reference(x, n_fft, hop=None, window=None, center=True, pad_mode="reflect",
                   norm="backward", onesided=None):
    hop = hop or n_fft // 4
    w = np.ones(n_fft) if window is None else np.asarray(window, np.float64)
    left = (n_fft - len(w)) // 2
    w = np.pad(w, (left, n_fft - len(w) - left))
    if center:
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(n_fft // 2,) * 2], mode=pad_mode)
    count = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[..., t * hop:t * hop + n_fft] * w for t in range(count)], -2)
    onesided = not np.iscomplexobj(x) if onesided is None else onesided
    return np.swapaxes((np.fft.rfft if onesided else np.fft.fft)(frames, norm=norm), -1, -2)


CASES = [
    {"n_fft": 16}, {"n_fft": 16, "hop_length": 3}, {"n_fft": 15, "hop_length": 4, "center": False},
    {"n_fft": 16, "pad_mode": "constant"}, {"n_fft": 16, "pad_mode": "edge"},
    {"n_fft": 16, "norm": "ortho"}, {"n_fft": 16, "norm": "forward", "hop_length": 5},
    {"n_fft": 16, "onesided": False}, {"n_fft": 64}, {"n_fft": 7, "hop_length": 2},
]


@pytest.mark.parametrize("kwargs", CASES, ids=str)
def test_stft_matches_the_formula(kwargs):
    x = RNG.standard_normal((2, 40))
    reference = dict(kwargs)
    reference["hop"] = reference.pop("hop_length", None)
    assert_allclose(F.stft(mx.array(x), **kwargs), stft_reference(x, **reference),
                    dtype=mx.complex64, rtol=2e-5, atol=2e-5)


def test_stft_windows_and_complex_input():
    x = RNG.standard_normal(40)
    hann = np.hanning(10)
    assert_allclose(F.stft(mx.array(x), n_fft=16, window=mx.array(hann)),
                    stft_reference(x, 16, window=hann), dtype=mx.complex64, rtol=2e-5, atol=2e-5)
    # without a window, win_length sizes the rectangular one (centred, zero-padded)
    assert_allclose(F.stft(mx.array(x), n_fft=16, win_length=10),
                    stft_reference(x, 16, window=np.ones(10)), dtype=mx.complex64, rtol=2e-5,
                    atol=2e-5)
    z = RNG.standard_normal(30) + 1j * RNG.standard_normal(30)
    assert_allclose(F.stft(mx.array(z), n_fft=8), stft_reference(z, 8), dtype=mx.complex64,
                    rtol=2e-5, atol=2e-5)
    # reflect padding longer than the signal reflects again, as NumPy's
    short = RNG.standard_normal(5)
    assert_allclose(F.stft(mx.array(short), n_fft=16), stft_reference(short, 16),
                    dtype=mx.complex64, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("kwargs", [c for c in CASES if "pad_mode" not in c], ids=str)
def test_istft_inverts_stft(kwargs):
    x = RNG.standard_normal((2, 40))
    spectra = F.stft(mx.array(x), **kwargs)
    y = F.istft(spectra, length=40, **kwargs)
    assert y.dtype is mx.float32 and y.shape == (2, 40)
    if kwargs.get("center", True):
        assert_allclose(y, x, dtype=mx.float32, rtol=1e-4, atol=1e-4)
    else:  # the frames cover samples 0 ... 38 only where the window is non-zero
        assert_allclose(y[:, :39], x[:, :39], dtype=mx.float32, rtol=1e-4, atol=1e-4)


def test_istft_lengths_and_an_empty_envelope():
    x = RNG.standard_normal(40)
    spectra = F.stft(mx.array(x), n_fft=16, hop_length=3)
    assert F.istft(spectra, n_fft=16, hop_length=3).shape == (39,)  # 13 hops + 16 - 2 * 8
    padded = F.istft(spectra, n_fft=16, hop_length=3, length=60)
    assert padded.shape == (60,) and not np.asarray(padded)[-5:].any()
    assert_allclose(F.istft(spectra, n_fft=16, hop_length=3, length=20), x[:20],
                    dtype=mx.float32, rtol=1e-4, atol=1e-4)
    # a Hann window with hop n_fft: where the squared window sums to zero, the output is 0
    hann = mx.array(np.hanning(16))
    y = np.asarray(F.istft(F.stft(mx.array(x), 16, 16, window=hann), 16, 16, window=hann))
    assert np.isfinite(y).all() and y[7] == 0 and y[8] == 0
    np.testing.assert_allclose(y[1:7], x[1:7], rtol=1e-4, atol=1e-4)


def test_gradients_and_batching():
    x = mx.array(RNG.standard_normal(24))
    check_grads(lambda v: mx.abs(F.stft(v, n_fft=8)), [x], eps=1e-3, rtol=2e-3, atol=1e-3)
    spectra = F.stft(mx.array(RNG.standard_normal(24)), n_fft=8)
    check_grads(lambda s: F.istft(s, n_fft=8), [mx.real(spectra).astype(mx.float64)],
                eps=1e-3, rtol=2e-3, atol=1e-3)
    batch = mx.array(RNG.standard_normal((3, 24)))
    mapped = mx.vmap(lambda v: F.stft(v, n_fft=8))(batch)
    assert_allclose(mapped, np.asarray(F.stft(batch, n_fft=8)), dtype=mx.complex64, rtol=1e-5,
                    atol=1e-5)


X = mx.zeros((40,))
ERRORS = [
    (lambda: F.stft(mx.array(1.0), n_fft=4), ValueError, "stft: the input must have at least"),
    (lambda: F.stft(X, n_fft=0), ValueError, "stft: n_fft must be positive, got 0"),
    (lambda: F.stft(X, n_fft=2.5), TypeError, "stft: n_fft must be an int"),
    (lambda: F.stft(X, n_fft=16, hop_length=0), ValueError, "stft: hop_length must be positive"),
    (lambda: F.stft(X, n_fft=16, win_length=20), ValueError,
     r"stft: the window length \(20\) must not exceed n_fft \(16\)"),
    (lambda: F.stft(X, n_fft=16, window=mx.ones((2, 8))), ValueError,
     r"stft: window must be one-dimensional, got shape \(2, 8\)"),
    (lambda: F.stft(X, n_fft=16, window=mx.ones(4, mx.complex64)), TypeError,
     "stft: window must be real"),
    (lambda: F.stft(X, n_fft=16, pad_mode="wrap"), ValueError,
     "stft: pad_mode must be 'reflect', 'constant' or 'edge', got 'wrap'"),
    (lambda: F.stft(X, n_fft=16, norm="none"), ValueError, "stft: norm must be"),
    (lambda: F.stft(X, n_fft=50, center=False), ValueError,
     "stft: the input \\(40 samples\\) is shorter than one frame of n_fft=50"),
    (lambda: F.stft(mx.zeros(8, mx.complex64), n_fft=4, onesided=True), ValueError,
     "stft: onesided needs a real input"),
    (lambda: F.istft(mx.zeros((9,), mx.complex64)), ValueError,
     r"istft: the input must be \[..., n_freq, n_frames\], got shape \(9,\)"),
    (lambda: F.istft(mx.zeros((9, 4), mx.complex64), n_fft=8), ValueError,
     r"istft: 9 frequencies do not fit n_fft=8 \(expected 5 one-sided\)"),
    (lambda: F.istft(mx.zeros((9, 4), mx.complex64), length=0), ValueError,
     "istft: length must be positive"),
]


@pytest.mark.parametrize("call, error, message", ERRORS, ids=[e[2][:30] for e in ERRORS])
def test_rejected_inputs(call, error, message):
    with pytest.raises(error, match="^" + message):
        call()


@pytest.mark.parametrize("kwargs, name", [
    (dict(hop_length=2**31), "hop_length"), (dict(win_length=2**31), "win_length"),
    (dict(n_fft=2**31), "n_fft"),
])
def test_stft_sizes_are_int32(kwargs, name):
    args = dict(n_fft=16) | kwargs
    with pytest.raises(ValueError, match=f"^stft: {name} must be <= 2147483647, got 2147483648"):
        mx.fft.stft(mx.ones((64,)), **args)


def test_istft_length_is_int32():
    spectra = mx.fft.stft(mx.ones((64,)), n_fft=16)
    with pytest.raises(ValueError, match=r"^istft: length must be <= 2147483647"):
        mx.fft.istft(spectra, n_fft=16, length=2**40)
