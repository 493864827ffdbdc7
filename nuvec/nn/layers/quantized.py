"""`QuantizedLinear`, `QuantizedEmbedding` and `quantize`, as `mlx.nn`.

Weights are stored as `mx.quantize` packs them (affine, `group_size` values per scale and
bias, `bits` bits each, packed into uint32) and are frozen: they are not trainable.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import nuvec as mx
from nuvec.nn.module import Module
from nuvec.utils import tree_map_with_path

__all__ = ["QuantizedLinear", "QuantizedEmbedding", "quantize"]


class QuantizedLinear(Module):
    """A `Linear` layer whose weight is quantized; computes with `mx.quantized_matmul`.

    Args:
        input_dims: input features (a multiple of `group_size`).
        output_dims: output features.
        bias: whether to add a (float) bias.
        group_size: values sharing one scale and bias.
        bits: bits per value.
        mode: the quantization mode (`"affine"`).

    Example:
        >>> import nuvec.nn as nn
        >>> layer = nn.QuantizedLinear(64, 8)
        >>> layer(mx.ones((2, 64))).shape, layer.weight.dtype
        ((2, 8), nuvec.uint32)
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group_size: int = 64, bits: int = 4, mode: str = "affine") -> None:
        super().__init__()
        self.group_size, self.bits, self.mode = group_size, bits, mode
        scale = math.sqrt(1.0 / input_dims)
        weight = mx.random.uniform(-scale, scale, (output_dims, input_dims))
        self.weight, self.scales, self.biases = mx.quantize(weight, group_size, bits, mode)
        if bias:
            self.bias = mx.zeros((output_dims,))
        self.freeze()

    def unfreeze(self, *args: Any, **kwargs: Any) -> Module:
        """Unfreezes as `Module.unfreeze`, keeping the quantized weight frozen."""
        super().unfreeze(*args, **kwargs)
        return self.freeze(recurse=False)

    def _extra_repr(self) -> str:
        out, packed = self.weight.shape
        return (f"input_dims={packed * 32 // self.bits}, output_dims={out}, "
                f"bias={'bias' in self}, group_size={self.group_size}, bits={self.bits}")

    def __call__(self, x: mx.array) -> mx.array:
        y = mx.quantized_matmul(x, self["weight"], scales=self["scales"],
                                biases=self["biases"], transpose=True,
                                group_size=self.group_size, bits=self.bits, mode=self.mode)
        return y + self["bias"] if "bias" in self else y

    @classmethod
    def from_linear(cls, linear_layer: Module, group_size: int = 64, bits: int = 4,
                    mode: str = "affine") -> "QuantizedLinear":
        """A `QuantizedLinear` holding `linear_layer`'s weight quantized (and its bias)."""
        out, inp = linear_layer.weight.shape
        layer = cls(inp, out, False, group_size, bits, mode)
        layer.weight, layer.scales, layer.biases = mx.quantize(
            linear_layer.weight, group_size, bits, mode)
        if "bias" in linear_layer:
            layer.bias = linear_layer.bias
        return layer


class QuantizedEmbedding(Module):
    """An `Embedding` whose table is quantized; rows are dequantized as they are looked up.

    Args:
        num_embeddings: the number of rows.
        dims: the size of each row (a multiple of `group_size`).
        group_size: values sharing one scale and bias.
        bits: bits per value.
        mode: the quantization mode (`"affine"`).

    Example:
        >>> import nuvec.nn as nn
        >>> nn.QuantizedEmbedding(10, 64)(mx.array([1, 2])).shape
        (2, 64)
    """

    def __init__(self, num_embeddings: int, dims: int, group_size: int = 64, bits: int = 4,
                 mode: str = "affine") -> None:
        super().__init__()
        self.group_size, self.bits, self.mode = group_size, bits, mode
        weight = mx.random.normal((num_embeddings, dims), scale=math.sqrt(1.0 / dims))
        self.weight, self.scales, self.biases = mx.quantize(weight, group_size, bits, mode)
        self.num_embeddings, self.dims = num_embeddings, dims
        self.freeze()

    def unfreeze(self, *args: Any, **kwargs: Any) -> Module:
        """Unfreezes as `Module.unfreeze`, keeping the quantized table frozen."""
        super().unfreeze(*args, **kwargs)
        return self.freeze(recurse=False)

    def _extra_repr(self) -> str:
        return (f"{self.num_embeddings}, {self.dims}, group_size={self.group_size}, "
                f"bits={self.bits}")

    def __call__(self, x: mx.array) -> mx.array:
        shape = x.shape
        x = x.flatten()
        rows = mx.dequantize(self["weight"][x], scales=self["scales"][x],
                             biases=self["biases"][x], group_size=self.group_size,
                             bits=self.bits, mode=self.mode)
        return rows.reshape(*shape, -1)

    def as_linear(self, x: mx.array) -> mx.array:
        """`x @ table.T` with the quantized table (tied output projection)."""
        return mx.quantized_matmul(x, self["weight"], scales=self["scales"],
                                   biases=self["biases"], transpose=True,
                                   group_size=self.group_size, bits=self.bits, mode=self.mode)

    @classmethod
    def from_embedding(cls, embedding_layer: Module, group_size: int = 64, bits: int = 4,
                       mode: str = "affine") -> "QuantizedEmbedding":
        """A `QuantizedEmbedding` holding `embedding_layer`'s table quantized."""
        num, dims = embedding_layer.weight.shape
        layer = cls(num, dims, group_size, bits, mode)
        layer.weight, layer.scales, layer.biases = mx.quantize(
            embedding_layer.weight, group_size, bits, mode)
        return layer


def quantize(model: Module, group_size: int = 64, bits: int = 4, *, mode: str = "affine",
             class_predicate: Callable[[str, Module], Any] | None = None) -> None:
    """Quantizes a model's layers in place (as `mlx.nn.quantize`).

    Replaces, in place, the leaf modules of `model` that have `to_quantized` by their
    quantized form (as `mlx.nn.quantize`).

    Args:
        model: the model to change.
        group_size: values sharing one scale and bias.
        bits: bits per value.
        mode: the quantization mode.
        class_predicate: `(path, module) -> bool | dict`: which layers to quantize; a dict gives
            that layer's own `to_quantized` arguments. By default every layer having
            `to_quantized`.

    Raises:
        ValueError: if the predicate selects a layer that cannot be quantized.

    Example:
        >>> import nuvec.nn as nn
        >>> model = nn.Sequential(nn.Linear(64, 64), nn.ReLU())
        >>> nn.quantize(model)
        >>> type(model.layers[0]).__name__
        'QuantizedLinear'
    """
    predicate = class_predicate or (lambda _, m: hasattr(m, "to_quantized"))

    def swap(path: str, module: Module) -> Module:
        chosen = predicate(path, module)
        if not chosen:
            return module
        if not hasattr(module, "to_quantized"):
            raise ValueError(f"quantize: unable to quantize the layer {path} of type "
                             f"{type(module).__name__}")
        options = {"group_size": group_size, "bits": bits, "mode": mode}
        if isinstance(chosen, dict):
            options.update(chosen)
        return module.to_quantized(**options)

    leaves = tree_map_with_path(swap, model.leaf_modules(), is_leaf=Module.is_module)
    model.update_modules(leaves)
