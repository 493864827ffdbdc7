"""`RoPE`, `SinusoidalPositionalEncoding` and `ALiBi`, as `mlx.nn`."""

from __future__ import annotations

import math
from typing import Any

import nuvec as mx
from nuvec.nn.layers.base import check_ndim, input_array
from nuvec.nn.module import Module

__all__ = ["RoPE", "SinusoidalPositionalEncoding", "ALiBi"]


class RoPE(Module):
    """Rotary positional encoding of the first `dims` features (`mx.fast.rope`).

    Args:
        dims: the features rotated (even).
        traditional: rotate consecutive pairs (the original paper) rather than the two halves.
        base: the base of the rotation frequencies.
        scale: positions are multiplied by it.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.RoPE(4)(mx.ones((1, 3, 4)), offset=2).shape
        (1, 3, 4)
    """

    def __init__(self, dims: int, traditional: bool = False, base: float = 10000,
                 scale: float = 1.0) -> None:
        super().__init__()
        self.dims, self.traditional, self.base, self.scale = dims, traditional, base, scale

    def _extra_repr(self) -> str:
        return f"{self.dims}, traditional={self.traditional}"

    def __call__(self, x: mx.array, offset: Any = 0) -> mx.array:
        x = input_array(x, type(self).__name__)
        return mx.fast.rope(x, self.dims, traditional=self.traditional, base=self.base,
                            scale=self.scale, offset=offset)


class SinusoidalPositionalEncoding(Module):
    """Sinusoidal positional encoding.

    Sinusoidal encoding: `sin` and `cos` of `x * sigma` for `dims // 2` geometrically
    spaced frequencies `sigma` from `max_freq` down to `min_freq`.

    Args:
        dims: the encoding size.
        min_freq: the lowest frequency.
        max_freq: the highest frequency.
        scale: multiplies the result (default `sqrt(2 / dims)`).
        cos_first: put the cosines first.
        full_turns: multiply the frequencies by `2 * pi`.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.SinusoidalPositionalEncoding(8)(mx.arange(3)).shape
        (3, 8)
    """

    def __init__(self, dims: int, min_freq: float = 0.0001, max_freq: float = 1,
                 scale: float | None = None, cos_first: bool = False,
                 full_turns: bool = False) -> None:
        super().__init__()
        if dims <= 0 or dims % 2:
            raise ValueError(f"SinusoidalPositionalEncoding: dims must be positive and even, "
                             f"got {dims}")
        half = dims // 2
        one_zero = 1 - mx.arange(0, half, dtype=mx.float32) / max(half - 1, 1)
        low, high = math.log(min_freq), math.log(max_freq)
        self._sigmas = mx.exp(one_zero * (high - low) + low)
        if full_turns:
            self._sigmas = self._sigmas * (2 * math.pi)
        self.scale = scale or (2 / dims) ** 0.5
        self.cos_first = cos_first

    def __call__(self, x: mx.array) -> mx.array:
        y = input_array(x, type(self).__name__)[..., None] * self._sigmas
        parts = [mx.cos(y), mx.sin(y)] if self.cos_first else [mx.sin(y), mx.cos(y)]
        y = mx.concatenate(parts, axis=-1)
        return y * self.scale if self.scale != 1 else y


class ALiBi(Module):
    """Attention with linear biases: adds `-slope_h * |i - j|` to head `h`'s scores.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.ALiBi()(mx.zeros((1, 2, 3, 3))).shape
        (1, 2, 3, 3)
    """

    @staticmethod
    def create_alibi_matrix(q_sequence_length: int, k_sequence_length: int, num_heads: int,
                            offset: int, dtype: Any = mx.float32) -> mx.array:
        """The bias `(1, num_heads, q_len - offset, k_len)` for query positions from `offset`."""
        x1 = mx.arange(offset, q_sequence_length)
        x2 = mx.arange(0, k_sequence_length)
        distance = -mx.abs(x1[:, None] - x2[None, :])[None, None].astype(mx.float32)
        return (distance * ALiBi.create_alibi_slope(num_heads)).astype(dtype)

    @staticmethod
    def create_alibi_slope(num_heads: int) -> mx.array:
        """The slopes `(num_heads, 1, 1)`: `2 ** (-8 h / num_heads)` for h = 1..num_heads."""
        x = (2**8) ** (1.0 / num_heads)
        out = mx.power(x, -mx.arange(1, num_heads + 1, dtype=mx.float32))
        return out[:, None, None]

    def __call__(self, attention_scores: mx.array, offset: int = 0,
                 mask: mx.array | None = None) -> mx.array:
        attention_scores = input_array(attention_scores, type(self).__name__)
        check_ndim(attention_scores, 4, 4, type(self).__name__, "(N, heads, queries, keys)")
        bias = self.create_alibi_matrix(attention_scores.shape[-2] + offset,
                                        attention_scores.shape[-1], attention_scores.shape[1],
                                        offset, attention_scores.dtype)
        if mask is not None:
            bias = bias + mask
        return attention_scores + bias
