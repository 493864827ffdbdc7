"""The short-time Fourier transform and its inverse (MLX 0.32's `mx.fft.stft` and `istft`).

Both are compositions: `stft` pads the signal (centred frames), gathers the frames with one
`take`, windows them and transforms the last axis; `istft` transforms back, windows again and
overlap-adds the frames with `ceil(n_fft / hop)` shifted sums (no scatter), dividing by the
overlap-added squared window where it is not zero. Gradients and batching follow from the ops.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.graph.device import stream as stream_context
from nuvec.graph.device import to_stream
from nuvec.ops import binary, comparison, creation, indexing, join, shape, unary
from nuvec.ops.arguments import as_array, bool_flag, index_int
from nuvec.ops.complex_parts import real as real_part
from nuvec.ops.fft import check_norm, fft, ifft, irfft, rfft

__all__: list[str] = []

_PAD_MODES = ("reflect", "constant", "edge")
_TINY_ENVELOPE = 1e-11  # where the squared window's overlap-add is below this, output 0


def _positive(value: Any, op: str, what: str) -> int:
    n = index_int(value, op, what, high=2**31 - 1)  # MLX's sizes are int32
    if n <= 0:
        raise ValueError(f"{op}: {what} must be positive, got {n}")
    return n


def _window(op: str, window: Any, win_length: int | None, n_fft: int) -> Array:
    """The window as a float32 array of length `n_fft`, zero-padded equally on both sides.

    A given window's own length is the window length; `win_length` (default `n_fft`) sizes
    the rectangular one otherwise."""
    if window is None:
        length = n_fft if win_length is None else _positive(win_length, op, "win_length")
        w = creation.ones((length,), dt.float32)
    else:
        w = as_array(window, op)
        if w.ndim != 1:
            raise ValueError(f"{op}: window must be one-dimensional, got shape {w.shape}")
        if w.dtype is dt.complex64:
            raise dt.DtypeError(f"{op}: window must be real, got complex64")
        w = unary.astype(w, dt.float32)
        length = w.shape[0]
    if length > n_fft:
        raise ValueError(f"{op}: the window length ({length}) must not exceed n_fft ({n_fft})")
    left = (n_fft - length) // 2
    return join.pad(w, (left, n_fft - length - left)) if length < n_fft else w


def stft(x: Any, n_fft: int = 2048, hop_length: int | None = None,
         win_length: int | None = None, window: Any = None, center: bool = True,
         pad_mode: str = "reflect", norm: str = "backward", onesided: bool | None = None, *,
         stream: Any = None) -> Array:
    """Short-time Fourier transform of the last axis: `(..., n_freq, n_frames)` complex64.

    Frame `t` is `x[..., t * hop : t * hop + n_fft]` times the window (centred and
    zero-padded to `n_fft`); with `center`, `x` is first padded by `n_fft // 2` on both sides
    with `pad_mode`. Each frame is transformed by `rfft` (`onesided`: the `n_fft // 2 + 1`
    non-negative frequencies) or `fft`.

    Args:
        x: the signal, at least one-dimensional (real, or complex with `onesided=False`).
        n_fft: the transform size (positive).
        hop_length: samples between frames; default `n_fft // 4` (at least 1).
        win_length: the length of the default rectangular window; default `n_fft`.
        window: a one-dimensional real window of at most `n_fft` samples (its length wins
            over `win_length`); default a rectangular one.
        center: whether to pad `x` so that frame `t` is centred on sample `t * hop`.
        pad_mode: "reflect", "constant" (zeros) or "edge", used when `center`.
        norm: "backward", "ortho" or "forward", as `fft`'s.
        onesided: the non-negative frequencies only; default True for a real `x`, False for a
            complex one.
        stream: the stream (or device) to record on.

    Returns:
        A complex64 array of shape `x.shape[:-1] + (n_freq, n_frames)`.

    Raises:
        ValueError: for a 0-d `x`, a non-positive size, a window longer than `n_fft` or not
            one-dimensional, an unknown `pad_mode` or `norm`, a signal shorter than one
            frame, or `onesided` with a complex `x`.
        TypeError: for a non-integer size or a complex window.

    Example:
        >>> import nuvec as mx
        >>> mx.fft.stft(mx.ones((64,)), n_fft=16).shape
        (9, 17)
    """
    op = "stft"
    with stream_context(to_stream(stream)):
        x = as_array(x, op)
        if x.ndim < 1:
            raise ValueError(f"{op}: the input must have at least one dimension, got shape ()")
        n_fft = _positive(n_fft, op, "n_fft")
        hop = max(n_fft // 4, 1) if hop_length is None else _positive(hop_length, op,
                                                                       "hop_length")
        center = bool_flag(center, op, "center")
        check_norm(op, norm)
        if pad_mode not in _PAD_MODES:
            raise ValueError(f"{op}: pad_mode must be 'reflect', 'constant' or 'edge', got "
                             f"{pad_mode!r}")
        is_complex = x.dtype is dt.complex64
        onesided = not is_complex if onesided is None else bool_flag(onesided, op, "onesided")
        if onesided and is_complex:
            raise ValueError(f"{op}: onesided needs a real input, got complex64 (pass "
                             "onesided=False)")
        w = _window(op, window, win_length, n_fft)
        if not is_complex:
            x = unary.astype(x, dt.float32)
        if center:
            half = n_fft // 2
            widths = [(0, 0)] * (x.ndim - 1) + [(half, half)]
            x = join.pad(x, widths, "constant" if pad_mode == "constant" else pad_mode)
        size = x.shape[-1]
        if size < n_fft:
            raise ValueError(f"{op}: the input ({size} samples{' once padded' if center else ''}"
                             f") is shorter than one frame of n_fft={n_fft}")
        count = 1 + (size - n_fft) // hop
        starts = np.arange(count, dtype=np.int32)[:, None] * hop
        positions = as_array(starts + np.arange(n_fft, dtype=np.int32), op)
        frames = binary.multiply(indexing.take(x, positions, axis=-1), w)
        spectrum = (rfft if onesided else fft)(frames, axis=-1, norm=norm)
        return shape.swapaxes(spectrum, -1, -2)


def _overlap_add(frames: Array, hop: int) -> Array:
    """`sum_t frames[..., t, :]` placed at `t * hop`: shape `(..., (T - 1) * hop + N)`."""
    count, n = frames.shape[-2], frames.shape[-1]
    shifts = math.ceil(n / hop)
    lead = [(0, 0)] * (frames.ndim - 2)
    # each frame as `shifts` chunks of `hop` samples; chunk r of frame t lands in chunk t + r
    chunks = shape.reshape(join.pad(frames, lead + [(0, 0), (0, shifts * hop - n)]),
                           frames.shape[:-1] + (shifts, hop))
    total = None
    for r in range(shifts):
        part = join.pad(chunks[..., r, :], lead + [(r, shifts - 1 - r), (0, 0)])
        total = part if total is None else binary.add(total, part)
    flat = shape.reshape(total, frames.shape[:-2] + ((count + shifts - 1) * hop,))
    return flat[..., : (count - 1) * hop + n]


def istft(stft_matrix: Any, n_fft: int | None = None, hop_length: int | None = None,
          win_length: int | None = None, window: Any = None, center: bool = True,
          norm: str = "backward", onesided: bool | None = None, length: int | None = None, *,
          stream: Any = None) -> Array:
    """The inverse of `stft`: a float32 signal from `(..., n_freq, n_frames)` frames.

    Each frame is transformed back (`irfft` of length `n_fft` if `onesided`, else the real
    part of `ifft`), windowed again and overlap-added; the sum is divided by the overlap-added
    squared window (0 where that is below 1e-11). With `center` the `n_fft // 2` padded
    samples are cut from the start and, without `length`, from the end.

    Args:
        stft_matrix: the frames' spectra, at least two-dimensional.
        n_fft: the transform size; default `2 * (n_freq - 1)` if `onesided`, else `n_freq`
            (pass it for an odd one-sided size).
        hop_length, win_length, window, center, norm: as `stft`'s.
        onesided: whether the spectra hold the non-negative frequencies only (default True).
        length: trim or zero-pad the output to this many samples.
        stream: the stream (or device) to record on.

    Returns:
        A float32 array of shape `stft_matrix.shape[:-2] + (samples,)`.

    Raises:
        ValueError: for fewer than two dimensions, a non-positive size or `length`, a window
            longer than `n_fft`, an unknown `norm`, or `n_freq` not fitting `n_fft`.
        TypeError: for a non-integer size or a complex window.

    Example:
        >>> import nuvec as mx
        >>> x = mx.arange(32, dtype=mx.float32)
        >>> y = mx.fft.istft(mx.fft.stft(x, n_fft=8), n_fft=8, length=32)
        >>> bool(mx.allclose(x, y, atol=1e-4))
        True
    """
    op = "istft"
    with stream_context(to_stream(stream)):
        spectra = as_array(stft_matrix, op)
        if spectra.ndim < 2:
            raise ValueError(f"{op}: the input must be [..., n_freq, n_frames], got shape "
                             f"{spectra.shape}")
        n_freq = spectra.shape[-2]
        onesided = True if onesided is None else bool_flag(onesided, op, "onesided")
        if n_fft is None:
            n_fft = 2 * (n_freq - 1) if onesided else n_freq
        n_fft = _positive(n_fft, op, "n_fft")
        expected = n_fft // 2 + 1 if onesided else n_fft
        if n_freq != expected:
            raise ValueError(f"{op}: {n_freq} frequencies do not fit n_fft={n_fft} (expected "
                             f"{expected}{' one-sided' if onesided else ''})")
        hop = max(n_fft // 4, 1) if hop_length is None else _positive(hop_length, op,
                                                                       "hop_length")
        if length is not None:
            length = _positive(length, op, "length")
        center = bool_flag(center, op, "center")
        check_norm(op, norm)
        w = _window(op, window, win_length, n_fft)
        columns = shape.swapaxes(spectra, -1, -2)
        if onesided:
            frames = irfft(columns, n=n_fft, axis=-1, norm=norm)
        else:
            frames = real_part(ifft(columns, axis=-1, norm=norm))
        signal = _overlap_add(binary.multiply(frames, w), hop)
        squared = shape.broadcast_to(binary.multiply(w, w), (spectra.shape[-1], n_fft))
        envelope = _overlap_add(squared, hop)
        covered = comparison.greater(envelope, _TINY_ENVELOPE)
        safe = comparison.where(covered, envelope, 1.0)
        signal = comparison.where(covered, binary.divide(signal, safe), 0.0)
        start = n_fft // 2 if center else 0
        total = signal.shape[-1]
        stop = total - start if length is None else min(start + length, total)
        if (start, stop) != (0, total):
            signal = signal[..., start:stop]
        if length is not None and signal.shape[-1] < length:
            widths = [(0, 0)] * (signal.ndim - 1) + [(0, length - signal.shape[-1])]
            signal = join.pad(signal, widths)
        return signal
