"""Discrete Fourier transforms behind `nuvec.fft`: one `FFT` primitive, the 1-D transforms
the shifts and the sample frequencies (the 2-D and n-D transforms live in `fftn.py`).

Results are complex64 (float32 for the inverse real transforms), as in MLX, whatever the input
precision. Nothing here is exported at the top level (MLX's `mx.fft.*`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, record1
from nuvec.graph.device import stream as stream_context
from nuvec.graph.device import to_stream
from nuvec.graph.primitive import Primitive
from nuvec.ops.arguments import as_array, fresh, index_int, normalize_axis
from nuvec.ops.binary import multiply
from nuvec.ops.complex_parts import real as real_part
from nuvec.ops.creation import arange, array
from nuvec.ops.families import Linear, apply, move_batch_to_front
from nuvec.ops.join import pad, roll
from nuvec.ops.unary import astype

__all__: list[str] = []


class FFT(Linear, Primitive):
    """The DFT over `axes`: complex to complex, real to half-spectrum (`real`), or back.

    `sizes` are the logical transform lengths (the output lengths of an inverse real
    transform, the input lengths otherwise). The input already has the transformed shape.
    The rule is the transpose (as every rule; `vjp` conjugates it into MLX's convention): the
    DFT matrices are symmetric, so complex transforms pull back through themselves.
    """

    __slots__ = ("axes", "inverse", "real", "sizes")

    def __init__(self, axes: tuple[int, ...], inverse: bool, real: bool, sizes: tuple[int, ...]):
        self.axes, self.inverse, self.real, self.sizes = tuple(axes), inverse, real, tuple(sizes)

    def params(self):
        return (self.axes, self.inverse, self.real, self.sizes)

    def output_specs(self, inputs):
        shape = list(inputs[0].shape)
        if self.real:
            last = self.axes[-1]
            shape[last] = self.sizes[-1] if self.inverse else self.sizes[-1] // 2 + 1
        out = dt.float32 if self.real and self.inverse else dt.complex64
        return ((tuple(shape), out),)

    def vjp(self, primals, cotangents, argnums, outputs):
        ct = cotangents[0]
        if not self.real:
            return [apply(self, ct)]
        complex_fft = FFT(self.axes, self.inverse, False, self.sizes)
        last = self.axes[-1]
        if not self.inverse:
            n = self.sizes[-1]
            padded = _resize(ct, last, n)
            return [real_part(apply(complex_fft, padded))]
        n = self.sizes[-1]
        half = primals[0].shape[last]
        full = apply(complex_fft, astype(ct, dt.complex64))
        weights = np.full(half, 2.0, np.float32)
        weights[0] = 1.0
        if n % 2 == 0:
            weights[-1] = 1.0
        shape = [1] * ct.ndim
        shape[last] = half
        mask = array(weights.reshape(shape), dt.complex64)
        return [multiply(mask, _resize(full, last, half))]

    def vmap(self, inputs, axes):
        x = move_batch_to_front(inputs[0], axes[0])
        moved = FFT(tuple(a + 1 for a in self.axes), self.inverse, self.real, self.sizes)
        return [apply(moved, x)], [0]


def _resize(x: Array, axis: int, size: int) -> Array:
    """`x` truncated or zero-padded at the end of `axis` to `size`."""
    have = x.shape[axis]
    if have > size:
        index = [slice(None)] * x.ndim
        index[axis] = slice(0, size)
        return x[tuple(index)]
    if have < size:
        widths = [(0, 0)] * x.ndim
        widths[axis] = (0, size - have)
        return pad(x, widths)
    return x


def _int_list(values: Any, op: str, what: str) -> list[int]:
    """`values` (an int or a sequence of ints) as a list of Python ints; strings, floats and
    other objects are rejected, never converted."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{op}: {what} must be an int or a sequence of ints, got {values!r}")
    if not hasattr(values, "__iter__"):
        return [index_int(values, op, what)]
    return [index_int(v, op, what) for v in values]


def check_norm(op: str, norm: Any) -> None:
    """Raises ValueError for a `norm` other than "backward", "ortho" and "forward"."""
    if norm not in ("backward", "ortho", "forward"):
        raise ValueError(f"{op}: norm must be 'backward', 'ortho' or 'forward', got {norm!r}")


def fft_transform(
    op: str, a: Any, sizes: Sequence[int] | None, axes: Sequence[int], real: bool, inverse: bool,
    stream: Any, norm: str = "backward",
) -> Array:
    """Checks, resizes and casts the input, records one `FFT` (MLX's `fft_impl`) and scales
    its result for `norm` (the primitive itself scales the inverse by 1/n).

    A forward real transform of a complex input transforms its real part (MLX).
    """
    stream = to_stream(stream)  # checked even when nothing is recorded
    check_norm(op, norm)
    a = as_array(a, op)
    if a.ndim < 1:
        raise ValueError(f"{op}: requires an array with at least one dimension, got shape ()")
    axes = _int_list(axes, op, "axes" if op[-1] in "2n" else "axis")
    if sizes is not None:
        sizes = _int_list(sizes, op, "s" if op[-1] in "2n" else "n")
    if sizes is not None and len(sizes) != len(axes):
        raise ValueError(f"{op}: s and axes have different sizes ({len(sizes)} and {len(axes)})")
    if not axes:
        return fresh(a)
    valid = [normalize_axis(x, a.ndim, op) for x in axes]
    if len(set(valid)) != len(valid):
        raise ValueError(f"{op}: repeated axis in {tuple(axes)}")
    if sizes is None:
        sizes = [a.shape[x] for x in valid]
        if real and inverse:
            sizes[-1] = (sizes[-1] - 1) * 2
    if any(n <= 0 for n in sizes):
        raise ValueError(f"{op}: invalid transform sizes {tuple(sizes)}; each must be positive")
    if any(n >= 2**31 for n in sizes):  # MLX's shapes are int32
        raise ValueError(f"{op}: transform sizes must be below 2**31, got {tuple(sizes)}")
    s = to_stream(stream)
    with stream_context(s):
        x = real_part(a) if real and not inverse and a.dtype is dt.complex64 else a
        for axis, n in zip(valid, sizes):
            x = _resize(x, axis, n // 2 + 1 if real and inverse and axis == valid[-1] else n)
        want = dt.float32 if real and not inverse else dt.complex64
        if x.dtype is not want:
            x = astype(x, want)
        out = record1(FFT(tuple(valid), inverse, real, tuple(sizes)), (x,), s)
        if norm == "backward":
            return out
        count = float(np.prod(sizes))
        scale = {"ortho": count**-0.5, "forward": 1 / count}[norm]
        return multiply(out, 1 / scale if inverse else scale)  # (the inverse was divided by count)


def _one(op: str, a: Any, n: int | None, axis: int, real: bool, inverse: bool, norm: str,
         stream: Any):
    return fft_transform(op, a, None if n is None else [n], [axis], real, inverse, stream, norm)


def fft(a: Any, n: int | None = None, axis: int = -1, norm: str = "backward",
        *, stream: Any = None) -> Array:
    """One-dimensional discrete Fourier transform along `axis`.

    Args:
        a: the input (real inputs are converted to complex64).
        n: the transform length; `a` is truncated or zero-padded along `axis` to `n`
            (default `a.shape[axis]`).
        axis: the axis to transform.
        norm: the scaling: "backward" (1/n on the inverse), "ortho" (1/sqrt(n) both ways) or
            "forward" (1/n on the forward transform); n is the product of the lengths.

    Returns:
        A complex64 array.

    Raises:
        ValueError: for a 0-d input, a repeated axis or a non-positive `n`.
        IndexError: for an out-of-range axis (an AxisError, also a ValueError).
        TypeError: if `axis` or `n` is not an int.

    Example:
        >>> import nuvec as mx
        >>> mx.fft.fft(mx.array([1.0, 1.0])).tolist()
        [(2+0j), 0j]
    """
    return _one("fft", a, n, axis, False, False, norm, stream)


def ifft(a: Any, n: int | None = None, axis: int = -1, norm: str = "backward",
        *, stream: Any = None) -> Array:
    """One-dimensional inverse DFT along `axis` (scaled by 1/n); see `fft`.

    Args:
        a: the input (real inputs are converted to complex64).
        n: the transform length along `axis` (see `fft`).
        axis: the axis to transform.
        norm: the scaling: "backward" (1/n on the inverse), "ortho" (1/sqrt(n) both ways) or
            "forward" (1/n on the forward transform); n is the product of the lengths.
        stream: the stream (or device) to record on.

    Returns:
        A complex64 array.

    Raises:
        ValueError: for a 0-d input, a repeated axis or a non-positive `n`.
        IndexError: for an out-of-range axis (an AxisError, also a ValueError).
        TypeError: if `axis` or `n` is not an int.

    Example:
        >>> import nuvec as mx
        >>> mx.fft.ifft(mx.array([2.0, 0.0])).tolist()
        [(1+0j), (1+0j)]
    """
    return _one("ifft", a, n, axis, False, True, norm, stream)


def rfft(a: Any, n: int | None = None, axis: int = -1, norm: str = "backward",
        *, stream: Any = None) -> Array:
    """DFT of a real input along `axis`: the `n // 2 + 1` non-negative frequencies.

    The input is computed in float32; of a complex input only the real part is transformed
    (as MLX; NumPy rejects it). See `fft` for `n` and `axis`.

    Args:
        a: the real input (the real part of a complex one).
        n: the transform length along `axis` (see `fft`).
        axis: the axis to transform.
        norm: the scaling: "backward" (1/n on the inverse), "ortho" (1/sqrt(n) both ways) or
            "forward" (1/n on the forward transform); n is the product of the lengths.
        stream: the stream (or device) to record on.

    Returns:
        A complex64 array with `n // 2 + 1` entries along `axis`.

    Raises:
        ValueError: for a 0-d input, a repeated axis or a non-positive `n`.
        IndexError: for an out-of-range axis (an AxisError, also a ValueError).
        TypeError: if `axis` or `n` is not an int.

    Example:
        >>> import nuvec as mx
        >>> mx.fft.rfft(mx.array([1.0, 1.0, 1.0, 1.0])).tolist()
        [(4+0j), 0j, 0j]
    """
    return _one("rfft", a, n, axis, True, False, norm, stream)


def irfft(a: Any, n: int | None = None, axis: int = -1, norm: str = "backward",
        *, stream: Any = None) -> Array:
    """The inverse of `rfft`: a float32 signal of length `n` along `axis`.

    `a` is truncated or zero-padded along `axis` to `n // 2 + 1`; the default `n` is
    `2 * (a.shape[axis] - 1)`. The imaginary parts of the zero (and, for even `n`, the
    Nyquist) frequencies are ignored.

    Args:
        a: the half spectrum.
        n: the output length along `axis`; default `2 * (a.shape[axis] - 1)`.
        axis: the axis to transform.
        norm: the scaling: "backward" (1/n on the inverse), "ortho" (1/sqrt(n) both ways) or
            "forward" (1/n on the forward transform); n is the product of the lengths.
        stream: the stream (or device) to record on.

    Returns:
        A float32 array with `n` entries along `axis`.

    Raises:
        ValueError: for a 0-d input, a repeated axis or a non-positive `n`.
        IndexError: for an out-of-range axis (an AxisError, also a ValueError).
        TypeError: if `axis` or `n` is not an int.

    Example:
        >>> import nuvec as mx
        >>> mx.fft.irfft(mx.array([4.0, 0.0, 0.0])).tolist()
        [1.0, 1.0, 1.0, 1.0]
    """
    return _one("irfft", a, n, axis, True, True, norm, stream)


def _shift(op: str, a: Any, axes: Sequence[int] | None, inverse: bool, stream: Any) -> Array:
    stream = to_stream(stream)  # checked even when nothing is recorded
    a = as_array(a, op)
    axes = list(range(a.ndim)) if axes is None else _int_list(axes, op, "axes")
    if not axes:
        return fresh(a)
    valid = [normalize_axis(x, a.ndim, op) for x in axes]
    shifts = []  # a repeated axis is shifted once per mention (NumPy, MLX)
    for x in valid:
        size = a.shape[x]
        shifts.append((size + 1) // 2 if inverse else size // 2)
    return roll(a, tuple(shifts), tuple(axes), stream=stream)


def fftshift(a: Any, axes: Sequence[int] | None = None, *, stream: Any = None) -> Array:
    """Moves the zero frequency to the centre of `axes` (default all): a roll by size // 2.

    Args:
        a: the input array.
        axes: an axis or the axes to shift (a repeated axis shifts again); default all.
        stream: the stream (or device) to record on.

    Returns:
        `a` rolled along `axes`.

    Raises:
        ValueError: if an axis is out of range.

    Example:
        >>> import nuvec as mx
        >>> mx.fft.fftshift(mx.array([0, 1, 2, -2, -1])).tolist()
        [-2, -1, 0, 1, 2]
    """
    return _shift("fftshift", a, axes, False, stream)


def ifftshift(a: Any, axes: Sequence[int] | None = None, *, stream: Any = None) -> Array:
    """The inverse of `fftshift`: a roll by (size + 1) // 2 along `axes` (default all).

    Args:
        a: the input array.
        axes: an axis or the axes to shift (a repeated axis shifts again); default all.
        stream: the stream (or device) to record on.

    Returns:
        `a` rolled along `axes`.

    Raises:
        ValueError: if an axis is out of range.

    Example:
        >>> import nuvec as mx
        >>> mx.fft.ifftshift(mx.array([-2, -1, 0, 1, 2])).tolist()
        [0, 1, 2, -2, -1]
    """
    return _shift("ifftshift", a, axes, True, stream)


def _spacing(n: Any, d: Any, op: str) -> tuple[int, float]:
    n = index_int(n, op, "n", high=2**31 - 1)  # MLX's n is an int32
    if n <= 0:
        raise ValueError(f"{op}: n must be greater than 0, got {n}")
    if isinstance(d, bool) or not isinstance(d, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}: d must be a real number, got {d!r} ({type(d).__name__})")
    if d == 0:
        raise ValueError(f"{op}: d must be non-zero")
    return n, float(d)


def fftfreq(n: int, d: float = 1.0, *, stream: Any = None) -> Array:
    """The sample frequencies of an `n`-point `fft` with sample spacing `d`, as NumPy's.

    `[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (n * d)`, in float32.

    Args:
        n: the window length (positive).
        d: the sample spacing (non-zero).
        stream: the stream (or device) to record on.

    Returns:
        A float32 array of shape `(n,)`.

    Raises:
        TypeError: if `n` is not an int or `d` not a real number.
        ValueError: if `n` is not positive or `d` is zero.

    Example:
        >>> import nuvec as mx
        >>> mx.fft.fftfreq(4, d=0.5).tolist()
        [0.0, 0.5, -1.0, -0.5]
    """
    n, d = _spacing(n, d, "fftfreq")
    stream = to_stream(stream)
    k = roll(arange(-(n // 2), (n + 1) // 2, dtype=dt.float32, stream=stream), -(n // 2),
             stream=stream)
    return multiply(k, 1.0 / (n * d), stream=stream)


def rfftfreq(n: int, d: float = 1.0, *, stream: Any = None) -> Array:
    """The sample frequencies of an `n`-point `rfft` with sample spacing `d`, as NumPy's.

    `[0, 1, ..., n // 2] / (n * d)`, in float32: shape `(n // 2 + 1,)`. Arguments and errors
    as `fftfreq`.

    Example:
        >>> import nuvec as mx
        >>> mx.fft.rfftfreq(4, d=2.0).tolist()
        [0.0, 0.125, 0.25]
    """
    n, d = _spacing(n, d, "rfftfreq")
    stream = to_stream(stream)
    return multiply(arange(n // 2 + 1, dtype=dt.float32, stream=stream), 1.0 / (n * d),
                    stream=stream)
