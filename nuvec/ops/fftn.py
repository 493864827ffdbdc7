"""The 2-D and n-D discrete Fourier transforms of `nuvec.fft` (`fft2` ... `irfftn`).

Each records one `FFT` (`nuvec.ops.fft`) over several axes. Nothing here is exported at the
top level (MLX's `mx.fft.*`).
"""

from __future__ import annotations

from typing import Any, Sequence

from nuvec.graph.array import Array
from nuvec.ops.arguments import as_array
from nuvec.ops.fft import fft_transform

__all__: list[str] = []


def _many(
    op: str, a: Any, s: Sequence[int] | None, axes: Sequence[int] | None, real: bool,
    inverse: bool, norm: str, stream: Any,
) -> Array:
    if axes is None:
        if s is not None:
            raise ValueError(f"{op}: axes must not be None when s is given")
        ndim = as_array(a, op).ndim
        axes = list(range(ndim))
    return fft_transform(op, a, s, axes, real, inverse, stream, norm)


def fft2(
    a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1),
    norm: str = "backward", *, stream: Any = None,
) -> Array:
    """Two-dimensional DFT over `axes` (default the last two); `s` gives their lengths.

    Args:
        a: the input array.
        s: the transform lengths along `axes` (`a` is truncated or zero-padded); default
            their sizes.
        axes: the axes to transform; default the last two.
        norm: the scaling: "backward" (1/n on the inverse), "ortho" (1/sqrt(n) both ways) or
            "forward" (1/n on the forward transform); n is the product of the lengths.
        stream: the stream (or device) to record on.

    Returns:
        A complex64 array.

    Raises:
        ValueError: if `s` is given with `axes=None`, axes repeat or are out of range, or a
            length is not positive.

    Example:
        >>> import nuvec as mx
        >>> mx.fft.fft2(mx.ones((2, 2))).tolist()
        [[(4+0j), 0j], [0j, 0j]]
    """
    return _many("fft2", a, s, axes, False, False, norm, stream)


def ifft2(
    a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1),
    norm: str = "backward", *, stream: Any = None,
) -> Array:
    """Two-dimensional inverse DFT; see `fft2`.

    Args:
        a, s, axes, norm, stream: as `fft2`.

    Returns:
        A complex64 array.

    Raises:
        ValueError: if `s` is given with `axes=None`, axes repeat or are out of range, or a
            length is not positive.

    Example:
        >>> import nuvec as mx
        >>> mx.fft.ifft2(mx.array([[4.0, 0.0], [0.0, 0.0]])).tolist()
        [[(1+0j), (1+0j)], [(1+0j), (1+0j)]]
    """
    return _many("ifft2", a, s, axes, False, True, norm, stream)


def rfft2(
    a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1),
    norm: str = "backward", *, stream: Any = None,
) -> Array:
    """Two-dimensional real DFT; the last of `axes` keeps `s[-1] // 2 + 1` frequencies.

    Of a complex input only the real part is transformed (as MLX).

    Args:
        a, s, axes, norm, stream: as `fft2`.

    Returns:
        A complex64 array.

    Raises:
        ValueError: if `s` is given with `axes=None`, axes repeat or are out of range, or a
            length is not positive.

    Example:
        >>> import nuvec as mx
        >>> mx.fft.rfft2(mx.ones((2, 4))).shape
        (2, 3)
    """
    return _many("rfft2", a, s, axes, True, False, norm, stream)


def irfft2(
    a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1),
    norm: str = "backward", *, stream: Any = None,
) -> Array:
    """The inverse of `rfft2`: a float32 array with lengths `s` along `axes`.

    Args:
        a: the input array.
        s: the output lengths along `axes`; default their sizes, `2 * (size - 1)` for the
            last one.
        axes: the axes to transform; default the last two.
        norm: the scaling: "backward" (1/n on the inverse), "ortho" (1/sqrt(n) both ways) or
            "forward" (1/n on the forward transform); n is the product of the lengths.
        stream: the stream (or device) to record on.

    Returns:
        A float32 array.

    Raises:
        ValueError: if `s` is given with `axes=None`, axes repeat or are out of range, or a
            length is not positive.

    Example:
        >>> import nuvec as mx
        >>> mx.fft.irfft2(mx.ones((2, 3))).shape
        (2, 4)
    """
    return _many("irfft2", a, s, axes, True, True, norm, stream)


def fftn(
    a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
    norm: str = "backward", *, stream: Any = None,
) -> Array:
    """n-dimensional DFT over `axes` (default all axes); `s` gives their lengths.

    Args:
        a: the input array.
        s: the transform lengths along `axes` (`a` is truncated or zero-padded); default
            their sizes.
        axes: the axes to transform; default all.
        norm: the scaling: "backward" (1/n on the inverse), "ortho" (1/sqrt(n) both ways) or
            "forward" (1/n on the forward transform); n is the product of the lengths.
        stream: the stream (or device) to record on.

    Returns:
        A complex64 array.

    Raises:
        ValueError: if `s` is given with `axes=None`, axes repeat or are out of range, or a
            length is not positive.

    Example:
        >>> import nuvec as mx
        >>> mx.fft.fftn(mx.ones((2, 2, 2)))[0, 0, 0].item()
        (8+0j)
    """
    return _many("fftn", a, s, axes, False, False, norm, stream)


def ifftn(
    a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
    norm: str = "backward", *, stream: Any = None,
) -> Array:
    """n-dimensional inverse DFT; see `fftn`.

    Args:
        a, s, axes, norm, stream: as `fftn`.

    Returns:
        A complex64 array.

    Raises:
        ValueError: if `s` is given with `axes=None`, axes repeat or are out of range, or a
            length is not positive.

    Example:
        >>> import nuvec as mx
        >>> mx.fft.ifftn(mx.array([[8.0, 0.0], [0.0, 0.0]]), axes=(0,)).tolist()
        [[(4+0j), 0j], [(4+0j), 0j]]
    """
    return _many("ifftn", a, s, axes, False, True, norm, stream)


def rfftn(
    a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
    norm: str = "backward", *, stream: Any = None,
) -> Array:
    """n-dimensional real DFT; the last of `axes` keeps `s[-1] // 2 + 1` frequencies.

    Of a complex input only the real part is transformed (as MLX).

    Args:
        a, s, axes, norm, stream: as `fftn`.

    Returns:
        A complex64 array.

    Raises:
        ValueError: if `s` is given with `axes=None`, axes repeat or are out of range, or a
            length is not positive.

    Example:
        >>> import nuvec as mx
        >>> mx.fft.rfftn(mx.ones((2, 2, 4))).shape
        (2, 2, 3)
    """
    return _many("rfftn", a, s, axes, True, False, norm, stream)


def irfftn(
    a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
    norm: str = "backward", *, stream: Any = None,
) -> Array:
    """The inverse of `rfftn`: a float32 array with lengths `s` along `axes`.

    Args:
        a: the input array.
        s: the output lengths along `axes`; default their sizes, `2 * (size - 1)` for the
            last one.
        axes: the axes to transform; default all.
        norm: the scaling: "backward" (1/n on the inverse), "ortho" (1/sqrt(n) both ways) or
            "forward" (1/n on the forward transform); n is the product of the lengths.
        stream: the stream (or device) to record on.

    Returns:
        A float32 array.

    Raises:
        ValueError: if `s` is given with `axes=None`, axes repeat or are out of range, or a
            length is not positive.

    Example:
        >>> import nuvec as mx
        >>> mx.fft.irfftn(mx.array([[4.0, 0.0], [0.0, 0.0]])).tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    return _many("irfftn", a, s, axes, True, True, norm, stream)
