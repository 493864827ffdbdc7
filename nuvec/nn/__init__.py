"""Neural network layers, losses and initializers, as `mlx.nn` (`import nuvec.nn as nn`).

`Module` is the base of every layer; `value_and_grad(model, fn)` differentiates a loss with
respect to a model's trainable parameters. The losses are in `nuvec.nn.losses`, the
initializers in `nuvec.nn.init`.
"""

from nuvec.nn import init, losses, utils  # noqa: F401  (re-exported: public submodules)
from nuvec.nn.layers import (  # noqa: F401  (MLX's names of the layer modules: nn.activations, ...)
    activations, containers, convolution, dropout, embedding, linear, normalization, pooling,
    positional_encoding, quantized, recurrent, transformer, upsample,
)
from nuvec.nn.layers.activation_layers import *  # noqa: F401,F403
from nuvec.nn.layers.activation_layers import __all__ as _activation_layers
from nuvec.nn.layers.activations import *  # noqa: F401,F403
from nuvec.nn.layers.activations import __all__ as _activations
from nuvec.nn.layers.containers import Sequential
from nuvec.nn.layers.convolution import (
    Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d,
)
from nuvec.nn.layers.distributed import (
    AllToShardedLinear, FullyShardedModule, QuantizedAllToShardedLinear,
    QuantizedShardedToAllLinear, ShardedToAllLinear, fully_shard,
)
from nuvec.nn.layers.dropout import Dropout, Dropout2d, Dropout3d
from nuvec.nn.layers.embedding import Embedding
from nuvec.nn.layers.linear import Bilinear, Identity, Linear
from nuvec.nn.layers.normalization import BatchNorm, GroupNorm, InstanceNorm, LayerNorm, RMSNorm
from nuvec.nn.layers.pooling import AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d
from nuvec.nn.layers.positional_encoding import ALiBi, RoPE, SinusoidalPositionalEncoding
from nuvec.nn.layers.quantized import QQLinear, QuantizedEmbedding, QuantizedLinear, quantize
from nuvec.nn.layers.recurrent import GRU, LSTM, RNN
from nuvec.nn.layers.transformer import (
    MultiHeadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,
    TransformerEncoder, TransformerEncoderLayer,
)
from nuvec.nn.layers.upsample import Upsample, upsample_cubic, upsample_linear, upsample_nearest
from nuvec.nn.module import Module
from nuvec.nn.utils import checkpoint, value_and_grad
from nuvec.nn.distributed import average_gradients

__all__ = [
    "Module", "value_and_grad", "checkpoint", "quantize", "average_gradients",
    "Identity", "Linear", "Bilinear", "Embedding", "Sequential",
    "Dropout", "Dropout2d", "Dropout3d",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "RMSNorm", "LayerNorm", "GroupNorm", "InstanceNorm", "BatchNorm",
    "RoPE", "SinusoidalPositionalEncoding", "ALiBi",
    "MultiHeadAttention", "TransformerEncoderLayer", "TransformerEncoder",
    "TransformerDecoderLayer", "TransformerDecoder", "Transformer",
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
    "Upsample", "upsample_nearest", "upsample_linear", "upsample_cubic",
    "RNN", "GRU", "LSTM", "QuantizedLinear", "QuantizedEmbedding", "QQLinear",
    "AllToShardedLinear", "ShardedToAllLinear", "QuantizedAllToShardedLinear",
    "QuantizedShardedToAllLinear", "FullyShardedModule", "fully_shard",
    *_activations, *_activation_layers,
]
