"""Core layers against float64 NumPy references: forward values, gradients (finite
differences through inputs and parameters), parameter shapes and initial statistics as MLX's."""

from __future__ import annotations

import math

import numpy as np
import pytest
from nn_refs import check_layer_grads, f64, params64, rand64

import nuvec as mx
import nuvec.nn as nn


def test_linear_forward_gradient_and_init() -> None:
    mx.random.seed(0)
    layer = nn.Linear(64, 200)
    assert layer.weight.shape == (200, 64) and layer.bias.shape == (200,)
    w = np.asarray(layer.weight)
    bound = 1 / math.sqrt(64)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    np.testing.assert_allclose(w.std(), bound / math.sqrt(3), rtol=0.05)  # U(-k, k)
    small = f64(nn.Linear(3, 4))
    x = rand64(2, 5, 3)
    p = params64(small)
    np.testing.assert_allclose(np.asarray(small(x)),
                               np.asarray(x) @ p["weight"].T + p["bias"], rtol=1e-12)
    check_layer_grads(small, x)
    no_bias = f64(nn.Linear(3, 2, bias=False))
    assert "bias" not in no_bias.parameters()
    check_layer_grads(no_bias, rand64(4, 3))


def test_bilinear_and_identity() -> None:
    layer = f64(nn.Bilinear(2, 3, 4))
    assert layer.weight.shape == (4, 3, 2)
    x1, x2 = rand64(5, 2), rand64(5, 3, seed=1)
    p = params64(layer)
    expected = np.einsum("ni,oji,nj->no", np.asarray(x1), p["weight"], np.asarray(x2)) + p["bias"]
    np.testing.assert_allclose(np.asarray(layer(x1, x2)), expected, rtol=1e-12)
    check_layer_grads(layer, x1, x2)
    x = rand64(2, 3)
    assert nn.Identity(3, foo=1)(x) is x


def test_embedding_lookup_gradient_and_init() -> None:
    mx.random.seed(1)
    table = nn.Embedding(1000, 16)
    np.testing.assert_allclose(np.asarray(table.weight).std(), 1 / 4, rtol=0.05)
    layer = f64(nn.Embedding(10, 4))
    idx = mx.array([[1, 2], [2, 9]])
    w = params64(layer)["weight"]
    np.testing.assert_array_equal(np.asarray(layer(idx)), w[np.asarray(idx)])
    h = rand64(3, 4)
    np.testing.assert_allclose(np.asarray(layer.as_linear(h)), np.asarray(h) @ w.T, rtol=1e-12)
    check_layer_grads(layer, call=lambda m: m(idx) * 2)


def _norm64(x: np.ndarray, axes, eps: float) -> np.ndarray:
    mean = x.mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)


def test_rms_norm_and_layer_norm() -> None:
    x = rand64(2, 3, 8)
    xs = np.asarray(x)
    rms = f64(nn.RMSNorm(8, eps=1e-6))
    rms.weight = rand64(8, seed=3)
    expected = xs / np.sqrt((xs**2).mean(-1, keepdims=True) + 1e-6) * np.asarray(rms.weight)
    np.testing.assert_allclose(np.asarray(rms(x)), expected, rtol=1e-10)
    check_layer_grads(rms, x)
    ln = f64(nn.LayerNorm(8))
    ln.update({"weight": rand64(8, seed=4), "bias": rand64(8, seed=5)})
    p = params64(ln)
    np.testing.assert_allclose(np.asarray(ln(x)), _norm64(xs, -1, 1e-5) * p["weight"] + p["bias"],
                               rtol=1e-10)
    check_layer_grads(ln, x)
    assert nn.LayerNorm(8, affine=False).parameters() == {}
    assert set(nn.LayerNorm(8, bias=False).parameters()) == {"weight"}
    np.testing.assert_allclose(np.asarray(nn.LayerNorm(8, affine=False)(x.astype(mx.float32))),
                               _norm64(xs, -1, 1e-5), atol=1e-5)


@pytest.mark.parametrize("pytorch_compatible", [False, True])
def test_group_norm(pytorch_compatible: bool) -> None:
    layer = f64(nn.GroupNorm(2, 6, pytorch_compatible=pytorch_compatible))
    layer.update({"weight": rand64(6, seed=1), "bias": rand64(6, seed=2)})
    x = rand64(2, 4, 6)
    xs = np.asarray(x)
    if pytorch_compatible:  # consecutive features form a group
        grouped = xs.reshape(2, 4, 2, 3)
        normed = _norm64(grouped, (1, 3), 1e-5).reshape(2, 4, 6)
    else:  # features f with equal f % groups form a group
        grouped = xs.reshape(2, 4, 3, 2)
        normed = _norm64(grouped, (1, 2), 1e-5).reshape(2, 4, 6)
    p = params64(layer)
    np.testing.assert_allclose(np.asarray(layer(x)), normed * p["weight"] + p["bias"], rtol=1e-9)
    check_layer_grads(layer, x)
    with pytest.raises(ValueError, match=r"GroupNorm: dims \(4\) must be a multiple of a "
                                         "positive num_groups, got num_groups=3"):
        nn.GroupNorm(3, 4, pytorch_compatible=pytorch_compatible)


def test_instance_norm() -> None:
    x = rand64(2, 3, 4, 5)
    np.testing.assert_allclose(np.asarray(nn.InstanceNorm(5)(x)),
                               _norm64(np.asarray(x), (1, 2), 1e-5), rtol=1e-9)
    layer = f64(nn.InstanceNorm(5, affine=True))
    assert set(layer.parameters()) == {"weight", "bias"}
    check_layer_grads(layer, x)


def test_batch_norm_training_running_stats_and_eval() -> None:
    layer = f64(nn.BatchNorm(3, momentum=0.25))
    assert set(layer.trainable_parameters()) == {"weight", "bias"}
    assert set(layer.parameters()) == {"weight", "bias", "running_mean", "running_var"}
    x = rand64(4, 5, 3)
    xs = np.asarray(x)
    np.testing.assert_allclose(np.asarray(layer(x)), _norm64(xs, (0, 1), 1e-5), rtol=1e-9)
    mean, var = xs.mean((0, 1)), xs.var((0, 1), ddof=1)  # the running variance is unbiased
    np.testing.assert_allclose(np.asarray(layer.running_mean), 0.25 * mean, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(layer.running_var), 0.75 + 0.25 * var, rtol=1e-12)
    layer.eval()
    expected = (xs - 0.25 * mean) / np.sqrt(0.75 + 0.25 * var + 1e-5)
    np.testing.assert_allclose(np.asarray(layer(x)), expected, rtol=1e-9)
    layer.unfreeze()
    assert set(layer.trainable_parameters()) == {"weight", "bias"}
    layer.train()
    with pytest.raises(ValueError, match="BatchNorm: training requires more than one value"):
        layer(mx.ones((1, 3)))
    layer.train()
    check_layer_grads(f64(nn.BatchNorm(3, track_running_stats=False)), x)
    with pytest.raises(ValueError, match=r"BatchNorm: expected input to have 2, 3 or 4 "
                                         r"dimensions, but got shape \(3,\)"):
        layer(mx.ones((3,)))


def test_dropout_variants() -> None:
    mx.random.seed(3)
    x = mx.ones((200, 50))
    y = np.asarray(nn.Dropout(0.25)(x))
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    assert abs(kept.mean() - 0.75) < 0.02
    assert np.asarray(nn.Dropout(0.25).eval()(x)).tolist() == np.ones((200, 50)).tolist()
    y2 = np.asarray(nn.Dropout2d(0.5)(mx.ones((8, 4, 4, 16))))
    assert all(len(set(y2[n, :, :, c].ravel())) == 1 for n in range(8) for c in range(16))
    y3 = np.asarray(nn.Dropout3d(0.5)(mx.ones((4, 2, 3, 3, 8))))
    assert all(len(set(y3[n, ..., c].ravel())) == 1 for n in range(4) for c in range(8))
    with pytest.raises(ValueError, match=r"Dropout: the dropout probability 1 is not in \[0, 1\)"):
        nn.Dropout(1)
    with pytest.raises(ValueError, match="Dropout2d: received input with 2 dimensions. "
                                         "Expected 3 or 4"):
        nn.Dropout2d()(mx.ones((2, 2)))
    with pytest.raises(ValueError, match="Dropout3d: received input with 3 dimensions. "
                                         "Expected 4 or 5"):
        nn.Dropout3d()(mx.ones((2, 2, 2)))


def _rope64(x: np.ndarray, dims: int, base: float, offset: int, traditional: bool):
    length = x.shape[-2]
    pos = (offset + np.arange(length))[:, None]
    freqs = base ** (-np.arange(0, dims, 2) / dims)
    angle = pos * freqs
    cos, sin = np.cos(angle), np.sin(angle)
    out = x.copy()
    if traditional:
        a, b = x[..., 0:dims:2], x[..., 1:dims:2]
        out[..., 0:dims:2], out[..., 1:dims:2] = a * cos - b * sin, a * sin + b * cos
    else:
        half = dims // 2
        a, b = x[..., :half], x[..., half:dims]
        out[..., :half], out[..., half:dims] = a * cos - b * sin, a * sin + b * cos
    return out


@pytest.mark.parametrize("traditional", [False, True])
def test_rope(traditional: bool) -> None:
    x = rand64(2, 3, 5, 8)
    layer = nn.RoPE(6, traditional=traditional, base=100.0)
    np.testing.assert_allclose(np.asarray(layer(x, offset=3)),
                               _rope64(np.asarray(x), 6, 100.0, 3, traditional), rtol=1e-9)
    check_layer_grads(layer, x, call=lambda m, x: m(x, offset=2))


def test_sinusoidal_positional_encoding_and_alibi() -> None:
    layer = nn.SinusoidalPositionalEncoding(8, min_freq=0.01, max_freq=1.0)
    x = mx.array([0.0, 1.0, 5.0])
    sigmas = np.exp(np.linspace(0, 1, 4)[::-1] * (np.log(1.0) - np.log(0.01)) + np.log(0.01))
    y = np.asarray(x)[:, None] * sigmas
    expected = np.concatenate([np.sin(y), np.cos(y)], -1) * math.sqrt(2 / 8)
    np.testing.assert_allclose(np.asarray(layer(x)), expected, rtol=1e-5, atol=1e-6)
    cos_first = nn.SinusoidalPositionalEncoding(8, 0.01, 1.0, scale=1.0, cos_first=True)
    np.testing.assert_allclose(np.asarray(cos_first(x))[:, :4], np.cos(y), atol=1e-5)
    with pytest.raises(ValueError, match="SinusoidalPositionalEncoding: dims must be positive "
                                         "and even, got 5"):
        nn.SinusoidalPositionalEncoding(5)
    scores = rand64(1, 4, 3, 5)
    slopes = 2.0 ** (-8 * np.arange(1, 5) / 4)
    distance = -np.abs(np.arange(2, 5)[:, None] - np.arange(5)[None])
    expected = np.asarray(scores) + slopes[:, None, None] * distance
    np.testing.assert_allclose(np.asarray(nn.ALiBi()(scores, offset=2)), expected, rtol=1e-6)


def test_quantized_linear_and_embedding_match_dequantized_weights() -> None:
    mx.random.seed(4)
    linear = nn.Linear(64, 8)
    q = linear.to_quantized(group_size=32, bits=8)
    assert isinstance(q, nn.QuantizedLinear) and q.weight.dtype == mx.uint32
    assert q.weight.shape == (8, 64 * 8 // 32) and q.scales.shape == (8, 2)
    assert list(q.trainable_parameters()) == ["bias"]  # set after the freeze, as in MLX
    q.unfreeze()
    assert list(q.trainable_parameters()) == []  # unfreeze keeps the layer's own frozen
    w = np.asarray(mx.dequantize(q.weight, q.scales, q.biases, 32, 8), np.float64)
    assert np.abs(w - np.asarray(linear.weight)).max() < 0.01
    x = mx.random.normal((3, 64))
    np.testing.assert_allclose(np.asarray(q(x)), np.asarray(x) @ w.T + np.asarray(q.bias),
                               rtol=1e-4, atol=1e-4)
    emb = nn.Embedding(5, 64).to_quantized(group_size=64, bits=4)
    table = np.asarray(mx.dequantize(emb.weight, emb.scales, emb.biases, 64, 4), np.float64)
    np.testing.assert_allclose(np.asarray(emb(mx.array([[4, 0]]))), table[[[4, 0]]], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(emb.as_linear(x)), np.asarray(x) @ table.T,
                               rtol=1e-4, atol=1e-4)


def test_one_bit_quantized_layers_match_dequantized_weights() -> None:
    mx.random.seed(5)
    model = nn.Sequential(nn.Embedding(5, 64), nn.Linear(64, 8))
    nn.quantize(model, group_size=32, bits=1)
    emb, linear = model.layers
    assert (emb.bits, linear.bits) == (1, 1) and linear.weight.shape == (8, 2)
    table = np.asarray(mx.dequantize(emb.weight, emb.scales, emb.biases, 32, 1), np.float64)
    w = np.asarray(mx.dequantize(linear.weight, linear.scales, linear.biases, 32, 1), np.float64)
    ids = mx.array([[4, 0, 2]])
    want = table[[[4, 0, 2]]] @ w.T + np.asarray(linear.bias)
    np.testing.assert_allclose(np.asarray(model(ids)), want, rtol=1e-4, atol=1e-4)
    x = mx.random.normal((3, 64))
    np.testing.assert_allclose(np.asarray(emb.as_linear(x)), np.asarray(x) @ table.T,
                               rtol=1e-4, atol=1e-4)


def test_quantize_model_with_predicate() -> None:
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32), nn.Embedding(4, 64))
    nn.quantize(model, group_size=32, bits=4,
                class_predicate=lambda path, m: path != "layers.2" and hasattr(m, "to_quantized"))
    kinds = [type(layer).__name__ for layer in model.layers]
    assert kinds == ["QuantizedLinear", "ReLU", "Linear", "QuantizedEmbedding"]
    assert model.layers[0].bits == 4 and model.layers[0].group_size == 32
    nn.quantize(model, class_predicate=lambda path, m: {"bits": 8} if path == "layers.2" else False)
    assert model.layers[2].bits == 8
    with pytest.raises(ValueError, match="quantize: unable to quantize the layer layers.1 of type "
                                         "ReLU"):
        nn.quantize(model, class_predicate=lambda path, m: path == "layers.1")


def _shapes(tree) -> dict:
    return {k: (v.shape, v.dtype) for k, v in tree.items()}


def test_qq_linear_switches_its_weight_with_the_mode() -> None:
    mx.random.seed(5)
    layer = nn.QQLinear(32, 4)
    assert (layer.group_size, layer.bits, layer.mode, layer.training) == (16, 4, "nvfp4", True)
    assert repr(layer) == ("QQLinear(input_dims=32, output_dims=4, group_size=16, bits=4, "
                           "mode=nvfp4)")
    weight = np.asarray(layer.weight)
    assert np.abs(weight).max() <= 1 / math.sqrt(32)
    # training: the weight in float32, trainable, quantized on the fly
    assert _shapes(layer.trainable_parameters()) == {"weight": ((4, 32), mx.float32)}
    x = mx.random.normal((3, 32))
    y = layer(x)
    packed = mx.quantize(mx.array(weight), mode="nvfp4")
    assert mx.array_equal(y, mx.qqmm(x, *packed)).item()
    # eval: stored quantized (as MLX, still listed as trainable), the same output
    layer.eval()
    assert _shapes(layer.parameters()) == {"weight": ((4, 4), mx.uint32),
                                           "scales": ((4, 2), mx.uint8)}
    assert _shapes(layer.trainable_parameters()) == _shapes(layer.parameters())
    assert repr(layer).startswith("QQLinear(input_dims=32, output_dims=4")
    assert mx.array_equal(layer(x), y).item()
    layer.eval()  # already quantized: unchanged
    assert layer.weight.dtype == mx.uint32
    # back to training: dequantized to bfloat16, as mx.dequantize does
    layer.train()
    assert _shapes(layer.parameters()) == {"weight": ((4, 32), mx.bfloat16)}
    dequantized = mx.dequantize(*packed, mode="nvfp4")
    assert mx.array_equal(layer.weight, dequantized).item()


def test_qq_linear_trains_its_weight() -> None:
    mx.random.seed(6)
    model = nn.Sequential(nn.Linear(32, 32, bias=False), nn.ReLU(), nn.Linear(32, 4, bias=False))
    nn.quantize(model, mode="mxfp8", quantize_input=True)
    assert [type(m).__name__ for m in model.layers] == ["QQLinear", "ReLU", "QQLinear"]
    assert model.layers[0].mode == "mxfp8" and model.layers[0].bits == 8
    x = mx.random.normal((16, 32))
    loss, grads = nn.value_and_grad(model, lambda inputs: model(inputs).sum())(x)
    assert grads["layers"][0]["weight"].shape == (32, 32)
    assert np.abs(np.asarray(grads["layers"][2]["weight"])).max() > 0
    model.eval()
    assert model.layers[2].weight.dtype == mx.uint32


def test_qq_linear_construction_and_conversion() -> None:
    linear = nn.Linear(32, 8, bias=False)
    layer = nn.QQLinear.from_linear(linear, mode="mxfp8")
    assert layer.training and mx.array_equal(layer.weight, linear.weight).item()
    frozen = nn.QQLinear.from_linear(linear.eval())  # takes the layer's mode
    assert not frozen.training and frozen.weight.dtype == mx.uint32
    assert type(nn.Linear(32, 8, bias=False).to_quantized(mode="nvfp4", quantize_input=True)
                ).__name__ == "QQLinear"
    cases = [
        (lambda: nn.QQLinear(32, 4, mode="affine"), "^QQLinear: mode must be 'nvfp4', 'mxfp8' or "
                                                    "'mxfp4', got 'affine'"),
        (lambda: nn.QQLinear(32, 4, group_size=32), "^QQLinear: nvfp4 quantization requires group "
                                                    "size 16, got 32"),
        (lambda: nn.QQLinear.from_linear(nn.Linear(32, 4)), "^QQLinear.from_linear: QQLinear has "
                                                            "no bias"),
        (lambda: nn.Linear(32, 4).to_quantized(mode="mxfp4", quantize_input=True),
         "^Linear.to_quantized: quantized inputs need mode 'nvfp4' or 'mxfp8', got 'mxfp4'"),
        (lambda: nn.quantize(nn.Sequential(nn.Embedding(4, 32)), mode="nvfp4",
                             quantize_input=True),
         "^Embedding.to_quantized: quantized inputs are not supported"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()
    # a predicate's dict may turn input quantization off for one layer
    model = nn.Sequential(nn.Linear(32, 32, bias=False), nn.Linear(64, 64))
    nn.quantize(model, quantize_input=True, mode="nvfp4", class_predicate=lambda path, m: (
        True if path == "layers.0" else {"quantize_input": False, "mode": "affine"}))
    assert [type(m).__name__ for m in model.layers] == ["QQLinear", "QuantizedLinear"]


# Bad constructor arguments and inputs: a ValueError or TypeError at the call, naming the layer.
LAYER_ERRORS = [
    ("Linear-0", lambda: nn.Linear(0, 4), ValueError, "^Linear: input_dims must be >= 1, got 0"),
    ("Linear-negative", lambda: nn.Linear(-3, 4), ValueError,
     "^Linear: input_dims must be >= 1, got -3"),
    ("Linear-float", lambda: nn.Linear(3, 2.5), TypeError,
     r"^Linear: output_dims must be an int, got 2.5 \(float\)"),
    ("Linear-huge", lambda: nn.Linear(2**20, 2**20), ValueError,
     r"^Linear: an array of shape \(1048576, 1048576\) and dtype float32 needs 4398046511104 "
     "bytes"),
    ("Bilinear-0", lambda: nn.Bilinear(0, 2, 3), ValueError,
     "^Bilinear: input1_dims must be >= 1, got 0"),
    ("Embedding-dims-0", lambda: nn.Embedding(10, 0), ValueError,
     "^Embedding: dims must be >= 1, got 0"),
    ("Embedding-bool", lambda: nn.Embedding(True, 4), TypeError,
     "^Embedding: num_embeddings must be an int, got True"),
    ("Conv1d-kernel-0", lambda: nn.Conv1d(2, 4, 0), ValueError,
     "^Conv1d: kernel_size must be >= 1, got 0"),
    ("Conv2d-in-0", lambda: nn.Conv2d(0, 4, 3), ValueError,
     "^Conv2d: in_channels must be >= 1, got 0"),
    ("Conv2d-groups-0", lambda: nn.Conv2d(2, 4, 3, groups=0), ValueError,
     "^Conv2d: groups must be >= 1, got 0"),
    ("Conv3d-kernel-count", lambda: nn.Conv3d(2, 4, (1, 2)), ValueError,
     r"^Conv3d: expected an int or 3 values for kernel_size, got \(1, 2\)"),
    ("ConvTranspose1d-stride-0", lambda: nn.ConvTranspose1d(2, 4, 3, stride=0), ValueError,
     "^ConvTranspose1d: stride must be >= 1, got 0"),
    ("GRU-hidden-0", lambda: nn.GRU(3, 0), ValueError, "^GRU: hidden_size must be >= 1, got 0"),
    ("LSTM-hidden-0", lambda: nn.LSTM(3, 0), ValueError,
     "^LSTM: hidden_size must be >= 1, got 0"),
    ("RNN-hidden-0", lambda: nn.RNN(3, 0), ValueError, "^RNN: hidden_size must be >= 1, got 0"),
    ("QuantizedLinear-0", lambda: nn.QuantizedLinear(0, 64), ValueError,
     "^QuantizedLinear: input_dims must be >= 1, got 0"),
    ("MultiHeadAttention-heads-0", lambda: nn.MultiHeadAttention(8, 0), ValueError,
     "^MultiHeadAttention: num_heads must be >= 1, got 0"),
    ("TransformerEncoderLayer-heads-0", lambda: nn.TransformerEncoderLayer(8, 0), ValueError,
     "^TransformerEncoderLayer: num_heads must be >= 1, got 0"),
    ("Transformer-heads-0", lambda: nn.Transformer(8, 0), ValueError,
     "^Transformer: num_heads must be >= 1, got 0"),
    ("GroupNorm-groups-0", lambda: nn.GroupNorm(0, 4), ValueError,
     "^GroupNorm: num_groups must be >= 1, got 0"),
    ("Upsample-nan", lambda: nn.Upsample(float("nan")), ValueError,
     "^Upsample: scale_factor must be finite, got nan"),
    ("Upsample-inf", lambda: nn.Upsample(float("inf")), ValueError,
     "^Upsample: scale_factor must be finite, got inf"),
    ("Upsample-negative", lambda: nn.Upsample(-2.0), ValueError,
     "^Upsample: scale_factor must be positive, got -2.0"),
    ("Upsample-zero", lambda: nn.Upsample((2.0, 0.0)), ValueError,
     "^Upsample: scale_factor must be positive, got 0.0"),
    ("Upsample-huge-call", lambda: nn.Upsample(1e9)(mx.ones((1, 4, 4, 2))), ValueError,
     r"^Upsample: shape dimension falls outside the supported int32 range, got "
     r"\(1, 4000000000, 4, 2\)"),
    ("Upsample-bytes-call", lambda: nn.Upsample(1e5)(mx.ones((1, 4, 4, 2))), ValueError,
     r"^Upsample: an array of shape \(1, 400000, 400000, 2\) and dtype float32 needs "
     "1280000000000 bytes"),
    ("upsample_nearest-negative", lambda: nn.upsample_nearest(mx.ones((1, 4, 4, 2)), (-1, -1)),
     ValueError, "^upsample_nearest: scale_factor must be positive, got -1.0"),
    ("GRU-rank-1", lambda: nn.GRU(3, 4)(mx.ones((3,))), ValueError,
     r"^GRU: expected inputs of shape \(N, L, 3\) or \(L, 3\) \(input_size=3\), got shape "
     r"\(3,\)"),
    ("LSTM-rank-1", lambda: nn.LSTM(3, 4)(mx.ones((3,))), ValueError,
     r"^LSTM: expected inputs of shape \(N, L, 3\)"),
    ("RNN-features", lambda: nn.RNN(3, 4)(mx.ones((2, 5))), ValueError,
     r"^RNN: expected inputs of shape \(N, L, 3\) or \(L, 3\) \(input_size=3\), got shape "
     r"\(2, 5\)"),
    ("RNN-hidden", lambda: nn.RNN(3, 4)(mx.ones((2, 3)), mx.ones((5,))), ValueError,
     r"^RNN: expected an initial state whose last dimension is hidden_size=4, got shape "
     r"\(5,\)"),
    ("ALiBi-rank-1", lambda: nn.ALiBi()(mx.ones((4,))), ValueError,
     r"^ALiBi: expected inputs with 4 dimensions \(N, heads, queries, keys\), got shape \(4,\)"),
    ("GroupNorm-rank-1", lambda: nn.GroupNorm(2, 4)(mx.ones((4,))), ValueError,
     r"^GroupNorm: expected inputs with at least 2 dimensions \(N, ..., C\), got shape \(4,\)"),
    ("GroupNorm-features", lambda: nn.GroupNorm(2, 4)(mx.ones((2, 3, 6))), ValueError,
     r"^GroupNorm: expected inputs whose last dimension is dims=4, got shape \(2, 3, 6\)"),
    ("InstanceNorm-rank-1", lambda: nn.InstanceNorm(4)(mx.array([1.0, 2.0, 3.0, 4.0])),
     ValueError, r"^InstanceNorm: expected inputs with at least 3 dimensions \(N, ..., C\), "
     r"got shape \(4,\)"),
    ("InstanceNorm-rank-2", lambda: nn.InstanceNorm(4)(mx.ones((2, 4))), ValueError,
     "^InstanceNorm: expected inputs with at least 3 dimensions"),
    ("MultiHeadAttention-rank-1",
     lambda: nn.MultiHeadAttention(8, 2)(*[mx.ones((8,))] * 3), ValueError,
     r"^MultiHeadAttention: expected queries of shape \(N, L, 8\), got shape \(8,\)"),
    ("MultiHeadAttention-features",
     lambda: nn.MultiHeadAttention(8, 2)(mx.ones((1, 2, 7)), *[mx.ones((1, 2, 8))] * 2),
     ValueError, r"^MultiHeadAttention: expected queries of shape \(N, L, 8\), got shape "
     r"\(1, 2, 7\)"),
    ("MultiHeadAttention-lengths",
     lambda: nn.MultiHeadAttention(8, 2)(mx.ones((1, 2, 8)), mx.ones((1, 3, 8)),
                                         mx.ones((1, 2, 8))), ValueError,
     "^MultiHeadAttention: the batch sizes and the key and value lengths must match"),
    ("SinusoidalPositionalEncoding-dict",
     lambda: nn.SinusoidalPositionalEncoding(8)({"a": 1}), TypeError,
     "^SinusoidalPositionalEncoding: cannot convert dict to an array"),
    ("Linear-features", lambda: nn.Linear(3, 4)(mx.ones((2, 5))), ValueError,
     r"^Linear: expected inputs whose last dimension is input_dims=3, got shape \(2, 5\)"),
    ("Linear-None", lambda: nn.Linear(3, 4)(None), TypeError,
     "^Linear: cannot convert NoneType to an array"),
    ("LayerNorm-features", lambda: nn.LayerNorm(4)(mx.ones((2, 5))), ValueError,
     r"^LayerNorm: expected inputs whose last dimension is dims=4, got shape \(2, 5\)"),
    ("RMSNorm-features", lambda: nn.RMSNorm(4)(mx.ones((2, 5))), ValueError,
     r"^RMSNorm: expected inputs whose last dimension is dims=4, got shape \(2, 5\)"),
    ("Bilinear-features", lambda: nn.Bilinear(2, 3, 4)(mx.ones((5, 3)), mx.ones((5, 3))),
     ValueError, r"^Bilinear: expected inputs whose last dimension is input1_dims=2, got "
     r"shape \(5, 3\)"),
    ("Bilinear-rows", lambda: nn.Bilinear(2, 3, 4)(mx.ones((5, 2)), mx.ones((4, 3))),
     ValueError, r"^Bilinear: the inputs' leading shapes must match, got shapes \(5, 2\) and "
     r"\(4, 3\)"),
    ("BatchNorm-features", lambda: nn.BatchNorm(4)(mx.ones((2, 5))), ValueError,
     r"^BatchNorm: expected inputs whose last dimension is num_features=4, got shape \(2, 5\)"),
    ("Embedding-float-index", lambda: nn.Embedding(10, 4)(mx.array([1.5])), TypeError,
     r"^Embedding: indices must be integers, got float32 \(shape \(1,\)\)"),
    ("GLU-odd", lambda: nn.GLU()(mx.ones((3,))), ValueError,
     r"^GLU: the size of axis -1 must be even, got shape \(3,\)"),
    ("Conv1d-channels", lambda: nn.Conv1d(2, 4, 3)(mx.ones((1, 5, 3))), ValueError,
     r"^Conv1d: expected inputs of shape \(N, L, in_channels=2\), got shape \(1, 5, 3\)"),
    ("QuantizedLinear-features", lambda: nn.QuantizedLinear(64, 8)(mx.ones((2, 32))),
     ValueError, "^QuantizedLinear: expected inputs whose last dimension is input_dims=64"),
    ("MaxPool1d-arguments", lambda: nn.MaxPool1d(2)(1, 2), TypeError,
     r"^MaxPool1d.__call__\(\) takes 2 positional arguments"),
    ("ReLU-arguments", lambda: nn.ReLU()(1, 2), TypeError,
     r"^ReLU.__call__\(\) takes 2 positional arguments"),
    ("ReLU-init", lambda: nn.ReLU(3), TypeError, r"^ReLU.__init__\(\) takes 1 positional"),
]


@pytest.mark.parametrize("call,error,message", [c[1:] for c in LAYER_ERRORS],
                         ids=[c[0] for c in LAYER_ERRORS])
def test_layer_rejects_bad_arguments_and_inputs(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()


def test_layers_keep_accepting_what_mlx_accepts() -> None:
    assert nn.Linear(3, 0)(mx.ones((2, 3))).shape == (2, 0)
    assert nn.Embedding(0, 4).weight.shape == (0, 4)
    assert nn.GRU(0, 3).Wx.shape == (9, 0)
    assert nn.Linear(3, 2)([[1.0, 2.0, 3.0]]).shape == (1, 2)  # lists are converted
    assert nn.LayerNorm(4, affine=False)(mx.ones((2, 5))).shape == (2, 5)
    assert nn.InstanceNorm(4)(mx.ones((2, 3, 5))).shape == (2, 3, 5)  # dims unused
    assert nn.Bilinear(2, 3, 4)(mx.ones((5, 2)), mx.ones((1, 3))).shape == (5, 4)
    assert nn.Upsample((2, 0.5))(mx.ones((1, 4, 4, 2))).shape == (1, 8, 2, 2)
    attention = nn.MultiHeadAttention(64, 2)
    nn.quantize(attention)  # packed weights: the call still checks the input sizes
    assert attention(*[mx.ones((1, 3, 64))] * 3).shape == (1, 3, 64)
