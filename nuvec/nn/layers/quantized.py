"""`QuantizedLinear`, `QuantizedEmbedding`, `QQLinear` and `quantize`, as `mlx.nn`.

Weights are stored as `mx.quantize` packs them (affine, `group_size` values per scale and
bias, `bits` bits each, packed into uint32) and are frozen: they are not trainable.
`QQLinear` quantizes its input too (`mx.qqmm`) and, in training mode, keeps its weight in
high precision, quantized on the fly, so that it trains.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import nuvec as mx
from nuvec.nn.layers.base import check_last_dim, check_parameter_bytes, input_array, size_arg
from nuvec.nn.module import Module
from nuvec.ops.microscaled import PRODUCT_MODES, float_mode_params
from nuvec.utils import tree_map_with_path

__all__ = ["QuantizedLinear", "QuantizedEmbedding", "QQLinear", "quantize"]


def _linear_sizes(name: str, input_dims: Any, output_dims: Any) -> tuple[int, int]:
    """A quantized linear layer's checked sizes (`input_dims >= 1`, `output_dims >= 0`)."""
    input_dims = size_arg(input_dims, name, "input_dims")
    output_dims = size_arg(output_dims, name, "output_dims", low=0)
    check_parameter_bytes(name, (output_dims, input_dims))
    return input_dims, output_dims


def store_quantized(layer: Module, weight: mx.array, group_size: int | None, bits: int | None,
                    mode: str) -> None:
    """Sets `layer`'s `weight`, `scales` (and, in the affine mode, `biases`) to `weight`
    quantized, and its `group_size`, `bits` (read back from the shapes: None means the
    mode's default) and `mode`."""
    parts = mx.quantize(weight, group_size, bits, mode)
    layer.weight, layer.scales = parts[0], parts[1]
    if len(parts) > 2:
        layer.biases = parts[2]
    elif "biases" in layer:
        del layer["biases"]
    columns = weight.shape[-1]
    layer.group_size = columns // layer.scales.shape[-1]
    layer.bits = layer.weight.shape[-1] * 32 // columns
    layer.mode = mode


class QuantizedModule(Module):
    """A layer whose own (quantized) parameters stay frozen: `unfreeze` reaches only the
    layers inside it."""

    def unfreeze(self, *args: Any, **kwargs: Any) -> Module:
        """Unfreezes as `Module.unfreeze`, keeping this layer's own parameters frozen."""
        super().unfreeze(*args, **kwargs)
        return self.freeze(recurse=False)


class QuantizedLinear(QuantizedModule):
    """A `Linear` layer whose weight is quantized; computes with `mx.quantized_matmul`.

    Args:
        input_dims: input features (a multiple of `group_size`).
        output_dims: output features.
        bias: whether to add a (float) bias.
        group_size: values sharing one scale (and bias); None: the mode's default.
        bits: bits per value; None: the mode's default.
        mode: the quantization mode (`"affine"`, `"mxfp4"`, `"mxfp8"`, `"nvfp4"`, as
            `mx.quantize`'s; the floating modes have no biases).

    Example:
        >>> import nuvec.nn as nn
        >>> layer = nn.QuantizedLinear(64, 8)
        >>> layer(mx.ones((2, 64))).shape, layer.weight.dtype
        ((2, 8), nuvec.uint32)
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group_size: int | None = None, bits: int | None = None,
                 mode: str = "affine") -> None:
        super().__init__()
        input_dims, output_dims = _linear_sizes(type(self).__name__, input_dims, output_dims)
        scale = math.sqrt(1.0 / input_dims)
        weight = mx.random.uniform(-scale, scale, (output_dims, input_dims))
        store_quantized(self, weight, group_size, bits, mode)
        if bias:
            self.bias = mx.zeros((output_dims,))
        self.freeze()

    def _extra_repr(self) -> str:
        out, packed = self.weight.shape
        return (f"input_dims={packed * 32 // self.bits}, output_dims={out}, "
                f"bias={'bias' in self}, group_size={self.group_size}, bits={self.bits}, "
                f"mode={self.mode}")

    def __call__(self, x: mx.array) -> mx.array:
        x = input_array(x, type(self).__name__)
        columns = self["weight"].shape[1] * 32 // self.bits
        if not x.shape or x.shape[-1] != columns:
            check_last_dim(x, columns, type(self).__name__, "input_dims")
        y = mx.quantized_matmul(x, self["weight"], scales=self["scales"],
                                biases=self.get("biases"), transpose=True,
                                group_size=self.group_size, bits=self.bits, mode=self.mode)
        return y + self["bias"] if "bias" in self else y

    @classmethod
    def from_linear(cls, linear_layer: Module, group_size: int | None = None,
                    bits: int | None = None, mode: str = "affine") -> "QuantizedLinear":
        """A `QuantizedLinear` holding `linear_layer`'s weight quantized (and its bias)."""
        out, inp = linear_layer.weight.shape
        layer = cls(inp, out, False, group_size, bits, mode)
        store_quantized(layer, linear_layer.weight, group_size, bits, mode)
        if "bias" in linear_layer:
            layer.bias = linear_layer.bias
        return layer


class QuantizedEmbedding(QuantizedModule):
    """An `Embedding` whose table is quantized; rows are dequantized as they are looked up.

    Args:
        num_embeddings: the number of rows.
        dims: the size of each row (a multiple of `group_size`).
        group_size: values sharing one scale (and bias); None: the mode's default.
        bits: bits per value; None: the mode's default.
        mode: the quantization mode, as `QuantizedLinear`'s.

    Example:
        >>> import nuvec.nn as nn
        >>> nn.QuantizedEmbedding(10, 64)(mx.array([1, 2])).shape
        (2, 64)
    """

    def __init__(self, num_embeddings: int, dims: int, group_size: int | None = None,
                 bits: int | None = None, mode: str = "affine") -> None:
        super().__init__()
        name = type(self).__name__
        num_embeddings = size_arg(num_embeddings, name, "num_embeddings", low=0)
        dims = size_arg(dims, name, "dims")
        check_parameter_bytes(name, (num_embeddings, dims))
        weight = mx.random.normal((num_embeddings, dims), scale=math.sqrt(1.0 / dims))
        store_quantized(self, weight, group_size, bits, mode)
        self.num_embeddings, self.dims = num_embeddings, dims
        self.freeze()

    def _extra_repr(self) -> str:
        return (f"{self.num_embeddings}, {self.dims}, group_size={self.group_size}, "
                f"bits={self.bits}, mode={self.mode}")

    def __call__(self, x: mx.array) -> mx.array:
        x = input_array(x, type(self).__name__)
        if not x.dtype.is_integer:
            raise mx.DtypeError(f"{type(self).__name__}: indices must be integers, got "
                                f"{x.dtype.name} (shape {x.shape})")
        shape = x.shape
        x = x.flatten()
        biases = self["biases"][x] if "biases" in self else None
        rows = mx.dequantize(self["weight"][x], scales=self["scales"][x], biases=biases,
                             group_size=self.group_size, bits=self.bits, mode=self.mode)
        return rows.reshape(*shape, -1)

    def as_linear(self, x: mx.array) -> mx.array:
        """`x @ table.T` with the quantized table (tied output projection)."""
        return mx.quantized_matmul(x, self["weight"], scales=self["scales"],
                                   biases=self.get("biases"), transpose=True,
                                   group_size=self.group_size, bits=self.bits, mode=self.mode)

    @classmethod
    def from_embedding(cls, embedding_layer: Module, group_size: int | None = None,
                       bits: int | None = None, mode: str = "affine") -> "QuantizedEmbedding":
        """A `QuantizedEmbedding` holding `embedding_layer`'s table quantized."""
        num, dims = embedding_layer.weight.shape
        layer = cls(num, dims, group_size, bits, mode)
        store_quantized(layer, embedding_layer.weight, group_size, bits, mode)
        return layer


class QQLinear(Module):
    """A `Linear` layer without bias that quantizes its input and its weight (`mx.qqmm`).

    In training mode (`train()`) the weight is kept in high precision and quantized on the
    fly, so gradients reach it; `eval()` stores it quantized (uint32 `weight` and uint8
    `scales`) and `train()` dequantizes it back (to bfloat16, `mx.dequantize`'s default), as
    MLX's layer does. Its parameters stay trainable in both modes.

    Args:
        input_dims: input features (a multiple of `group_size`).
        output_dims: output features.
        group_size: the mode's group size or None.
        bits: the mode's bits or None.
        mode: `"nvfp4"` (the default), `"mxfp8"` or `"mxfp4"`.

    Raises:
        ValueError: for another mode, or a group size or bits the mode does not use.

    Example:
        >>> import nuvec.nn as nn
        >>> layer = nn.QQLinear(32, 4)
        >>> layer(mx.ones((2, 32))).shape, layer.eval().weight.dtype
        ((2, 4), nuvec.uint32)
    """

    def __init__(self, input_dims: int, output_dims: int, group_size: int | None = None,
                 bits: int | None = None, mode: str = "nvfp4") -> None:
        super().__init__()
        if mode not in PRODUCT_MODES:
            raise ValueError(f"QQLinear: mode must be 'nvfp4', 'mxfp8' or 'mxfp4', got {mode!r}")
        self.group_size, self.bits = float_mode_params("QQLinear", mode, group_size, bits)
        self.mode = mode
        input_dims, output_dims = _linear_sizes("QQLinear", input_dims, output_dims)
        scale = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(-scale, scale, (output_dims, input_dims))

    def _extra_repr(self) -> str:
        out, columns = self.weight.shape
        if "scales" in self:
            columns = columns * 32 // self.bits
        return (f"input_dims={columns}, output_dims={out}, group_size={self.group_size}, "
                f"bits={self.bits}, mode={self.mode}")

    def quantize(self) -> None:
        """Stores the weight quantized, with its `scales` (nothing if it already is)."""
        if "scales" not in self:
            self.weight, self.scales = mx.quantize(self.weight, self.group_size, self.bits,
                                                   mode=self.mode)

    def dequantize(self) -> None:
        """Stores the weight dequantized (bfloat16) and drops `scales` (nothing if it is not
        quantized)."""
        if "scales" in self:
            self.weight = mx.dequantize(self.weight, self["scales"], group_size=self.group_size,
                                        bits=self.bits, mode=self.mode)
            del self["scales"]

    def _set_training_mode(self, mode: bool) -> None:
        super()._set_training_mode(mode)
        if mode:
            self.dequantize()
        else:
            self.quantize()

    def __call__(self, x: mx.array) -> mx.array:
        return mx.qqmm(x, self["weight"], scales=self.get("scales"), group_size=self.group_size,
                       bits=self.bits, mode=self.mode)

    @classmethod
    def from_linear(cls, linear_layer: Module, group_size: int | None = None,
                    bits: int | None = None, mode: str = "nvfp4") -> "QQLinear":
        """A `QQLinear` with `linear_layer`'s weight, in `linear_layer`'s mode.

        Raises:
            ValueError: if `linear_layer` has a bias (`QQLinear` has none).
        """
        if "bias" in linear_layer:
            raise ValueError("QQLinear.from_linear: QQLinear has no bias, and the layer has one")
        out, inp = linear_layer.weight.shape
        layer = cls(inp, out, group_size, bits, mode)
        layer.weight = linear_layer.weight
        return layer.train(linear_layer.training)


def quantize(model: Module, group_size: int | None = None, bits: int | None = None, *,
             mode: str = "affine", quantize_input: bool = False,
             class_predicate: Callable[[str, Module], Any] | None = None) -> None:
    """Quantizes a model's layers in place (as `mlx.nn.quantize`).

    Replaces, in place, the leaf modules of `model` that have `to_quantized` by their
    quantized form (as `mlx.nn.quantize`).

    Args:
        model: the model to change.
        group_size: values sharing one scale (and bias); None: the mode's default.
        bits: bits per value; None: the mode's default.
        mode: the quantization mode, as `mx.quantize`'s.
        quantize_input: quantize the layers' inputs too (`Linear` layers without bias become
            `QQLinear`; "nvfp4" and "mxfp8" only).
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
        options = {"group_size": group_size, "bits": bits, "mode": mode,
                   "quantize_input": quantize_input}
        if isinstance(chosen, dict):
            options.update(chosen)
        if not options["quantize_input"]:  # (layers whose to_quantized lacks the argument)
            del options["quantize_input"]
        return module.to_quantized(**options)

    leaves = tree_map_with_path(swap, model.leaf_modules(), is_leaf=Module.is_module)
    model.update_modules(leaves)
