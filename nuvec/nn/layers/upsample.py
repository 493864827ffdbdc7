"""`Upsample` and the interpolations it uses (`upsample_nearest`, `upsample_linear`,
`upsample_cubic`), as `mlx.nn`: channels last, any number of spatial axes, each interpolated
separately (so linear is bilinear/trilinear and cubic bicubic in 2-D).

An axis of `N` samples becomes `M = int(scale * N)`. Source coordinates: `i * (N - 1) / (M - 1)`
with `align_corners`, else outputs spaced `1 / scale` apart with their centre on the input's,
`(i - (M - 1) / 2) / scale + (N - 1) / 2` (the half-pixel `(i + 0.5) / scale - 0.5` when
`scale * N` is whole). Nearest takes `round((i + 0.5) * N / M - 0.5)` (ties to even) when
`M > N`, else `floor(i * N / M)`. Cubic uses Keys' kernel with `a = -0.75` and clamps indices
at the edges. Linear and cubic return at least float32 (`promote_types(x.dtype, float32)`).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

import nuvec as mx
from nuvec.nn.layers.base import check_parameter_bytes, input_array
from nuvec.nn.module import Module
from nuvec.ops.arguments import check_shape, real_number

__all__ = ["Upsample", "upsample_nearest", "upsample_linear", "upsample_cubic"]


def _coordinates(n: int, scale: float, align_corners: bool) -> np.ndarray:
    m = int(scale * n)
    if align_corners:
        return np.arange(m) * ((n - 1) / max(m - 1, 1))
    return (np.arange(m) - (m - 1) / 2) / scale + (n - 1) / 2


def _nearest_indices(n: int, scale: float) -> np.ndarray:
    """The input index each of the `int(scale * n)` outputs copies; computed in float32 so that
    ties and near-ties round as MLX's."""
    m = int(scale * n)
    i = np.arange(m, dtype=np.float32)
    ratio = np.float32(n / max(m, 1))
    if m > n:
        index = np.round((i + np.float32(0.5)) * ratio - np.float32(0.5))
    else:
        index = np.floor(i * ratio)
    return np.minimum(index, n - 1).astype(np.int32)


def _resample(x: mx.array, axis: int, taps: list[tuple[np.ndarray, np.ndarray]]) -> mx.array:
    """`sum_t weight_t * take(x, index_t, axis)` with weights broadcast along `axis`, in
    `x`'s dtype promoted with float32."""
    shape = [1] * x.ndim
    dtype = mx.promote_types(x.dtype, mx.float32)
    out = None
    for index, weight in taps:
        shape[axis] = len(index)
        w = mx.array(weight.reshape(shape), dtype=dtype)
        term = mx.take(x, mx.array(index.astype(np.int32)), axis=axis) * w
        out = term if out is None else out + term
    return out


def _scale_factors(scale_factor: Any, name: str) -> float | tuple[float, ...]:
    """One finite, positive scale factor or a tuple of them, as floats.

    Raises:
        TypeError: for a factor that is not a real number.
        ValueError: for a factor that is NaN, infinite, zero or negative.
    """
    if isinstance(scale_factor, (list, tuple)):
        return tuple(real_number(s, name, "scale_factor", positive=True) for s in scale_factor)
    return real_number(scale_factor, name, "scale_factor", positive=True)


def _scales(x: mx.array, scale_factor: Any, name: str, dtype: Any) -> tuple[float, ...]:
    """The checked factor of each spatial axis of `x` (`(N, *spatial, C)`).

    Raises:
        ValueError: for a bad rank or factor, or an output (or a step towards it: one axis
            is resampled at a time) with a dimension past int32 or more bytes than the
            device's memory (`dtype` being the result's).
    """
    if x.ndim < 3:
        raise ValueError(f"{name}: expected (N, *spatial, C) input, got shape {x.shape}")
    spatial = x.ndim - 2
    scales = _scale_factors(scale_factor, name)
    if not isinstance(scales, tuple):
        scales = (scales,) * spatial
    if len(scales) != spatial:
        raise ValueError(f"{name}: got {len(scales)} scale factors for an input of shape "
                         f"{x.shape} ({spatial} spatial axes)")
    shape = list(x.shape)
    for axis, scale in enumerate(scales, start=1):
        shape[axis] = int(scale * shape[axis])
        check_shape(tuple(shape), name)
        check_parameter_bytes(name, tuple(shape), dtype.size, dtype.name)
    return scales


def upsample_nearest(x: mx.array, scale_factor: Sequence[float]) -> mx.array:
    """Nearest-neighbour upsampling: each output copies the input nearest its centre (the
    first of its span when shrinking); indices as the module docstring says.

    Args:
        x: `(N, *spatial, C)`.
        scale_factor: one factor per spatial axis (or one for all).

    Returns:
        `(N, *(int(s * n) for each spatial n), C)`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.upsample_nearest(mx.array([[[1], [2]]]), (2,)).reshape(-1).tolist()
        [1, 1, 2, 2]
    """
    x = input_array(x, "upsample_nearest")
    for axis, scale in enumerate(_scales(x, scale_factor, "upsample_nearest", x.dtype),
                                 start=1):
        x = mx.take(x, mx.array(_nearest_indices(x.shape[axis], scale)), axis=axis)
    return x


def _float_dtype(x: mx.array) -> Any:
    return mx.promote_types(x.dtype, mx.float32)


def _triangle(d: np.ndarray) -> np.ndarray:
    return np.maximum(1.0 - d, 0.0)


def _cubic_pil(d: np.ndarray) -> np.ndarray:
    """Keys' kernel with `a = -0.5` (PIL's and PyTorch's antialiased cubic), support 2."""
    a = -0.5
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d <= 2, far, 0.0))


def _antialiased(x: mx.array, scale_factor: Any, name: str, align_corners: bool,
                 kernel: Any, radius: float) -> mx.array:
    """Separable resampling with `kernel` widened by `1 / scale` when downsampling (a
    low-pass filter against aliasing), taps outside the input dropped and each output's
    weights renormalized, as MLX's and PyTorch's `antialias=True`."""
    if align_corners:
        raise ValueError(f"{name}: antialias=True with align_corners=True is not supported; "
                         "use align_corners=False")
    for axis, scale in enumerate(_scales(x, scale_factor, name, _float_dtype(x)), start=1):
        n = x.shape[axis]
        src = _coordinates(n, scale, False)
        widen = 1.0 / scale if scale < 1 else 1.0
        count = math.ceil(radius * widen) + 1
        base = np.floor(src)
        index = [base + k for k in range(1 - count, count)]
        weights = [np.where((i >= 0) & (i < n), kernel(np.abs(src - i) / widen), 0.0)
                   for i in index]
        total = sum(weights)
        total = np.where(total > 0, total, 1.0)
        x = _resample(x, axis, [(np.clip(i, 0, n - 1), w / total)
                                for i, w in zip(index, weights)])
    return x


def upsample_linear(x: mx.array, scale_factor: Sequence[float], align_corners: bool = False,
                    antialias: bool = False) -> mx.array:
    """Linear (bilinear, trilinear) upsampling.

    Linear (bilinear, trilinear) upsampling; coordinates as the module docstring says,
    clipped to the input. With `antialias` a downsampling axis is filtered by the triangle
    kernel widened to `1 / scale` input samples (PyTorch's `antialias=True`).

    Raises:
        ValueError: for `antialias` with `align_corners`, or a count of scale factors that
            is not the input's spatial rank.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.upsample_linear(mx.array([[[1.0], [2.0]]]), (2,)).reshape(-1).tolist()
        [1.0, 1.25, 1.75, 2.0]
    """
    x = input_array(x, "upsample_linear")
    if antialias:
        return _antialiased(x, scale_factor, "upsample_linear", align_corners, _triangle, 1.0)
    for axis, scale in enumerate(_scales(x, scale_factor, "upsample_linear", _float_dtype(x)),
                                 start=1):
        n = x.shape[axis]
        src = np.clip(_coordinates(n, scale, align_corners), 0, n - 1)
        low = np.floor(src)
        frac = src - low
        high = np.minimum(low + 1, n - 1)
        x = _resample(x, axis, [(low, 1 - frac), (high, frac)])
    return x


def _cubic_weights(t: np.ndarray, a: float = -0.75) -> list[np.ndarray]:
    """Keys' cubic convolution weights of the taps at offsets -1, 0, 1, 2 from `floor`."""
    def near(d: np.ndarray) -> np.ndarray:
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d: np.ndarray) -> np.ndarray:
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def upsample_cubic(x: mx.array, scale_factor: Sequence[float], align_corners: bool = False,
                   antialias: bool = False) -> mx.array:
    """Cubic (bicubic) upsampling with Keys' kernel (`a = -0.75`), edge indices clamped.

    With `antialias` the kernel is `a = -0.5` (PIL's), widened to `1 / scale` input samples
    on a downsampling axis, out-of-range taps dropped and the weights renormalized (PyTorch's
    `antialias=True`).

    Raises:
        ValueError: for `antialias` with `align_corners`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.upsample_cubic(mx.ones((1, 2, 2, 1)), 2).shape
        (1, 4, 4, 1)
    """
    x = input_array(x, "upsample_cubic")
    if antialias:
        return _antialiased(x, scale_factor, "upsample_cubic", align_corners, _cubic_pil, 2.0)
    for axis, scale in enumerate(_scales(x, scale_factor, "upsample_cubic", _float_dtype(x)),
                                 start=1):
        n = x.shape[axis]
        src = _coordinates(n, scale, align_corners)
        low = np.floor(src)
        weights = _cubic_weights(src - low)
        taps = [(np.clip(low + offset, 0, n - 1), w)
                for offset, w in zip((-1, 0, 1, 2), weights)]
        x = _resample(x, axis, taps)
    return x


class Upsample(Module):
    """Upsamples the spatial axes of `(N, *spatial, C)` inputs.

    Args:
        scale_factor: one factor for every spatial axis, or one per axis.
        mode: `"nearest"`, `"linear"` or `"cubic"`.
        align_corners: for linear and cubic: map the corner pixels' centres onto each other
            (otherwise outputs spaced `1 / scale` apart, centred on the input).
        antialias: for linear and cubic without `align_corners`: filter downsampled axes
            (see `upsample_linear`, `upsample_cubic`).

    Raises:
        ValueError: for another mode, or `antialias` with `"nearest"` or `align_corners`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Upsample(2, mode="linear")(mx.ones((1, 3, 3, 2))).shape
        (1, 6, 6, 2)
    """

    def __init__(self, scale_factor: float | tuple, mode: str = "nearest",
                 align_corners: bool = False, antialias: bool = False) -> None:
        super().__init__()
        if mode not in ("nearest", "linear", "cubic"):
            raise ValueError(f"Upsample: got unsupported upsampling algorithm: {mode!r}; "
                             "use 'nearest', 'linear' or 'cubic'")
        if antialias and (mode == "nearest" or align_corners):
            raise ValueError("Upsample: antialias=True needs mode 'linear' or 'cubic' and "
                             f"align_corners=False, got mode={mode!r}, "
                             f"align_corners={align_corners}")
        self.antialias = antialias
        self.scale_factor = _scale_factors(scale_factor, "Upsample")
        self.mode, self.align_corners = mode, align_corners

    def _extra_repr(self) -> str:
        flag = ", antialias=True" if self.antialias else ""  # shown when set, as MLX's
        return (f"scale_factor={self.scale_factor}, mode={self.mode!r}, "
                f"align_corners={self.align_corners}{flag}")

    def __call__(self, x: mx.array) -> mx.array:
        x = input_array(x, "Upsample")
        dtype = x.dtype if self.mode == "nearest" else _float_dtype(x)
        _scales(x, self.scale_factor, "Upsample", dtype)  # (checked here to name the layer)
        if self.mode == "nearest":
            return upsample_nearest(x, self.scale_factor)
        interpolate = upsample_linear if self.mode == "linear" else upsample_cubic
        return interpolate(x, self.scale_factor, self.align_corners, self.antialias)
