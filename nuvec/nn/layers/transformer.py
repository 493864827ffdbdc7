"""`MultiHeadAttention` and the transformer layers of `mlx.nn`: `TransformerEncoderLayer`,
`TransformerEncoder`, `TransformerDecoderLayer`, `TransformerDecoder`, `Transformer`.

Attention runs through `mx.fast.scaled_dot_product_attention` (a fused kernel on a GPU, the
row-blocked composition on the CPU).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import nuvec as mx
from nuvec.nn.layers.activations import relu
from nuvec.nn.layers.base import input_array, size_arg
from nuvec.nn.layers.dropout import Dropout
from nuvec.nn.layers.linear import Linear
from nuvec.nn.layers.normalization import LayerNorm
from nuvec.nn.module import Module
from nuvec.nn.utils import checkpoint as checkpoint_module

__all__ = ["MultiHeadAttention", "TransformerEncoderLayer", "TransformerEncoder",
           "TransformerDecoderLayer", "TransformerDecoder", "Transformer"]


class MultiHeadAttention(Module):
    """Multi-head attention.

    Multi-head attention: projections of queries, keys and values, scaled dot-product
    attention per head, and an output projection.

    Args:
        dims: the model size (query and key projections' size; divisible by `num_heads`).
        num_heads: the number of heads.
        query_input_dims: query features (default `dims`).
        key_input_dims: key features (default `dims`).
        value_input_dims: value features (default `key_input_dims`).
        value_dims: the value projection's size (default `dims`).
        value_output_dims: the output size (default `dims`).
        bias: whether the projections have biases.

    Raises:
        ValueError: if `dims` is not divisible by `num_heads`.

    Example:
        >>> import nuvec.nn as nn
        >>> attn = nn.MultiHeadAttention(8, 2)
        >>> x = mx.ones((1, 5, 8))
        >>> attn(x, x, x, mask=attn.create_additive_causal_mask(5)).shape
        (1, 5, 8)
    """

    def __init__(self, dims: int, num_heads: int, query_input_dims: int | None = None,
                 key_input_dims: int | None = None, value_input_dims: int | None = None,
                 value_dims: int | None = None, value_output_dims: int | None = None,
                 bias: bool = False) -> None:
        super().__init__()
        _check_heads(type(self).__name__, dims, num_heads)
        query_input_dims = query_input_dims or dims
        key_input_dims = key_input_dims or dims
        value_input_dims = value_input_dims or key_input_dims
        value_dims = value_dims or dims
        value_output_dims = value_output_dims or dims
        self.num_heads = num_heads
        # (the input sizes, for the call's checks: a quantized projection's weight is packed)
        object.__setattr__(self, "_input_dims",
                           (query_input_dims, key_input_dims, value_input_dims))
        self.query_proj = Linear(query_input_dims, dims, bias=bias)
        self.key_proj = Linear(key_input_dims, dims, bias=bias)
        self.value_proj = Linear(value_input_dims, value_dims, bias=bias)
        self.out_proj = Linear(value_dims, value_output_dims, bias=bias)

    def __call__(self, queries: mx.array, keys: mx.array, values: mx.array,
                 mask: Any = None) -> mx.array:
        name = type(self).__name__
        queries, keys, values = (input_array(a, name) for a in (queries, keys, values))
        for what, a, features in zip(("queries", "keys", "values"), (queries, keys, values),
                                     self._input_dims):
            if a.ndim != 3 or a.shape[-1] != features:
                raise ValueError(f"{name}: expected {what} of shape (N, L, {features}), got "
                                 f"shape {a.shape}")
        if keys.shape[:2] != values.shape[:2] or keys.shape[0] != queries.shape[0]:
            raise ValueError(f"{name}: the batch sizes and the key and value lengths must "
                             f"match, got queries {queries.shape}, keys {keys.shape}, values "
                             f"{values.shape}")
        queries = self.query_proj(queries)
        keys = self.key_proj(keys)
        values = self.value_proj(values)
        heads = self.num_heads
        batch, length, _ = queries.shape
        source = keys.shape[1]
        queries = queries.reshape(batch, length, heads, -1).transpose(0, 2, 1, 3)
        keys = keys.reshape(batch, source, heads, -1).transpose(0, 2, 1, 3)
        values = values.reshape(batch, source, heads, -1).transpose(0, 2, 1, 3)
        scale = math.sqrt(1.0 / queries.shape[-1])
        out = mx.fast.scaled_dot_product_attention(queries, keys, values, scale=scale,
                                                   mask=mask)
        return self.out_proj(out.transpose(0, 2, 1, 3).reshape(batch, length, -1))

    @staticmethod
    def create_additive_causal_mask(N: int, dtype: Any = mx.float32) -> mx.array:
        """An `(N, N)` mask: 0 where a query may see a key (not later), the dtype's lowest
        value elsewhere."""
        indices = mx.arange(N)
        hidden = indices[:, None] < indices[None]
        return hidden.astype(dtype) * mx.finfo(dtype).min


def _check_heads(name: str, dims: Any, num_heads: Any) -> None:
    """Raises for sizes that are not positive ints or heads that do not divide `dims`."""
    dims = size_arg(dims, name, "dims")
    num_heads = size_arg(num_heads, name, "num_heads")
    if dims % num_heads:
        raise ValueError(f"{name}: the input feature dimensions should be divisible by the "
                         f"number of heads ({dims} % {num_heads}) != 0")


def _mlp(dims: int, mlp_dims: int | None) -> tuple[Linear, Linear]:
    hidden = mlp_dims or dims * 4
    return Linear(dims, hidden), Linear(hidden, dims)


class TransformerEncoderLayer(Module):
    """A transformer encoder layer.

    Self-attention and an MLP, each with a residual and a LayerNorm (before the branch
    when `norm_first`, after the residual otherwise).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.TransformerEncoderLayer(8, 2)(mx.ones((1, 3, 8)), None).shape
        (1, 3, 8)
    """

    def __init__(self, dims: int, num_heads: int, mlp_dims: int | None = None,
                 dropout: float = 0.0, activation: Callable[[Any], Any] = relu,
                 norm_first: bool = True) -> None:
        super().__init__()
        _check_heads(type(self).__name__, dims, num_heads)
        self.attention = MultiHeadAttention(dims, num_heads)
        self.ln1, self.ln2 = LayerNorm(dims), LayerNorm(dims)
        self.linear1, self.linear2 = _mlp(dims, mlp_dims)
        self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout)
        self.activation, self.norm_first = activation, norm_first

    def _feed_forward(self, x: mx.array) -> mx.array:
        return self.linear2(self.dropout2(self.activation(self.linear1(x))))

    def __call__(self, x: mx.array, mask: Any) -> mx.array:
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.attention(y, y, y, mask))
            return x + self._feed_forward(self.ln2(x))
        x = self.ln1(x + self.dropout1(self.attention(x, x, x, mask)))
        return self.ln2(x + self._feed_forward(x))


class TransformerEncoder(Module):
    """A stack of transformer encoder layers.

    `num_layers` encoder layers and a final LayerNorm; with `checkpoint`, each layer is
    recomputed in the backward pass.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.TransformerEncoder(2, 8, 2)(mx.ones((1, 3, 8)), None).shape
        (1, 3, 8)
    """

    def __init__(self, num_layers: int, dims: int, num_heads: int, mlp_dims: int | None = None,
                 dropout: float = 0.0, activation: Callable[[Any], Any] = relu,
                 norm_first: bool = True, checkpoint: bool = False) -> None:
        super().__init__()
        _check_heads(type(self).__name__, dims, num_heads)
        num_layers = size_arg(num_layers, type(self).__name__, "num_layers", low=0)
        self.layers = [TransformerEncoderLayer(dims, num_heads, mlp_dims, dropout, activation,
                                               norm_first) for _ in range(num_layers)]
        self.ln = LayerNorm(dims)
        self.checkpoint = checkpoint

    def __call__(self, x: mx.array, mask: Any) -> mx.array:
        for layer in self.layers:
            x = (checkpoint_module(layer) if self.checkpoint else layer)(x, mask)
        return self.ln(x)


class TransformerDecoderLayer(Module):
    """A transformer decoder layer.

    Self-attention, cross-attention over `memory`, and an MLP, each with a residual and a
    LayerNorm (placed as in `TransformerEncoderLayer`).

    Example:
        >>> import nuvec.nn as nn
        >>> layer = nn.TransformerDecoderLayer(8, 2)
        >>> layer(mx.ones((1, 3, 8)), mx.ones((1, 4, 8)), None, None).shape
        (1, 3, 8)
    """

    def __init__(self, dims: int, num_heads: int, mlp_dims: int | None = None,
                 dropout: float = 0.0, activation: Callable[[Any], Any] = relu,
                 norm_first: bool = True) -> None:
        super().__init__()
        _check_heads(type(self).__name__, dims, num_heads)
        self.self_attention = MultiHeadAttention(dims, num_heads)
        self.cross_attention = MultiHeadAttention(dims, num_heads)
        self.ln1, self.ln2, self.ln3 = LayerNorm(dims), LayerNorm(dims), LayerNorm(dims)
        self.linear1, self.linear2 = _mlp(dims, mlp_dims)
        self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation, self.norm_first = activation, norm_first

    def _feed_forward(self, x: mx.array) -> mx.array:
        return self.linear2(self.dropout3(self.activation(self.linear1(x))))

    def __call__(self, x: mx.array, memory: mx.array, x_mask: Any,
                 memory_mask: Any) -> mx.array:
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.self_attention(y, y, y, x_mask))
            y = self.ln2(x)
            x = x + self.dropout2(self.cross_attention(y, memory, memory, memory_mask))
            return x + self._feed_forward(self.ln3(x))
        x = self.ln1(x + self.dropout1(self.self_attention(x, x, x, x_mask)))
        x = self.ln2(x + self.dropout2(self.cross_attention(x, memory, memory, memory_mask)))
        return self.ln3(x + self._feed_forward(x))


class TransformerDecoder(Module):
    """`num_layers` decoder layers and a final LayerNorm (`checkpoint` as the encoder's).

    Example:
        >>> import nuvec.nn as nn
        >>> decoder = nn.TransformerDecoder(2, 8, 2)
        >>> decoder(mx.ones((1, 3, 8)), mx.ones((1, 4, 8)), None, None).shape
        (1, 3, 8)
    """

    def __init__(self, num_layers: int, dims: int, num_heads: int, mlp_dims: int | None = None,
                 dropout: float = 0.0, activation: Callable[[Any], Any] = relu,
                 norm_first: bool = True, checkpoint: bool = False) -> None:
        super().__init__()
        _check_heads(type(self).__name__, dims, num_heads)
        num_layers = size_arg(num_layers, type(self).__name__, "num_layers", low=0)
        self.layers = [TransformerDecoderLayer(dims, num_heads, mlp_dims, dropout, activation,
                                               norm_first) for _ in range(num_layers)]
        self.ln = LayerNorm(dims)
        self.checkpoint = checkpoint

    def __call__(self, x: mx.array, memory: mx.array, x_mask: Any,
                 memory_mask: Any) -> mx.array:
        for layer in self.layers:
            x = (checkpoint_module(layer) if self.checkpoint else layer)(
                x, memory, x_mask, memory_mask)
        return self.ln(x)


class Transformer(Module):
    """An encoder-decoder transformer (`TransformerEncoder` then `TransformerDecoder`).

    Example:
        >>> import nuvec.nn as nn
        >>> model = nn.Transformer(8, 2, num_encoder_layers=1, num_decoder_layers=1)
        >>> model(mx.ones((1, 4, 8)), mx.ones((1, 3, 8)), None, None, None).shape
        (1, 3, 8)
    """

    def __init__(self, dims: int = 512, num_heads: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, mlp_dims: int | None = None,
                 dropout: float = 0.0, activation: Callable[[Any], Any] = relu,
                 custom_encoder: Module | None = None, custom_decoder: Module | None = None,
                 norm_first: bool = True, checkpoint: bool = False) -> None:
        super().__init__()
        _check_heads(type(self).__name__, dims, num_heads)
        # `is None`, not `or`: an empty module (`nn.Identity()`) is an empty dict, so falsy.
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            num_encoder_layers, dims, num_heads, mlp_dims, dropout, activation, norm_first,
            checkpoint)
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            num_decoder_layers, dims, num_heads, mlp_dims, dropout, activation, norm_first,
            checkpoint)

    def __call__(self, src: mx.array, tgt: mx.array, src_mask: Any, tgt_mask: Any,
                 memory_mask: Any) -> mx.array:
        memory = self.encoder(src, src_mask)
        return self.decoder(tgt, memory, tgt_mask, memory_mask)
