"""Transposed convolutions (`conv_transpose1d/2d/3d`) and 1-D `convolve`.

Each records one `Convolution` (`nuvec.ops.conv`): a transposed convolution is a flipped
convolution over the stride-dilated input, `convolve` a flipped `conv_general`.
"""

from __future__ import annotations

from typing import Any

from nuvec.graph.array import Array
from nuvec.graph.device import to_stream
from nuvec.ops.arguments import Scalar, as_array, promote, require_float
from nuvec.ops.conv import (
    Convolution, dilated_size, conv_inputs, record_conv, int_params, conv_general,
)
from nuvec.ops.shape import reshape

__all__ = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolve"]


def _conv_transpose(op: str, nd: int, input, weight, stride, padding, dilation, output_padding,
                    groups, stream) -> Array:
    """MLX's transposed convolution: a flipped convolution over the stride-dilated input."""
    s = to_stream(stream)
    x, w, nd = conv_inputs(op, input, weight, nd, groups, s)
    stride = int_params(op, "stride", stride, nd, 1)
    padding = int_params(op, "padding", padding, nd, -(2**31))  # negative: grown, as MLX
    dilation = int_params(op, "dilation", dilation, nd, 1)
    output_padding = int_params(op, "output_padding", output_padding, nd, 0)
    for i in range(nd):
        if output_padding[i] >= max(stride[i], dilation[i]):
            raise ValueError(f"{op}: output_padding {output_padding} must be smaller than the "
                             f"stride {stride} or the dilation {dilation}")
    lo, hi = [], []
    for i in range(nd):
        span = dilated_size(w.shape[1 + i], dilation[i])
        lo.append(span - padding[i] - 1)
        hi.append(span - padding[i] - 1 + output_padding[i])
    prim = Convolution((1,) * nd, tuple(lo), tuple(hi), dilation, stride, groups, True)
    return record_conv(op, x, w, prim, s)


def conv_transpose1d(input: Any, weight: Any, /, stride: int = 1, padding: int = 0,
                     dilation: int = 1, output_padding: int = 0, groups: int = 1, *,
                     stream: Any = None) -> Array:
    """1-D transposed convolution: the input gradient of `conv1d`, with MLX's weight layout
    `[C_out, K, C_in / groups]`. Output length `(L - 1) * stride - 2 * padding +
    dilation * (K - 1) + output_padding + 1`.

    Args:
        input: `[N, L, C_in]` floating-point input.
        weight: `[C_out, K, C_in / groups]` filters.
        stride, padding, dilation, output_padding: the input step, the zeros removed on
            each side, the tap spacing and the size added at the end, each an int.
        groups: the number of channel groups.
        stream: the stream (or device) to record on.

    Raises:
        ValueError: for wrong ranks, channels, groups or parameters (`output_padding` must be
            smaller than `stride` or `dilation`).
        TypeError: for non-floating inputs.

    Example:
        >>> import nuvec as mx
        >>> mx.conv_transpose1d(mx.ones((1, 3, 1)), mx.ones((1, 3, 1)), stride=2).shape
        (1, 7, 1)
    """
    return _conv_transpose("conv_transpose1d", 1, input, weight, stride, padding, dilation,
                           output_padding, groups, stream)


def conv_transpose2d(input: Any, weight: Any, /, stride: int | tuple[int, int] = 1,
                     padding: int | tuple[int, int] = 0, dilation: int | tuple[int, int] = 1,
                     output_padding: int | tuple[int, int] = 0, groups: int = 1, *,
                     stream: Any = None) -> Array:
    """2-D transposed convolution (see `conv_transpose1d`), weights `[C_out, KH, KW, C_in /
    groups]`.

    Args:
        input: `[N, H, W, C_in]` floating-point input.
        weight: `[C_out, KH, KW, C_in / groups]` filters.
        stride, padding, dilation, output_padding: the input step, the zeros removed on
            each side, the tap spacing and the size added at the end; each an int or
            one per spatial axis.
        groups: the number of channel groups.
        stream: the stream (or device) to record on.

    Raises:
        ValueError: for wrong ranks, channels, groups or parameters.
        TypeError: for non-floating inputs.

    Example:
        >>> import nuvec as mx
        >>> mx.conv_transpose2d(mx.ones((1, 2, 2, 1)), mx.ones((1, 3, 3, 1)), stride=2).shape
        (1, 5, 5, 1)
    """
    return _conv_transpose("conv_transpose2d", 2, input, weight, stride, padding, dilation,
                           output_padding, groups, stream)


def conv_transpose3d(input: Any, weight: Any, /, stride: int | tuple[int, int, int] = 1,
                     padding: int | tuple[int, int, int] = 0,
                     dilation: int | tuple[int, int, int] = 1,
                     output_padding: int | tuple[int, int, int] = 0, groups: int = 1, *,
                     stream: Any = None) -> Array:
    """3-D transposed convolution (see `conv_transpose1d`), weights `[C_out, KD, KH, KW,
    C_in / groups]`.

    Args:
        input: `[N, D, H, W, C_in]` floating-point input.
        weight: `[C_out, KD, KH, KW, C_in / groups]` filters.
        stride, padding, dilation, output_padding: the input step, the zeros removed on
            each side, the tap spacing and the size added at the end; each an int or
            one per spatial axis.
        groups: the number of channel groups.
        stream: the stream (or device) to record on.

    Raises:
        ValueError: for wrong ranks, channels, groups or parameters.
        TypeError: for non-floating inputs.

    Example:
        >>> import nuvec as mx
        >>> mx.conv_transpose3d(mx.ones((1, 2, 2, 2, 1)), mx.ones((1, 2, 2, 2, 1))).shape
        (1, 3, 3, 3, 1)
    """
    return _conv_transpose("conv_transpose3d", 3, input, weight, stride, padding, dilation,
                           output_padding, groups, stream)


def convolve(a: Any, v: Any, /, mode: str = "full", *, stream: Any = None) -> Array:
    """The discrete linear convolution of two 1-D arrays (MLX's and NumPy's `convolve`).

    The shorter array is the kernel (the two swap when `v` is longer than `a`); the product is
    one `conv_general` over `[1, L, 1]` with the kernel flipped.

    Args:
        a: a non-empty 1-D floating array.
        v: a non-empty 1-D floating array.
        mode: "full" (length `M + N - 1`), "same" (length `max(M, N)`, centered as NumPy) or
            "valid" (length `max(M, N) - min(M, N) + 1`).

    Returns:
        A 1-D array of the promoted dtype.

    Raises:
        ValueError: for an unknown mode, inputs that are not 1-D, or an empty input.
        TypeError: for non-floating inputs.

    Example:
        >>> import nuvec as mx
        >>> mx.convolve(mx.array([1.0, 2.0, 3.0]), mx.array([0.0, 1.0, 0.5])).tolist()
        [0.0, 1.0, 2.5, 4.0, 1.5]
    """
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")
    s = to_stream(stream)
    # a Python scalar is 0-d (promote would broadcast it to the other input's shape)
    a, v = (as_array(x, "convolve") if isinstance(x, Scalar) else x for x in (a, v))
    a, v = promote("convolve", a, v, s)
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"convolve: inputs must be 1-D, got shapes {a.shape} and {v.shape}")
    if a.size == 0 or v.size == 0:
        raise ValueError(f"convolve: inputs cannot be empty, got shapes {a.shape} and {v.shape}")
    require_float("convolve", a)
    signal, kernel = (v, a) if a.size < v.size else (a, v)
    k = kernel.size
    lo, hi = {"full": (k - 1, k - 1), "same": (k // 2, (k - 1) // 2), "valid": (0, 0)}[mode]
    out = conv_general(reshape(signal, (1, -1, 1), stream=s), reshape(kernel, (1, -1, 1), stream=s),
                       padding=([lo], [hi]), flip=True, stream=s)
    return reshape(out, (-1,), stream=s)
