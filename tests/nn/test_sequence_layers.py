"""Recurrent and attention layers against float64 NumPy references (forward and gradient)."""

from __future__ import annotations

import numpy as np
import pytest
from nn_refs import check_layer_grads, f64, params64, rand64

import nuvec as mx
import nuvec.nn as nn


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_rnn() -> None:
    layer = f64(nn.RNN(3, 4))
    p = params64(layer)
    assert p["Wxh"].shape == (4, 3) and p["Whh"].shape == (4, 4) and p["bias"].shape == (4,)
    x = rand64(2, 5, 3)
    h = np.zeros((2, 4))
    expected = []
    for t in range(5):
        h = np.tanh(np.asarray(x)[:, t] @ p["Wxh"].T + p["bias"] + h @ p["Whh"].T)
        expected.append(h)
    np.testing.assert_allclose(np.asarray(layer(x)), np.stack(expected, 1), rtol=1e-10)
    check_layer_grads(layer, x)
    relu_rnn = f64(nn.RNN(3, 2, bias=False, nonlinearity=nn.relu))
    assert "bias" not in relu_rnn
    assert relu_rnn(x[0]).shape == (5, 2)
    with pytest.raises(ValueError, match="RNN: nonlinearity must be callable"):
        nn.RNN(3, 2, nonlinearity="tanh")


def test_gru() -> None:
    layer = f64(nn.GRU(3, 4))
    p = params64(layer)
    assert p["Wx"].shape == (12, 3) and p["Wh"].shape == (12, 4) and p["bhn"].shape == (4,)
    x = rand64(2, 4, 3)

    def reference(h):
        expected = []
        for t in range(4):
            gx = np.asarray(x)[:, t] @ p["Wx"].T + p["b"]
            gh = h @ p["Wh"].T
            r = sigmoid(gx[:, :4] + gh[:, :4])
            z = sigmoid(gx[:, 4:8] + gh[:, 4:8])
            n = np.tanh(gx[:, 8:] + r * (gh[:, 8:] + p["bhn"]))
            h = (1 - z) * n + z * h
            expected.append(h)
        return np.stack(expected, 1)

    h0 = rand64(2, 4, seed=1)
    np.testing.assert_allclose(np.asarray(layer(x, h0)), reference(np.asarray(h0)), rtol=1e-10)
    # no hidden state is a zero one: the first step still adds r * bhn
    np.testing.assert_allclose(np.asarray(layer(x)), reference(np.zeros((2, 4))), rtol=1e-10)
    check_layer_grads(layer, x, h0)
    check_layer_grads(layer, x)


def test_lstm() -> None:
    layer = f64(nn.LSTM(3, 2))
    p = params64(layer)
    assert p["Wx"].shape == (8, 3) and p["Wh"].shape == (8, 2) and p["bias"].shape == (8,)
    x = rand64(2, 4, 3)
    h, c = np.zeros((2, 2)), np.zeros((2, 2))
    hs, cs = [], []
    for t in range(4):
        g = np.asarray(x)[:, t] @ p["Wx"].T + p["bias"] + h @ p["Wh"].T
        i, f, gg, o = np.split(g, 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(gg)
        h = sigmoid(o) * np.tanh(c)
        hs.append(h)
        cs.append(c)
    out_h, out_c = layer(x)
    np.testing.assert_allclose(np.asarray(out_h), np.stack(hs, 1), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(out_c), np.stack(cs, 1), rtol=1e-10)
    check_layer_grads(layer, x)


def attention_ref(q, k, v, p, heads, mask=None):
    def project(x, name):
        return x @ p[f"{name}.weight"].T + p.get(f"{name}.bias", 0.0)

    q, k, v = project(q, "query_proj"), project(k, "key_proj"), project(v, "value_proj")
    b, lq, _ = q.shape
    split = lambda t: t.reshape(b, t.shape[1], heads, -1).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = split(q), split(k), split(v)
    scale = float(np.float32(1 / np.sqrt(q.shape[-1])))  # the fused op keeps a float32 scale
    s = q @ k.transpose(0, 1, 3, 2) * scale
    if mask is not None:
        s = s + mask
    s = np.exp(s - s.max(-1, keepdims=True))
    out = (s / s.sum(-1, keepdims=True)) @ v
    return project(out.transpose(0, 2, 1, 3).reshape(b, lq, -1), "out_proj")


def test_multi_head_attention() -> None:
    layer = f64(nn.MultiHeadAttention(8, 2, key_input_dims=6, value_dims=4,
                                      value_output_dims=5, bias=True))
    p = params64(layer)
    assert p["query_proj.weight"].shape == (8, 8) and p["key_proj.weight"].shape == (8, 6)
    assert p["value_proj.weight"].shape == (4, 6) and p["out_proj.weight"].shape == (5, 4)
    q, kv = rand64(2, 3, 8), rand64(2, 4, 6, seed=1)
    np.testing.assert_allclose(np.asarray(layer(q, kv, kv)),
                               attention_ref(*(np.asarray(t) for t in (q, kv, kv)), p, 2),
                               rtol=1e-9)
    check_layer_grads(layer, q, kv, kv)
    causal = nn.MultiHeadAttention.create_additive_causal_mask(3, mx.float64)
    mask = np.asarray(causal)
    assert mask[0, 1] == np.finfo(np.float64).min and mask[1, 0] == 0 and mask[2, 2] == 0
    self_attn = f64(nn.MultiHeadAttention(8, 4))
    x = rand64(1, 3, 8)
    np.testing.assert_allclose(np.asarray(self_attn(x, x, x, causal)),
                               attention_ref(*[np.asarray(x)] * 3, params64(self_attn), 4,
                                             np.triu(np.full((3, 3), -1e300), 1)), rtol=1e-9)
    with pytest.raises(ValueError, match=r"MultiHeadAttention: the input feature dimensions "
                                         r"should be divisible by the number of heads \(8 % 3\)"):
        nn.MultiHeadAttention(8, 3)


def _layer_norm(x, w, b, eps=1e-5):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * w + b


@pytest.mark.parametrize("norm_first", [True, False])
def test_transformer_encoder_layer(norm_first) -> None:
    layer = f64(nn.TransformerEncoderLayer(8, 2, mlp_dims=16, norm_first=norm_first))
    p = params64(layer)
    attn = {k.split(".", 1)[1]: v for k, v in p.items() if k.startswith("attention.")}
    ln = lambda x, i: _layer_norm(x, p[f"ln{i}.weight"], p[f"ln{i}.bias"])  # noqa: E731

    def mlp(x):
        hidden = np.maximum(x @ p["linear1.weight"].T + p["linear1.bias"], 0)
        return hidden @ p["linear2.weight"].T + p["linear2.bias"]

    x = rand64(2, 3, 8)
    xs = np.asarray(x)
    if norm_first:
        y = ln(xs, 1)
        h = xs + attention_ref(y, y, y, attn, 2)
        expected = h + mlp(ln(h, 2))
    else:
        h = ln(xs + attention_ref(xs, xs, xs, attn, 2), 1)
        expected = ln(h + mlp(h), 2)
    np.testing.assert_allclose(np.asarray(layer(x, None)), expected, rtol=1e-9)
    check_layer_grads(layer, x, call=lambda m, x: m(x, None))


def test_transformer_stacks() -> None:
    encoder = f64(nn.TransformerEncoder(2, 8, 2, mlp_dims=8))
    assert len(encoder.layers) == 2 and set(encoder.ln.parameters()) == {"weight", "bias"}
    x = rand64(1, 3, 8)
    plain = np.asarray(encoder(x, None))
    encoder.checkpoint = True
    np.testing.assert_allclose(np.asarray(encoder(x, None)), plain, rtol=1e-12)
    check_layer_grads(encoder, x, call=lambda m, x: m(x, None))
    decoder = f64(nn.TransformerDecoder(1, 8, 2, mlp_dims=8, norm_first=False))
    memory = rand64(1, 4, 8, seed=2)
    assert decoder(x, memory, None, None).shape == (1, 3, 8)
    check_layer_grads(decoder, x, memory, call=lambda m, x, mem: m(x, mem, None, None))
    model = nn.Transformer(8, 2, 1, 1, mlp_dims=8, dropout=0.1)
    assert model(mx.ones((2, 4, 8)), mx.ones((2, 3, 8)), None, None, None).shape == (2, 3, 8)
    assert {name for name, _ in model.named_modules()} >= {"encoder", "decoder",
                                                           "decoder.layers.0.cross_attention"}
    custom = nn.Transformer(8, 2, custom_encoder=nn.Identity(), custom_decoder=nn.Identity())
    assert isinstance(custom.encoder, nn.Identity) and isinstance(custom.decoder, nn.Identity)
