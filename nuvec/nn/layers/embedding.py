"""`Embedding`, as `mlx.nn.Embedding`."""

from __future__ import annotations

import math

import nuvec as mx
from nuvec.nn.layers.base import check_last_dim, check_parameter_bytes, input_array, size_arg
from nuvec.nn.layers.quantized import QuantizedEmbedding
from nuvec.nn.module import Module

__all__ = ["Embedding"]


class Embedding(Module):
    """A lookup table of `num_embeddings` vectors of size `dims`, drawn from N(0, 1/dims).

    Args:
        num_embeddings: the number of rows (the vocabulary size).
        dims: the size of each vector.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.Embedding(10, 4)(mx.array([[1, 2, 3]])).shape
        (1, 3, 4)
    """

    def __init__(self, num_embeddings: int, dims: int) -> None:
        super().__init__()
        name = type(self).__name__
        num_embeddings = size_arg(num_embeddings, name, "num_embeddings", low=0)
        dims = size_arg(dims, name, "dims")
        check_parameter_bytes(name, (num_embeddings, dims))
        scale = math.sqrt(1.0 / dims)
        self.weight = mx.random.normal((num_embeddings, dims), scale=scale)

    def _extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, {self.weight.shape[1]}"

    def __call__(self, x: mx.array) -> mx.array:
        x = input_array(x, type(self).__name__)
        if not x.dtype.is_integer:
            raise mx.DtypeError(f"{type(self).__name__}: indices must be integers, got "
                                f"{x.dtype.name} (shape {x.shape})")
        return self["weight"][x]

    def as_linear(self, x: mx.array) -> mx.array:
        """`x @ weight.T`: the table used as an output projection (tied embeddings)."""
        x = input_array(x, "Embedding.as_linear")
        check_last_dim(x, self["weight"].shape[1], "Embedding.as_linear", "dims")
        lead = x.shape[:-1]
        y = x.reshape(-1, x.shape[-1]) @ self["weight"].T  # one 2-D product (see Linear)
        return y.reshape(*lead, y.shape[-1])

    def to_quantized(self, group_size: int | None = None, bits: int | None = None,
                     mode: str = "affine", quantize_input: bool = False) -> Module:
        """This layer as a `QuantizedEmbedding` (its table quantized).

        Raises:
            ValueError: with `quantize_input` (a lookup has no input to quantize).
        """
        if quantize_input:
            raise ValueError("Embedding.to_quantized: quantized inputs are not supported")
        return QuantizedEmbedding.from_embedding(self, group_size, bits, mode)
