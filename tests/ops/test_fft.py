"""Conformance of `nuvec.fft` against `numpy.fft` (complex128 references), errors, gradients;
the derivative and batching rows of the FFT primitive are in `tests/transforms/spec_fft.py`."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from nuvec.testing import assert_allclose

F = mx.fft
RNG = np.random.default_rng(7)
TOL = dict(rtol=2e-5, atol=2e-5)


def signal(shape, complex_=False):
    x = RNG.standard_normal(shape)
    return x + 1j * RNG.standard_normal(shape) if complex_ else x


ONE_D = [
    ("fft", {}, False), ("fft", {"n": 9}, True), ("fft", {"n": 3, "axis": 0}, True),
    ("ifft", {}, True), ("ifft", {"n": 4, "axis": -2}, False),
    ("rfft", {}, False), ("rfft", {"n": 7}, False), ("rfft", {"n": 4, "axis": 0}, False),
    ("irfft", {}, True), ("irfft", {"n": 9}, True), ("irfft", {"n": 3, "axis": 0}, True),
]


@pytest.mark.parametrize("name,kwargs,complex_", ONE_D,
                         ids=[f"{n}-{k}-complex={c}" for n, k, c in ONE_D])
def test_one_dimensional_matches_numpy(name, kwargs, complex_):
    x = signal((5, 6), complex_)
    out = getattr(F, name)(mx.array(x), **kwargs)
    expected = getattr(np.fft, name)(x, **kwargs)
    dtype = mx.float32 if name == "irfft" else mx.complex64
    assert_allclose(out, expected, dtype=dtype, **TOL)


MULTI = [
    ("fft2", {}), ("fft2", {"s": (3, 8), "axes": (0, 2)}), ("ifft2", {"axes": (-1, 0)}),
    ("fftn", {}), ("fftn", {"s": (2, 5), "axes": (1, 2)}), ("ifftn", {"axes": (0,)}),
    ("rfft2", {}), ("rfft2", {"s": (4, 5), "axes": (2, 0)}), ("rfftn", {}),
    ("irfft2", {}), ("irfft2", {"s": (3, 7), "axes": (0, 1)}), ("irfftn", {}),
    ("irfftn", {"s": (4, 2, 5), "axes": (0, 1, 2)}),
]


@pytest.mark.parametrize("name,kwargs", MULTI, ids=[f"{n}-{k}" for n, k in MULTI])
def test_multi_dimensional_matches_numpy(name, kwargs):
    complex_ = name.startswith(("i", "fft"))
    x = signal((3, 4, 6), complex_)
    out = getattr(F, name)(mx.array(x), **kwargs)
    expected = getattr(np.fft, name)(x, **kwargs)
    dtype = mx.float32 if name.startswith("irfft") else mx.complex64
    assert_allclose(out, expected, dtype=dtype, rtol=5e-5, atol=5e-5)


NORMED = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
          "rfftn", "irfftn"]


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
@pytest.mark.parametrize("name", NORMED)
def test_norm_scales_as_numpy(name, norm):
    x = signal((3, 4, 6), complex_=not name.startswith("rfft"))
    kwargs = {"n": 7} if name in ("fft", "irfft") else {}
    out = getattr(F, name)(mx.array(x), norm=norm, **kwargs)
    expected = getattr(np.fft, name)(x, norm=norm, **kwargs)
    dtype = mx.float32 if name.startswith("irfft") else mx.complex64
    assert_allclose(out, expected, dtype=dtype, rtol=5e-5, atol=5e-5)


def test_frequencies_match_numpy():
    for n in range(1, 8):
        for d in (1.0, 0.25, 3):
            assert_allclose(F.fftfreq(n, d), np.fft.fftfreq(n, d), dtype=mx.float32, rtol=1e-6)
            assert_allclose(F.rfftfreq(n, d=d), np.fft.rfftfreq(n, d), dtype=mx.float32,
                            rtol=1e-6)


@pytest.mark.parametrize("dtype", [mx.float64, mx.float16, mx.int32, mx.bool_, mx.complex64],
                         ids=lambda d: d.name)
def test_fft_input_dtypes_give_complex64(dtype):
    x = (RNG.standard_normal(8) * 3).astype(dtype.np) if dtype is not mx.bool_ else \
        RNG.random(8) > 0.5
    out = F.fft(mx.array(x, dtype))
    assert_allclose(out, np.fft.fft(np.asarray(mx.array(x, dtype)).astype(np.complex128)),
                    dtype=mx.complex64, **TOL)


@pytest.mark.parametrize("name,kwargs", [("rfft", {}), ("rfft", {"n": 9, "norm": "ortho"}),
                                         ("rfft2", {}), ("rfftn", {"axes": [0]})])
def test_real_transforms_take_the_real_part_of_complex_input(name, kwargs):
    x = signal((4, 6), True)  # NumPy rejects it; MLX drops the imaginary part
    out = getattr(F, name)(mx.array(x), **kwargs)
    assert_allclose(out, getattr(np.fft, name)(x.real, **kwargs), dtype=mx.complex64, **TOL)


TRANSFORMS = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
              "rfftn", "irfftn", "fftshift", "ifftshift"]


@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize("bad", ["0", 1.5, (0.0,), ("0",)],
                         ids=["str", "float", "float-in", "str-in"])
def test_transforms_reject_non_integer_axes(name, bad):
    x, one = mx.ones((4, 4)), name in ("fft", "ifft", "rfft", "irfft")
    key = "axis" if one else "axes"
    if one and isinstance(bad, tuple):
        bad = bad[0]
    with pytest.raises(TypeError, match=rf"^{name}: {key} must be an int"):
        getattr(F, name)(x, **{key: bad})


@pytest.mark.parametrize("name", [t for t in TRANSFORMS if "shift" not in t])
@pytest.mark.parametrize("bad", ["3", 2.5], ids=["str", "float"])
def test_transforms_reject_non_integer_lengths(name, bad):
    x = mx.ones((4, 4))
    if name[-1] in "2n":
        with pytest.raises(TypeError, match=rf"^{name}: s must be an int"):
            getattr(F, name)(x, s=(bad, 4), axes=(0, 1))
    else:
        with pytest.raises(TypeError, match=rf"^{name}: n must be an int, got {bad!r}"):
            getattr(F, name)(x, n=bad)
    assert getattr(F, name)(x, **({"n": np.int64(4)} if name[-1] not in "2n" else
                                  {"s": (np.int64(4), mx.array(4)), "axes": (0, 1)})).ndim == 2


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("axes", [(0, 0), (0, -2, 1), (1, -1, 1)])
def test_shifts_repeat_a_repeated_axis(name, axes):
    x = np.arange(15).reshape(3, 5)  # odd lengths: two shifts are not a round trip
    out = getattr(F, name)(mx.array(x), axes=axes)
    np.testing.assert_array_equal(np.asarray(out), getattr(np.fft, name)(x, axes=axes))


def test_round_trips():
    x = signal((4, 6))
    assert_allclose(F.irfftn(F.rfftn(mx.array(x)), s=x.shape, axes=(0, 1)), x, **TOL)
    assert_allclose(F.ifft(F.fft(mx.array(x))), x.astype(np.complex128), **TOL)


def test_views_and_size_one():
    x = signal((6, 4))
    view = mx.array(x).T[:, ::2]
    assert_allclose(F.fft(view), np.fft.fft(x.T[:, ::2]), **TOL)
    assert_allclose(F.fft(mx.array([2.5])), np.array([2.5 + 0j]), **TOL)
    assert_allclose(F.irfft(mx.array([1.0 + 0j, 2.0]), n=2), np.fft.irfft([1.0, 2.0], n=2), **TOL)


def test_empty_axes_return_the_input_values():
    a = mx.array([1.0, 2.0])
    out = F.fftn(a, axes=[])
    assert out is not a and out.tolist() == [1.0, 2.0]


def test_fftn_default_covers_all_axes_and_fft2_none_axes():
    x = signal((2, 3, 4), True)
    assert_allclose(F.fftn(mx.array(x)), np.fft.fftn(x), rtol=5e-5, atol=5e-5)
    assert_allclose(F.fft2(mx.array(x), axes=None), np.fft.fftn(x), rtol=5e-5, atol=5e-5)


@pytest.mark.parametrize("shape,axes", [((5,), None), ((4, 5), (0,)), ((4, 5), (-1, 0))],
                         ids=str)
def test_fftshift_and_inverse(shape, axes):
    x = signal(shape).astype(np.float32)
    shifted = F.fftshift(mx.array(x), axes)
    assert_allclose(shifted, np.fft.fftshift(x, axes), rtol=0, atol=0)
    assert_allclose(F.ifftshift(shifted, axes), x, rtol=0, atol=0)


ERRORS = [
    (lambda: F.fft(mx.array(1.0)), ValueError, "fft"),
    (lambda: F.fft(mx.array([1.0, 2.0]), axis=1), ValueError, "fft"),
    (lambda: F.rfft(mx.array([1.0, 2.0]), n=0), ValueError, "rfft"),
    (lambda: F.irfft(mx.array([1.0 + 0j])), ValueError, "irfft"),
    (lambda: F.fft2(mx.zeros((2, 2)), axes=(0, 0)), ValueError, "fft2"),
    (lambda: F.fftn(mx.zeros((2, 2)), s=(2, 2)), ValueError, "fftn"),
    (lambda: F.ifft2(mx.zeros((2, 2)), s=(2,)), ValueError, "ifft2"),
    (lambda: F.rfftn(mx.zeros((2, 2)), axes=(0, 2)), ValueError, "rfftn"),
    (lambda: F.fftshift(mx.zeros((2, 2)), axes=(3,)), ValueError, "fftshift"),
    (lambda: F.fft("signal"), TypeError, "fft"),
    (lambda: F.fft(mx.zeros((2,)), norm="none"), ValueError, "fft"),
    (lambda: F.irfftn(mx.zeros((2, 2)), norm=None), ValueError, "irfftn"),
    (lambda: F.fftfreq(0), ValueError, "fftfreq"),
    (lambda: F.fftfreq(2.0), TypeError, "fftfreq"),
    (lambda: F.rfftfreq(4, d=0), ValueError, "rfftfreq"),
    (lambda: F.rfftfreq(4, d="1"), TypeError, "rfftfreq"),
]


@pytest.mark.parametrize("call,error,op", ERRORS, ids=[f"{i}-{e[2]}" for i, e in enumerate(ERRORS)])
def test_rejected_inputs(call, error, op):
    with pytest.raises(error, match=f"^{op}: "):
        call()


def test_grad_of_power_spectrum():
    x = signal(8)

    def loss(a):
        z = F.rfft(a)
        return mx.sum(mx.real(z) * mx.real(z) + mx.real(z * -1j) * mx.real(z * -1j))

    def power(v):
        return np.sum(np.abs(np.fft.rfft(v)) ** 2)

    numeric = np.array([(power(x + 1e-6 * e) - power(x - 1e-6 * e)) / 2e-6 for e in np.eye(8)])
    assert_allclose(mx.grad(loss)(mx.array(x)), numeric, rtol=1e-3, atol=1e-3)
    ortho = mx.grad(lambda a: mx.sum(mx.abs(F.rfft(a, norm="ortho")) ** 2))(mx.array(x))
    assert_allclose(ortho, numeric / 8, rtol=1e-3, atol=1e-3)  # the spectrum scaled by 1/sqrt(8)


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequency_lengths_are_int32(name):
    with pytest.raises(ValueError, match=f"^{name}: n must be <= 2147483647, got 2147483648"):
        getattr(mx.fft, name)(2**31)
