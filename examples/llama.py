"""A Llama-architecture decoder built from `nuvec.nn` and `nuvec.fast`, loaded from a GGUF file.

The architecture (as llama.cpp's `llama` models): token embeddings, then blocks of RMSNorm ->
grouped-query attention with rotary position encoding -> residual, RMSNorm -> SwiGLU
feed-forward -> residual; a final RMSNorm and the output projection (the embedding table when
the file has no `output.weight`). GGUF stores the query and key projections permuted for
RoPE on consecutive pairs, so RoPE is the `traditional` one.

Weights stay quantized by default: `mx.load` repacks GGUF's Q4_0/Q4_1/Q8_0 tensors into the
layout of `nn.QuantizedLinear`/`nn.QuantizedEmbedding` (affine, groups of 32). With
`dequantize=True` they become float32 `nn.Linear`/`nn.Embedding` weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import nuvec as mx
import nuvec.nn as nn


@dataclass
class ModelArgs:
    """The hyperparameters a GGUF file's `llama.*` metadata holds."""

    vocab_size: int
    hidden_size: int
    num_layers: int
    intermediate_size: int
    num_heads: int
    num_kv_heads: int
    rope_theta: float
    rms_norm_eps: float
    context_length: int

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @classmethod
    def from_gguf(cls, metadata: dict[str, Any]) -> "ModelArgs":
        arch = metadata["general.architecture"]
        if arch != "llama":
            raise ValueError(f"expected a llama model, the file holds {arch!r}")

        def number(key: str, default: Any = None) -> Any:
            value = metadata.get(f"llama.{key}", default)
            return value.item() if isinstance(value, mx.array) else value

        tokens = metadata["tokenizer.ggml.tokens"]
        return cls(
            vocab_size=number("vocab_size", len(tokens)),
            hidden_size=number("embedding_length"),
            num_layers=number("block_count"),
            intermediate_size=number("feed_forward_length"),
            num_heads=number("attention.head_count"),
            num_kv_heads=number("attention.head_count_kv", number("attention.head_count")),
            rope_theta=float(number("rope.freq_base", 10000.0)),
            rms_norm_eps=float(number("attention.layer_norm_rms_epsilon", 1e-5)),
            context_length=number("context_length", 2048),
        )


def linear(inputs: int, outputs: int, bits: int | None) -> nn.Module:
    """A bias-free projection: quantized (groups of 32, `bits` bits) or float."""
    if bits is None:
        return nn.Linear(inputs, outputs, bias=False)
    return nn.QuantizedLinear(inputs, outputs, bias=False, group_size=32, bits=bits)


class KVCache:
    """The keys and values of the positions seen so far, `[B, heads, length, head_dim]`."""

    def __init__(self) -> None:
        self.keys: mx.array | None = None
        self.values: mx.array | None = None

    @property
    def offset(self) -> int:
        return 0 if self.keys is None else self.keys.shape[2]

    def update(self, keys: mx.array, values: mx.array) -> tuple[mx.array, mx.array]:
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            self.keys = mx.concatenate([self.keys, keys], axis=2)
            self.values = mx.concatenate([self.values, values], axis=2)
        return self.keys, self.values


Bits = Any  # a function: GGUF tensor prefix (`blk.0.attn_q`) -> bits, None when not quantized


class Attention(nn.Module):
    def __init__(self, args: ModelArgs, bits: Bits, prefix: str):
        super().__init__()
        self.num_heads, self.num_kv_heads = args.num_heads, args.num_kv_heads
        self.head_dim, self.scale = args.head_dim, args.head_dim ** -0.5
        dim, kv_dim = args.hidden_size, args.num_kv_heads * args.head_dim
        self.q_proj = linear(dim, args.num_heads * args.head_dim, bits(f"{prefix}.attn_q"))
        self.k_proj = linear(dim, kv_dim, bits(f"{prefix}.attn_k"))
        self.v_proj = linear(dim, kv_dim, bits(f"{prefix}.attn_v"))
        self.o_proj = linear(args.num_heads * args.head_dim, dim, bits(f"{prefix}.attn_output"))
        self.rope = nn.RoPE(args.head_dim, traditional=True, base=args.rope_theta)

    def __call__(self, x: mx.array, cache: KVCache | None = None) -> mx.array:
        b, length, _ = x.shape

        def heads(y: mx.array, n: int) -> mx.array:
            return y.reshape(b, length, n, self.head_dim).transpose(0, 2, 1, 3)

        q = heads(self.q_proj(x), self.num_heads)
        k = heads(self.k_proj(x), self.num_kv_heads)
        v = heads(self.v_proj(x), self.num_kv_heads)
        offset = 0 if cache is None else cache.offset
        q, k = self.rope(q, offset=offset), self.rope(k, offset=offset)
        if cache is not None:
            k, v = cache.update(k, v)
        mask = "causal" if length > 1 else None
        out = mx.fast.scaled_dot_product_attention(q, k, v, scale=self.scale, mask=mask)
        return self.o_proj(out.transpose(0, 2, 1, 3).reshape(b, length, -1))


class MLP(nn.Module):
    """SwiGLU: `down(silu(gate(x)) * up(x))`."""

    def __init__(self, args: ModelArgs, bits: Bits, prefix: str):
        super().__init__()
        dim, hidden = args.hidden_size, args.intermediate_size
        self.gate_proj = linear(dim, hidden, bits(f"{prefix}.ffn_gate"))
        self.up_proj = linear(dim, hidden, bits(f"{prefix}.ffn_up"))
        self.down_proj = linear(hidden, dim, bits(f"{prefix}.ffn_down"))

    def __call__(self, x: mx.array) -> mx.array:
        return self.down_proj(nn.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, args: ModelArgs, bits: Bits, index: int):
        super().__init__()
        self.input_layernorm = nn.RMSNorm(args.hidden_size, eps=args.rms_norm_eps)
        self.self_attn = Attention(args, bits, f"blk.{index}")
        self.post_attention_layernorm = nn.RMSNorm(args.hidden_size, eps=args.rms_norm_eps)
        self.mlp = MLP(args, bits, f"blk.{index}")

    def __call__(self, x: mx.array, cache: KVCache | None = None) -> mx.array:
        h = x + self.self_attn(self.input_layernorm(x), cache)
        return h + self.mlp(self.post_attention_layernorm(h))


class Llama(nn.Module):
    """The decoder; `model(tokens, caches)` gives logits `[B, L, vocab]`."""

    def __init__(self, args: ModelArgs, bits: Bits, tied: bool):
        super().__init__()
        self.args = args
        embed_bits = bits("token_embd")
        self.embed_tokens = (nn.Embedding(args.vocab_size, args.hidden_size) if embed_bits is None
                             else nn.QuantizedEmbedding(args.vocab_size, args.hidden_size,
                                                        group_size=32, bits=embed_bits))
        self.layers = [Block(args, bits, i) for i in range(args.num_layers)]
        self.norm = nn.RMSNorm(args.hidden_size, eps=args.rms_norm_eps)
        if not tied:
            self.lm_head = linear(args.hidden_size, args.vocab_size, bits("output"))

    def __call__(self, tokens: mx.array, caches: list[KVCache] | None = None) -> mx.array:
        h = self.embed_tokens(tokens)
        for i, layer in enumerate(self.layers):
            h = layer(h, None if caches is None else caches[i])
        h = self.norm(h)
        if "lm_head" in self:
            return self.lm_head(h)
        return self.embed_tokens.as_linear(h)

    def make_caches(self) -> list[KVCache]:
        return [KVCache() for _ in self.layers]


# GGUF tensor names -> this model's parameter paths.
_BLOCK_NAMES = {
    "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_TOP_NAMES = {"token_embd": "embed_tokens", "output_norm": "norm", "output": "lm_head"}


def parameter_path(gguf_name: str) -> str:
    """`blk.3.attn_q.scales` -> `layers.3.self_attn.q_proj.scales`."""
    parts = gguf_name.split(".")
    if parts[0] == "blk":
        return ".".join(["layers", parts[1], _BLOCK_NAMES[parts[2]], *parts[3:]])
    return ".".join([_TOP_NAMES[parts[0]], *parts[1:]])


def _bits(arrays: dict[str, mx.array], prefix: str) -> int | None:
    """The bit width of a repacked GGUF tensor (None when it is not quantized)."""
    if f"{prefix}.scales" not in arrays:
        return None
    return arrays[f"{prefix}.weight"].shape[-1] // arrays[f"{prefix}.scales"].shape[-1]


def dequantized_weights(arrays: dict[str, mx.array]) -> dict[str, mx.array]:
    """Every repacked weight replaced by its float32 values; other tensors kept."""
    out = {}
    for name, a in arrays.items():
        if name.endswith((".scales", ".biases")):
            continue
        prefix = name.removesuffix(".weight")
        bits = _bits(arrays, prefix) if name.endswith(".weight") else None
        if bits is None:
            out[name] = a.astype(mx.float32)
        else:
            out[name] = mx.dequantize(a, arrays[f"{prefix}.scales"].astype(mx.float32),
                                      arrays[f"{prefix}.biases"].astype(mx.float32),
                                      group_size=32, bits=bits)
    return out


def load_model(path: str, dequantize: bool = False) -> tuple[Llama, dict[str, Any]]:
    """The model in a llama GGUF file and the file's metadata.

    Quantized weights keep their repacked form (float16 scales and biases promoted to
    float32 once here, so products run in float32) unless `dequantize` is set.
    """
    arrays, metadata = mx.load(path, return_metadata=True)
    args = ModelArgs.from_gguf(metadata)
    if dequantize:
        arrays = dequantized_weights(arrays)
    else:
        arrays = {k: a.astype(mx.float32) if a.dtype == mx.float16 else a
                  for k, a in arrays.items()}
    model = Llama(args, lambda prefix: _bits(arrays, prefix), tied="output.weight" not in arrays)
    model.load_weights([(parameter_path(name), a) for name, a in arrays.items()])
    mx.eval(model.parameters())
    return model, metadata
