"""Quantization and gathered products against NumPy float64 references and MLX's packing."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
import nuvec.nn as nn
from nuvec.testing import assert_allclose

BITS = [1, 2, 3, 4, 5, 6, 8]
GROUPS = [32, 64, 128]


def _pack_reference(codes: np.ndarray, bits: int) -> np.ndarray:
    """MLX's layout written out with Python ints: code i at bits [i*bits, (i+1)*bits)."""
    rows = []
    for row in codes:
        stream = 0
        for i, c in enumerate(row.tolist()):
            stream |= int(c) << (i * bits)
        words = row.size * bits // 32
        rows.append([(stream >> (32 * j)) & 0xFFFFFFFF for j in range(words)])
    return np.array(rows, dtype=np.uint32)


def _dequantize_reference(codes, scales, biases, group_size):
    grouped = codes.reshape(*codes.shape[:-1], -1, group_size).astype(np.float64)
    out = grouped * scales[..., None].astype(np.float64) + biases[..., None].astype(np.float64)
    return out.reshape(codes.shape)


@pytest.mark.parametrize("bits", BITS)
def test_dequantize_reads_mlx_layout(bits):
    rng = np.random.default_rng(bits)
    codes = rng.integers(0, 2**bits, size=(3, 64))
    scales = rng.uniform(0.5, 2, size=(3, 2)).astype(np.float32)
    biases = rng.standard_normal((3, 2)).astype(np.float32)
    w = mx.array(_pack_reference(codes, bits))
    out = mx.dequantize(w, mx.array(scales), mx.array(biases), 32, bits)
    assert_allclose(out, _dequantize_reference(codes, scales, biases, 32), dtype=mx.float32)


@pytest.mark.parametrize("bits", BITS)
def test_quantize_packs_mlx_layout_exactly(bits):
    # Values on an exactly representable grid quantize without error. The minimum has the
    # larger magnitude, so MLX's rule makes it the bias (with a positive scale).
    rng = np.random.default_rng(10 + bits)
    codes = rng.integers(0, 2**bits, size=(4, 64))
    codes[:, 0], codes[:, 1] = 0, 2**bits - 1  # every group spans the full range
    codes[:, 32], codes[:, 33] = 0, 2**bits - 1
    low = -1.0 - 0.25 * (2**bits - 1)
    w = (low + codes * 0.25).astype(np.float32)
    w_q, scales, biases = mx.quantize(mx.array(w), 32, bits)
    assert w_q.dtype == mx.uint32 and w_q.shape == (4, 64 * bits // 32)
    np.testing.assert_array_equal(np.asarray(w_q), _pack_reference(codes, bits))
    assert_allclose(scales, np.full((4, 2), 0.25), dtype=mx.float32)
    assert_allclose(biases, np.full((4, 2), low), dtype=mx.float32)


def _one_bit_reference(w: np.ndarray, group_size: int):
    """MLX's 1-bit rule in float32: bias = min, scale = max(max - min, 1e-7),
    code = clip(rint((w - bias) / scale), 0, 1) per group."""
    groups = w.reshape(*w.shape[:-1], -1, group_size)
    w_min, w_max = groups.min(-1), groups.max(-1)
    scales = np.maximum(w_max - w_min, np.float32(1e-7))
    codes = np.clip(np.rint((groups - w_min[..., None]) / scales[..., None]), 0, 1)
    return codes.astype(np.uint8).reshape(w.shape), scales, w_min


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16], ids=lambda d: d.name)
def test_quantize_one_bit_rule(dtype):
    rng = np.random.default_rng(20)
    w = (rng.standard_normal((5, 128)) * 3).astype(np.float32)
    w[1] = 0  # zero groups
    w[2] = 0.37  # constant groups
    w[3] = -np.abs(w[3]) - 1  # negative groups
    w[4, :64] = np.tile([0, 0.5, 1, 0.25], 16)  # a midpoint tie: rint rounds it to code 0
    w_in = mx.array(w).astype(dtype)
    codes, scales, biases = _one_bit_reference(np.asarray(w_in.astype(mx.float32)), 32)
    w_q, s, b = mx.quantize(w_in, 32, 1)
    np.testing.assert_array_equal(np.asarray(w_q), _pack_reference(codes, 1))
    for got, want in ((s, scales), (b, biases)):
        assert got.dtype == dtype
        rounded = mx.array(want).astype(dtype)  # the float32 parameters rounded once
        assert mx.array_equal(got, rounded).item()
    tiny = np.asarray(mx.array(np.float32(1e-7)).astype(dtype).astype(mx.float32))
    assert np.asarray(s[1].astype(mx.float32)).tolist() == [tiny.item()] * 4
    assert np.asarray(b[1].astype(mx.float32)).tolist() == [0.0] * 4
    restored = np.asarray(mx.dequantize(w_q, s, b, 32, 1).astype(mx.float32))
    assert restored[1].tolist() == [0.0] * 128


def test_quantize_larger_maximum_gives_a_negative_scale():
    w = np.tile(np.linspace(-1, 3, 32, dtype=np.float32), (1, 1))
    _, scales, biases = mx.quantize(mx.array(w), 32, 2)
    assert scales.item() < 0 and biases.item() == pytest.approx(3.0)


@pytest.mark.parametrize("group_size", GROUPS)
@pytest.mark.parametrize("bits", BITS)
def test_round_trip_within_one_step(bits, group_size):
    rng = np.random.default_rng(bits * group_size)
    w = rng.standard_normal((6, 256)).astype(np.float32)
    restored = np.asarray(mx.dequantize(*mx.quantize(mx.array(w), group_size, bits),
                                        group_size=group_size, bits=bits))
    groups = w.reshape(6, -1, group_size)
    step = (groups.max(-1) - groups.min(-1)) / (2**bits - 1)
    error = np.abs(restored - w).reshape(groups.shape).max(-1)
    assert (error <= step * 1.0001).all()
    # Rounding to the nearest code: the typical error is about a quarter step.
    assert np.abs(restored - w).mean() < 0.5 * step.mean()


def test_quantize_keeps_zero_and_edges():
    w = np.zeros((2, 32), np.float32)
    w[0, :] = np.linspace(-1, 3, 32)
    w_q, s, b = mx.quantize(mx.array(w), 32, 4)
    restored = np.asarray(mx.dequantize(w_q, s, b, 32, 4))
    assert restored[1].tolist() == [0.0] * 32
    assert restored[0, -1] == pytest.approx(3.0, abs=1e-6)  # the larger-magnitude edge is exact


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16, mx.float32, mx.float64])
def test_quantize_dtypes(dtype):
    w = mx.array(np.random.default_rng(0).standard_normal((2, 3, 64)), dtype)
    w_q, s, b = mx.quantize(w)
    assert (w_q.shape, s.shape, b.shape) == ((2, 3, 8), (2, 3, 1), (2, 3, 1))
    assert s.dtype == dtype and b.dtype == dtype
    assert mx.dequantize(w_q, s, b).dtype == dtype


def _quantized(rng, shape, group_size=64, bits=4):
    w = mx.array(rng.standard_normal(shape).astype(np.float32))
    w_q, s, b = mx.quantize(w, group_size, bits)
    wide = [mx.astype(a, mx.float64) for a in (s, b)]
    return w_q, s, b, np.asarray(mx.dequantize(w_q, *wide, group_size, bits))


@pytest.mark.parametrize("group_size", GROUPS)
@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("transpose", [True, False], ids=["transpose", "plain"])
def test_quantized_matmul_matches_dequantized_product(bits, group_size, transpose):
    rng = np.random.default_rng(bits)
    w_q, s, b, dense = _quantized(rng, (96, 128), group_size, bits)
    k = 128 if transpose else 96
    x = rng.standard_normal((2, 5, k)).astype(np.float32)
    out = mx.quantized_matmul(mx.array(x), w_q, s, b, transpose, group_size, bits)
    ref = x.astype(np.float64) @ (dense.T if transpose else dense)
    assert_allclose(out, ref, dtype=mx.float32, rtol=1e-4, atol=1e-4)


def test_quantized_matmul_vector_batched_weights_and_promotion():
    rng = np.random.default_rng(1)
    w_q, s, b, dense = _quantized(rng, (3, 4, 64))
    x = rng.standard_normal((2, 1, 5, 64))
    out = mx.quantized_matmul(mx.array(x, mx.float64), w_q, s, b)
    assert_allclose(out, x @ np.swapaxes(dense, -1, -2), dtype=mx.float64, rtol=1e-6, atol=1e-6)
    w2, s2, b2, dense2 = _quantized(rng, (4, 64))
    v = rng.standard_normal(64).astype(np.float32)
    assert_allclose(mx.quantized_matmul(mx.array(v), w2, s2, b2), dense2 @ v,
                    dtype=mx.float32, rtol=1e-4, atol=1e-4)
    half = mx.quantized_matmul(mx.array(v, mx.float16), w2, s2, b2)
    assert half.dtype == mx.float32  # promoted with the float32 scales, as MLX


def test_quantized_matmul_reads_views():
    rng = np.random.default_rng(6)
    w_q, s, b, dense = _quantized(rng, (3, 64))
    x = rng.standard_normal((64, 8)).astype(np.float32)
    view = mx.array(x).T[::2]  # transposed, then step-sliced: [4, 64]
    assert_allclose(mx.quantized_matmul(view, w_q, s, b), x.T[::2] @ dense.T,
                    dtype=mx.float32, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
def test_quantized_matmul_low_precision(dtype):
    rng = np.random.default_rng(7)
    w = mx.array(rng.standard_normal((4, 64)), dtype)
    w_q, s, b = mx.quantize(w)
    x = mx.array(rng.standard_normal((2, 64)), dtype)
    out = mx.quantized_matmul(x, w_q, s, b)
    dense = np.asarray(mx.dequantize(w_q, s, b)).astype(np.float64)
    assert_allclose(out, np.asarray(x).astype(np.float64) @ dense.T, dtype=dtype,
                    rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("bits", BITS)
def test_empty_arrays_quantize_and_multiply(bits):
    w_q, s, b = mx.quantize(mx.zeros((2, 0, 64)), 64, bits)
    assert [np.asarray(a).shape for a in (w_q, s, b)] == [(2, 0, 2 * bits), (2, 0, 1), (2, 0, 1)]
    assert np.asarray(mx.dequantize(w_q, s, b, 64, bits)).shape == (2, 0, 64)
    w_q, s, b = mx.quantize(mx.ones((4, 64)), 64, bits)
    for transpose, k, n in ((True, 64, 4), (False, 4, 64)):
        out = mx.quantized_matmul(mx.zeros((3, 0, k)), w_q, s, b, transpose, 64, bits)
        assert np.asarray(out).shape == (3, 0, n)
    w_q, s, b = mx.quantize(mx.ones((0, 4, 64)), 64, bits)  # an empty stack of weights
    assert np.asarray(mx.quantized_matmul(mx.ones((2, 64)), w_q, s, b, True, 64, bits)).shape \
        == (0, 2, 4)


def test_quantized_matmul_grad_is_the_flipped_product():
    rng = np.random.default_rng(2)
    w_q, s, b, dense = _quantized(rng, (3, 64))
    x = mx.array(rng.standard_normal((2, 64)).astype(np.float32))
    g = mx.grad(lambda x: mx.sum(mx.quantized_matmul(x, w_q, s, b)))(x)
    assert_allclose(g, np.broadcast_to(dense.sum(0), (2, 64)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("x_shape", [(64,), (2, 3, 64)], ids=["vector", "batched"])
def test_quantized_matmul_vmap_over_weights(x_shape):
    rng = np.random.default_rng(8)
    w_q, s, b, dense = _quantized(rng, (3, 4, 64))  # a stack of 3 weight matrices
    x = rng.standard_normal(x_shape).astype(np.float32)
    out = mx.vmap(lambda w, s, b: mx.quantized_matmul(mx.array(x), w, s, b))(w_q, s, b)
    ref = np.stack([x @ dense[i].T for i in range(3)])
    assert_allclose(out, ref, dtype=mx.float32, rtol=1e-4, atol=1e-4)


def test_gather_mm_matches_numpy():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((4, 5, 2)).astype(np.float32)
    lhs, rhs = np.array([[5], [0]]), np.array([3, 1, 1])
    out = mx.gather_mm(mx.array(a), mx.array(b), mx.array(lhs), mx.array(rhs))
    flat_a = a.reshape(-1, 4, 5)
    li, ri = np.broadcast_arrays(lhs, rhs)
    assert_allclose(out, flat_a[li] @ b[ri], dtype=mx.float32)
    # default indices: arange over the other operand's batch
    out = mx.gather_mm(mx.ones((3, 2, 5)), mx.array(b), None, mx.array([2]))
    assert_allclose(out, np.ones((3, 2, 5)) @ b[2], dtype=mx.float32, rtol=1e-5, atol=1e-5)


def test_gather_mm_empty_matrices():
    out = mx.gather_mm(mx.zeros((2, 0, 3)), mx.ones((2, 3, 4)), mx.array([0, 1]), mx.array([1, 1]))
    assert_allclose(out, np.zeros((2, 0, 4)), dtype=mx.float32)


def test_gather_mm_vectors_and_no_indices():
    a, b = np.ones((3, 2), np.float32), np.ones((2, 2, 4), np.float32)
    out = mx.gather_mm(mx.array(a[0]), mx.array(b), mx.array([0]), mx.array([1]))
    assert out.shape == (1, 4) and out.tolist() == [[2.0] * 4]
    assert_allclose(mx.gather_mm(mx.array(a), mx.array(b[0])), a @ b[0])


@pytest.mark.parametrize("bits", [1, 4])
def test_gather_qmm_matches_loop(bits):
    rng = np.random.default_rng(4)
    w_q, s, b, dense = _quantized(rng, (3, 6, 64), bits=bits)
    x = rng.standard_normal((2, 4, 64)).astype(np.float32)
    lhs, rhs = np.array([1, 0, 1]), np.array([2, 2, 0])
    out = mx.gather_qmm(mx.array(x), w_q, s, b, mx.array(lhs), mx.array(rhs), bits=bits)
    ref = np.stack([x[i] @ dense[j].T for i, j in zip(lhs, rhs)])
    assert_allclose(out, ref, dtype=mx.float32, rtol=1e-4, atol=1e-4)
    # no indices: the quantized product, batched over the leading axes
    out = mx.gather_qmm(mx.array(x[0]), w_q, s, b, bits=bits)
    assert_allclose(out, np.stack([x[0] @ dense[j].T for j in range(3)]), dtype=mx.float32,
                    rtol=1e-4, atol=1e-4)


def _tile(mask, rows, cols, block):
    return np.kron(mask, np.ones((block, block)))[:rows, :cols]


@pytest.mark.parametrize("block", [32, 64])
def test_block_masked_mm_matches_numpy(block):
    rng = np.random.default_rng(block)
    m, k, n = 70, 40, 33
    a, b = rng.standard_normal((2, m, k)), rng.standard_normal((k, n))
    tm, tk, tn = (-(-d // block) for d in (m, k, n))
    out_mask = rng.random((tm, tn)) > 0.3
    lhs_mask = rng.uniform(0, 2, (2, tm, tk))
    rhs_mask = rng.random((tk, tn)) > 0.2
    out = mx.block_masked_mm(mx.array(a, mx.float64), mx.array(b, mx.float64), block,
                             mx.array(out_mask), mx.array(lhs_mask, mx.float64),
                             mx.array(rhs_mask))
    ref = ((a * np.stack([_tile(x, m, k, block) for x in lhs_mask]))
           @ (b * _tile(rhs_mask, k, n, block))) * _tile(out_mask, m, n, block)
    assert_allclose(out, ref, dtype=mx.float64)


def test_block_masked_mm_without_masks_is_matmul():
    a, b = np.ones((3, 4), np.float32), np.ones((4, 2), np.float32)
    assert_allclose(mx.block_masked_mm(mx.array(a), mx.array(b)), a @ b)


def test_segmented_mm_matches_numpy():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((3, 10)), rng.standard_normal((10, 4))
    segments = np.array([[0, 4], [4, 10], [2, 2], [7, 9]])
    out = mx.segmented_mm(mx.array(a, mx.float32), mx.array(b, mx.float32), mx.array(segments))
    ref = np.stack([a[:, s:e] @ b[s:e] for s, e in segments])
    assert_allclose(out, ref, dtype=mx.float32, rtol=1e-5, atol=1e-5)
    # segment bounds are values known only at evaluation: they clip to [0, K]
    out = mx.segmented_mm(mx.array(a), mx.array(b), mx.array([[-3, 4], [8, 99], [6, 2]]))
    ref = np.stack([a[:, :4] @ b[:4], a[:, 8:] @ b[8:], np.zeros((3, 4))])
    assert_allclose(out, ref, dtype=mx.float32, rtol=1e-5, atol=1e-5)


W_Q, SCALES, BIASES = mx.quantize(mx.ones((4, 64)))


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: mx.quantize(mx.ones((2, 64)), 16), ValueError, "^quantize: group_size"),
        (lambda: mx.quantize(mx.ones((2, 64)), 64, 7), ValueError, "^quantize: bits"),
        (lambda: mx.quantize(mx.ones((2, 64)), mode="int8"), ValueError,
         "^quantize: mode must be 'affine', 'mxfp4', 'mxfp8' or 'nvfp4', got 'int8'"),
        (lambda: mx.quantize(mx.ones((2, 64)), 64, mode="mxfp4"), ValueError,
         "^quantize: mxfp4 quantization requires group size 32, got 64"),
        (lambda: mx.quantize(mx.ones((2, 64)), bits=4, mode="mxfp8"), ValueError,
         "^quantize: mxfp8 quantization requires bits 8, got 4"),
        (lambda: mx.quantize(mx.ones((2, 64)), global_scale=mx.array(1.0)), ValueError,
         "^quantize: global_scale is only used by nvfp4"),
        (lambda: mx.dequantize(W_Q, SCALES), ValueError,
         "^dequantize: biases must be given for affine quantization"),
        (lambda: mx.dequantize(W_Q, SCALES, BIASES, mode="mxfp4"), ValueError,
         "^dequantize: mxfp4 quantization has no biases"),
        (lambda: mx.dequantize(W_Q, SCALES, mode="mxfp4"), TypeError,
         "^dequantize: mxfp4 weights must be uint32 and scales uint8"),
        (lambda: mx.quantize(mx.ones((2, 64), mx.int32)), TypeError, "^quantize: only real"),
        (lambda: mx.quantize(mx.ones((64,))), ValueError, "^quantize: w must have"),
        (lambda: mx.quantize(mx.ones((2, 48))), ValueError, "^quantize: the last axis"),
        (lambda: mx.dequantize(mx.ones((4, 8)), SCALES, BIASES), TypeError,
         "^dequantize: the quantized weights must be uint32"),
        (lambda: mx.dequantize(W_Q, SCALES, BIASES[:2]), ValueError,
         "^dequantize: scales and biases"),
        (lambda: mx.dequantize(W_Q, SCALES[:2], BIASES[:2]), ValueError,
         "^dequantize: scales of shape"),
        (lambda: mx.dequantize(W_Q, SCALES, BIASES, 32), ValueError,
         "^dequantize: weights of shape"),
        (lambda: mx.dequantize(W_Q[0], SCALES[0], BIASES[0]), ValueError,
         "^dequantize: the quantized weights must have"),
        (lambda: mx.dequantize(W_Q, mx.ones((4, 1), mx.int32), mx.ones((4, 1), mx.int32)),
         TypeError, "^dequantize: scales must be real"),
        (lambda: mx.quantized_matmul(mx.ones((2, 32)), W_Q, SCALES, BIASES), ValueError,
         "^quantized_matmul: the last axis of x"),
        (lambda: mx.quantized_matmul(mx.ones((2, 64)), W_Q, SCALES, BIASES, bits=3), ValueError,
         "^quantized_matmul: weights of shape"),
        (lambda: mx.quantized_matmul(mx.ones((2, 64), mx.int32), W_Q,
                                     mx.ones((4, 1), mx.int32), mx.ones((4, 1), mx.int32)),
         TypeError, "^quantized_matmul: scales must be real"),
        (lambda: mx.quantized_matmul(mx.ones((64,)), mx.stack([W_Q, W_Q]),
                                     mx.stack([SCALES, SCALES]), mx.stack([BIASES, BIASES])),
         ValueError, "^quantized_matmul: x must have at least 2"),
        (lambda: mx.gather_mm(mx.array(1.0), mx.ones((2, 2)), mx.array([0])), ValueError,
         "^gather_mm: operands"),
        (lambda: mx.gather_mm(mx.ones((2, 3)), mx.ones((2, 2)), mx.array([0])), ValueError,
         "^gather_mm: the last axis"),
        (lambda: mx.gather_mm(mx.ones((2, 2), mx.int32), mx.ones((2, 2), mx.int32),
                              mx.array([0])), TypeError, "^gather_mm: operands must be real"),
        (lambda: mx.gather_mm(mx.ones((2, 2)), mx.ones((2, 2)), mx.array([0.0])), TypeError,
         "^gather_mm: indices"),
        (lambda: mx.gather_mm(mx.ones((3, 2, 2)), mx.ones((3, 2, 2)), mx.array([0, 1]),
                              mx.array([0, 1, 2])), ValueError, "^gather_mm: shapes"),
        (lambda: mx.gather_qmm(mx.ones((64,)), W_Q, SCALES, BIASES, mx.array([0])), ValueError,
         "^gather_qmm: x must have"),
        (lambda: mx.gather_qmm(mx.ones((1, 32)), W_Q, SCALES, BIASES, mx.array([0])), ValueError,
         "^gather_qmm: the last axis of x"),
        (lambda: mx.gather_qmm(mx.ones((1, 64), mx.complex64), W_Q, SCALES, BIASES,
                               mx.array([0])), TypeError, "^gather_qmm: x must be real floating"),
        (lambda: mx.gather_qmm(mx.ones((1, 64)), W_Q, SCALES, BIASES, bits=5,
                               rhs_indices=mx.array([0])), ValueError, "^gather_qmm: weights"),
        (lambda: mx.block_masked_mm(mx.ones((4, 4)), mx.ones((4, 4)), 16, mx.array([[True]])),
         ValueError, "^block_masked_mm: block_size"),
        (lambda: mx.block_masked_mm(mx.ones((4, 4)), mx.ones((3, 4)), 32, mx.array([[True]])),
         ValueError, "^block_masked_mm: the last axis"),
        (lambda: mx.block_masked_mm(mx.array(1.0), mx.ones((3, 4)), 32, mx.array([[True]])),
         ValueError, "^block_masked_mm: operands must have"),
        (lambda: mx.block_masked_mm(mx.ones((4, 4)), mx.ones((4, 4)), 32,
                                    mx.ones((2, 2), mx.bool_)),
         ValueError, "^block_masked_mm: mask_out must have tile shape"),
        (lambda: mx.block_masked_mm(mx.ones((4, 4), mx.int32), mx.ones((4, 4), mx.int32), 32,
                                    mx.array([[True]])), TypeError, "^block_masked_mm: operands"),
        (lambda: mx.segmented_mm(mx.ones((2, 3, 4)), mx.ones((4, 2)), mx.array([[0, 1]])),
         ValueError, "^segmented_mm: operands must be 2-D"),
        (lambda: mx.segmented_mm(mx.ones((3, 4)), mx.ones((3, 2)), mx.array([[0, 1]])),
         ValueError, "^segmented_mm: inner"),
        (lambda: mx.segmented_mm(mx.ones((3, 4)), mx.ones((4, 2)), mx.array([0, 1, 2])),
         ValueError, "^segmented_mm: segments must have shape"),
        (lambda: mx.segmented_mm(mx.ones((3, 4)), mx.ones((4, 2)), mx.array([[0.0, 1.0]])),
         TypeError, "^segmented_mm: segments must be integers"),
        (lambda: mx.segmented_mm(mx.ones((3, 4), mx.int32), mx.ones((4, 2), mx.int32),
                                 mx.array([[0, 1]])), TypeError, "^segmented_mm: operands"),
    ],
    ids=lambda v: v.strip("^") if isinstance(v, str) else "",
)
def test_rejected_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_none_group_size_and_bits_mean_mlx_affine_defaults():
    w = mx.array(np.random.default_rng(1).standard_normal((4, 128)).astype(np.float32))
    default = mx.quantize(w, None, None)
    explicit = mx.quantize(w, 64, 4)
    for got, want in zip(default, explicit):
        assert got.shape == want.shape and np.array_equal(np.asarray(got), np.asarray(want))
    x = mx.ones((2, 128))
    assert np.array_equal(np.asarray(mx.quantized_matmul(x, *default, True, None, None)),
                          np.asarray(mx.quantized_matmul(x, *explicit, True, 64, 4)))
    assert np.array_equal(np.asarray(mx.dequantize(*default)),
                          np.asarray(mx.dequantize(*explicit, group_size=64, bits=4)))
    w3 = mx.stack([w, w])
    packed = mx.quantize(w3)
    got = mx.gather_qmm(x, *packed, rhs_indices=mx.array([1]))
    assert got.shape == (1, 2, 4)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16, mx.float64], ids=lambda d: d.name)
def test_dequantize_dtype(dtype):
    w = mx.array(np.random.default_rng(2).standard_normal((2, 64)).astype(np.float32))
    packed = mx.quantize(w)
    out = mx.dequantize(*packed, dtype=dtype)
    assert out.dtype is dtype
    np.testing.assert_allclose(np.asarray(out.astype(mx.float32)),
                               np.asarray(mx.dequantize(*packed)), rtol=1e-2, atol=1e-2)


FP4 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def _e4m3(x):
    """E4M3 rounding in float64 (nearest even, saturating at 448): the reference's own."""
    x = np.asarray(x, np.float64)
    magnitude = np.minimum(np.abs(x), 448.0)
    exponent = np.maximum(np.floor(np.log2(np.where(magnitude > 0, magnitude, 1.0))), -6)
    step = 2.0 ** (exponent - 3)  # 3 mantissa bits; subnormals share the step 2**-9
    return np.sign(x) * np.minimum(np.round(magnitude / step) * step, 448.0)


def _float_mode_reference(w, mode, global_scale=None):
    """The dequantized values of MLX's floating modes, from their definitions."""
    size, largest = {"mxfp4": (32, 6.0), "mxfp8": (32, 448.0), "nvfp4": (16, 6.0)}[mode]
    groups = w.reshape(*w.shape[:-1], -1, size).astype(np.float64)
    amax = np.abs(groups).max(-1, keepdims=True)
    if mode == "nvfp4":
        factor = 1.0 if global_scale is None else 2688.0 / global_scale
        scale = _e4m3(amax / 6.0 * factor) / factor
    else:
        exponent = np.clip(np.ceil(np.log2(np.where(amax > 0, amax / largest, 1.0))), -127, 127)
        scale = 2.0 ** exponent
    values = np.where(scale > 0, groups / np.where(scale > 0, scale, 1.0), 0.0)
    if mode == "mxfp8":
        q = _e4m3(values)
    else:  # E2M1: nearest, ties toward zero
        index = np.searchsorted([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0], np.abs(values))
        q = np.sign(values) * FP4[np.minimum(index, 7)]
    return (q * scale).reshape(w.shape)


@pytest.mark.parametrize("mode", ["mxfp4", "mxfp8", "nvfp4"])
def test_floating_modes_match_their_definitions(mode):
    rng = np.random.default_rng(5)
    w = rng.standard_normal((4, 3, 64)) * np.exp(rng.standard_normal((4, 3, 1)) * 2)
    w[0, 0, :6] = [0.25, -0.75, 1.75, 1e-9, 0.0, 5.0]  # ties, a tiny value, zero
    w = w.astype(np.float32)
    parts = mx.quantize(mx.array(w), mode=mode)
    size, bits = {"mxfp4": (32, 4), "mxfp8": (32, 8), "nvfp4": (16, 4)}[mode]
    assert len(parts) == 2 and parts[0].dtype is mx.uint32 and parts[1].dtype is mx.uint8
    assert parts[0].shape == (4, 3, 64 * bits // 32) and parts[1].shape == (4, 3, 64 // size)
    back = mx.dequantize(*parts, mode=mode)
    assert back.dtype is mx.bfloat16  # MLX's default for uint8 scales
    want = _float_mode_reference(w, mode)
    assert_allclose(mx.dequantize(*parts, mode=mode, dtype=mx.float32), want,
                    dtype=mx.float32, rtol=0, atol=0)
    x = rng.standard_normal((2, 64)).astype(np.float32)
    assert_allclose(mx.quantized_matmul(mx.array(x), parts[0][0], parts[1][0], mode=mode),
                    x @ want[0].T, dtype=mx.float32, rtol=1e-5, atol=1e-4)


def test_floating_mode_bits_are_mlx_s():
    # packed words and scale bytes printed by MLX 0.32 for these rows
    w = np.zeros((1, 32), np.float32)
    w[0, :16] = [0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -6, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5]
    q, s = mx.quantize(mx.array(w), mode="mxfp4")
    assert np.asarray(q).view(np.uint8)[0, :8].tolist() == [0x21, 0x43, 0x65, 0x97, 0x0F,
                                                            0x21, 0x43, 0x65]
    assert s.tolist() == [[127]]
    w = np.zeros((1, 32), np.float32)
    w[0, :7] = [448, 272, 304, 17, 19, -272, 0.0234375]
    q, s = mx.quantize(mx.array(w), mode="mxfp8")
    assert np.asarray(q).view(np.uint8)[0, :7].tolist() == [0x7E, 0x78, 0x7A, 0x58, 0x5A,
                                                            0xF8, 0x0C]
    w = np.zeros((1, 64), np.float32)
    w[0, :3] = [1.0, 1 / 3, 1 / 2.9]
    q, s = mx.quantize(mx.array(w), mode="nvfp4")
    assert s.tolist()[0][:2] == [35, 0] and np.asarray(q).view(np.uint8)[0, :2].tolist() == [
        0x47, 0x04]


@pytest.mark.parametrize("mode", ["mxfp4", "mxfp8", "nvfp4"])
def test_gather_qmm_of_floating_modes_is_gather_mm_of_the_dequantized_weights(mode):
    rng = np.random.default_rng(8)
    w_q, scales = mx.quantize(mx.array(rng.standard_normal((4, 8, 64)).astype(np.float32)),
                              mode=mode)
    x = mx.array(rng.standard_normal((3, 2, 64)).astype(np.float32))
    rhs, lhs = mx.array([[1, 3], [0, 0], [2, 1]]), mx.array([[0, 0], [1, 1], [2, 2]])
    weights = np.asarray(mx.dequantize(w_q, scales, mode=mode, dtype=mx.float32))
    want = np.asarray(x)[np.asarray(lhs)] @ np.swapaxes(weights[np.asarray(rhs)], -1, -2)
    got = mx.gather_qmm(x, w_q, scales, lhs_indices=lhs, rhs_indices=rhs, mode=mode)
    assert_allclose(got, want, dtype=mx.float32, rtol=1e-5, atol=1e-4)
    with pytest.raises(ValueError, match=f"^gather_qmm: {mode} quantization has no biases"):
        mx.gather_qmm(x, w_q, scales, scales, rhs_indices=rhs, mode=mode)


def test_nvfp4_global_scale_and_quantized_layers():
    rng = np.random.default_rng(6)
    w = (rng.standard_normal((2, 64)) * 3).astype(np.float32)
    tensor = float(np.abs(w).max())
    parts = mx.quantize(mx.array(w), mode="nvfp4", global_scale=mx.array(tensor))
    back = mx.dequantize(*parts, mode="nvfp4", global_scale=mx.array(tensor), dtype=mx.float32)
    assert_allclose(back, _float_mode_reference(w, "nvfp4", tensor), dtype=mx.float32,
                    rtol=1e-6, atol=1e-6)  # (the float32 factor global_scale / 2688)
    for mode, (size, bits) in {"mxfp4": (32, 4), "mxfp8": (32, 8), "nvfp4": (16, 4)}.items():
        layer = nn.QuantizedLinear(64, 8, mode=mode)
        assert (layer.group_size, layer.bits) == (size, bits) and "biases" not in layer
        x = mx.array(rng.standard_normal((3, 64)).astype(np.float32))
        weights = mx.dequantize(layer.weight, layer.scales, mode=mode, dtype=mx.float32)
        assert_allclose(layer(x), np.asarray(x) @ np.asarray(weights).T + np.asarray(layer.bias),
                        dtype=mx.float32, rtol=1e-5, atol=1e-5)
        model = nn.Sequential(nn.Embedding(10, 64), nn.Linear(64, 64))
        nn.quantize(model, mode=mode)
        assert model.layers[0].mode == mode and model(mx.array([1, 2])).shape == (2, 64)


# -- qqmm and gather_qqmm: both operands quantized ---------------------------------------------

PRODUCT_MODES = {"nvfp4": 16, "mxfp8": 32, "mxfp4": 32}  # mode -> group size


def _rounded_reference(v, mode, global_scale=None):
    """`v` through quantization along its last axis (zero-padded to whole groups) and back."""
    v = np.asarray(v, np.float64)
    if v.size == 0:
        return v
    size = v.shape[-1]
    rows = v.reshape(-1, size)
    rows = np.pad(rows, ((0, 0), (0, -size % PRODUCT_MODES[mode])))
    return _float_mode_reference(rows, mode, global_scale)[:, :size].reshape(v.shape)


def _qqmm_reference(x, w, mode, global_x=None, global_w=None):
    return _rounded_reference(x, mode, global_x) @ _rounded_reference(w, mode, global_w).T


def test_qqmm_is_mlx_s_bit_for_bit():
    # MLX 0.32's CPU qqmm (one row, packed weights) and QQLinear in eval mode, these inputs
    x = (np.sin(np.arange(64) * 0.37) * 3).astype(np.float32)[None]
    w = (np.cos(np.arange(4 * 64).reshape(4, 64) * 0.11)
         * np.linspace(0.1, 2, 4)[:, None]).astype(np.float32)
    mlx = {"nvfp4": [1.4599609375, 6.3671875, 2.71875, -10.1484375],
           "mxfp8": [1.1074905395507812, 6.204833984375, 2.78466796875, -12.4287109375],
           "mxfp4": [1.046875, 5.96875, 3.3125, -11.125]}
    for mode, want in mlx.items():
        packed = mx.quantize(mx.array(w), mode=mode)
        assert_allclose(mx.qqmm(mx.array(x), *packed, mode=mode), [want], dtype=mx.float32,
                        rtol=0, atol=0)
        assert_allclose(mx.qqmm(mx.array(x[0]), *packed, mode=mode), want, rtol=0, atol=0)
        layer = nn.QQLinear(64, 4, mode=mode)
        layer.weight = mx.array(w)
        assert_allclose(layer.eval()(mx.array(x)), [want], rtol=0, atol=0)


@pytest.mark.parametrize("mode", list(PRODUCT_MODES))
@pytest.mark.parametrize("x_shape", [(5, 64), (2, 3, 64), (64,), (0, 64)],
                         ids=["matrix", "batched", "vector", "empty"])
def test_qqmm_matches_its_definition(mode, x_shape):
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(x_shape) * 4).astype(np.float32)
    w = (rng.standard_normal((7, 64)) * np.exp(rng.standard_normal((7, 1)))).astype(np.float32)
    want = _qqmm_reference(x, w, mode)
    assert_allclose(mx.qqmm(mx.array(x), mx.array(w), mode=mode), want, dtype=mx.float32,
                    rtol=1e-5, atol=1e-5)
    w_q, scales = mx.quantize(mx.array(w), mode=mode)  # packed: the same values
    assert_allclose(mx.qqmm(mx.array(x), w_q, scales, mode=mode), want, rtol=1e-5, atol=1e-5)


def test_qqmm_nvfp4_global_scales():
    rng = np.random.default_rng(12)
    x = (rng.standard_normal((3, 32)) * 5).astype(np.float32)
    w = rng.standard_normal((4, 32)).astype(np.float32)
    gx, gw = float(np.abs(x).max()), float(np.abs(w).max())
    want = _qqmm_reference(x, w, "nvfp4", gx, gw)
    got = mx.qqmm(mx.array(x), mx.array(w), global_scale_x=mx.array(gx),
                  global_scale_w=mx.array([gw]))
    assert_allclose(got, want, dtype=mx.float32, rtol=1e-5, atol=1e-5)
    w_q, scales = mx.quantize(mx.array(w), mode="nvfp4", global_scale=mx.array(gw))
    assert_allclose(mx.qqmm(mx.array(x), w_q, scales, global_scale_x=mx.array(gx),
                            global_scale_w=mx.array(gw)), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("x_dtype, w_dtype", [("float16", "float16"), ("bfloat16", "bfloat16"),
                                              ("float16", "float32"), ("float32", "bfloat16")])
def test_qqmm_returns_x_dtype(x_dtype, w_dtype):
    rng = np.random.default_rng(13)
    x = mx.array(rng.standard_normal((3, 32)).astype(np.float32)).astype(getattr(mx, x_dtype))
    w = mx.array(rng.standard_normal((2, 32)).astype(np.float32)).astype(getattr(mx, w_dtype))
    want = _qqmm_reference(np.asarray(x.astype(mx.float32)), np.asarray(w.astype(mx.float32)),
                           "nvfp4")
    # the product is taken in float32, then rounded once to x's dtype
    assert_allclose(mx.qqmm(x, w), want, dtype=x.dtype, rtol=1e-2, atol=1e-2)


def test_qqmm_ignores_scales_of_unquantized_weights():
    x, w = mx.ones((2, 32)), mx.full((3, 32), 3.0)
    _, scales = mx.quantize(w, mode="nvfp4")
    assert mx.array_equal(mx.qqmm(x, w, scales), mx.qqmm(x, w)).item()


def test_qqmm_rejects_bad_arguments():
    x, w = mx.ones((2, 32)), mx.ones((4, 32))
    w_q, scales = mx.quantize(w, mode="nvfp4")
    one = mx.array(1.0)
    cases = [
        (lambda: mx.qqmm(x, w, mode="affine"), ValueError,
         r"^qqmm: mode must be 'nvfp4', 'mxfp8' or 'mxfp4' .*got 'affine'"),
        (lambda: mx.qqmm(x, w, mode="foo"), ValueError, "^qqmm: mode must be .*'foo'"),
        (lambda: mx.qqmm(x, w, group_size=32), ValueError,
         "^qqmm: nvfp4 quantization requires group size 16, got 32"),
        (lambda: mx.qqmm(x, w, bits=8), ValueError, "^qqmm: nvfp4 quantization requires bits 4"),
        (lambda: mx.qqmm(x, w, group_size=16, mode="mxfp8"), ValueError,
         "^qqmm: mxfp8 quantization requires group size 32"),
        (lambda: mx.qqmm(mx.ones((2, 32), mx.int32), w), TypeError,
         "^qqmm: x must be float32, float16 or bfloat16, got int32"),
        (lambda: mx.qqmm(x.astype(mx.float64), w), TypeError, "^qqmm: x must be .*float64"),
        (lambda: mx.qqmm(x, w.astype(mx.float64)), TypeError,
         r"^qqmm: w must be float32, float16 or bfloat16 \(or uint32 when quantized\), got "
         "float64"),
        (lambda: mx.qqmm(x, mx.ones((4, 32), mx.uint8)), TypeError, "^qqmm: w must be .*uint8"),
        (lambda: mx.qqmm(x, w_q), ValueError,
         r"^qqmm: scales must be given with quantized \(uint32\) weights"),
        (lambda: mx.qqmm(x, w_q, scales.astype(mx.float32)), TypeError,
         "^qqmm: nvfp4 weights must be uint32 and scales uint8, got uint32 and float32"),
        (lambda: mx.qqmm(x, w_q, scales[:, :1]), ValueError,
         r"^qqmm: nvfp4 scales must be \[..., 2\] for weights of shape \(4, 4\), got \(4, 1\)"),
        (lambda: mx.qqmm(x, *mx.quantize(w, mode="mxfp8")), ValueError,
         r"^qqmm: nvfp4 scales must be \[..., 4\] for weights of shape \(4, 8\)"),
        (lambda: mx.qqmm(mx.ones((2, 64)), w), ValueError,
         r"^qqmm: the last axis of x \(shape \(2, 64\)\) must match the 32 columns of w "
         r"\(shape \(4, 32\)\)"),
        (lambda: mx.qqmm(mx.ones((2, 64)), w_q, scales), ValueError,
         r"^qqmm: the last axis of x .* the 32 columns of w \(shape \(4, 4\), packed\)"),
        (lambda: mx.qqmm(mx.array(1.0), w), ValueError, r"^qqmm: the last axis of x \(shape \(\)"),
        (lambda: mx.qqmm(mx.ones((2, 24)), mx.ones((4, 24))), ValueError,
         "^qqmm: the 24 columns of x and w must be a multiple of the nvfp4 group size 16"),
        (lambda: mx.qqmm(x, mx.ones((3, 4, 32))), ValueError,
         r"^qqmm: w must be 2-D, got shape \(3, 4, 32\)"),
        (lambda: mx.qqmm(x, mx.ones((32,))), ValueError,
         r"^qqmm: w must have at least 2 dimensions, got shape \(32,\)"),
        (lambda: mx.qqmm(x, w, global_scale_x=one), ValueError,
         "^qqmm: nvfp4 takes both global_scale_x and global_scale_w, or neither"),
        (lambda: mx.qqmm(x, w, mode="mxfp8", global_scale_x=one, global_scale_w=one),
         ValueError, "^qqmm: global_scale_x is only used by nvfp4 quantization, not mxfp8"),
        (lambda: mx.qqmm(x, w, global_scale_x=mx.array([1.0, 2.0]), global_scale_w=one),
         ValueError, r"^qqmm: global_scale_x must hold one value, got shape \(2,\)"),
        (lambda: mx.qqmm(x, w, global_scale_x=one, global_scale_w=mx.array(1)), TypeError,
         "^qqmm: global_scale_w must be float32, got int32"),
        (lambda: mx.quantize(w, mode="nvfp4", global_scale=mx.array(2.0, mx.float16)), TypeError,
         "^quantize: global_scale must be float32, got float16"),
    ]
    for call, kind, message in cases:
        with pytest.raises(kind, match=message):
            call()


def _vjp_reference(x, w, c, mode, global_scales=False):
    """MLX's rule: the cotangent is quantized along each product's contracted axis too."""
    gc = float(np.abs(c).max()) if global_scales else None
    gx = float(np.abs(x).max()) if global_scales else None
    gw = float(np.abs(w).max()) if global_scales else None
    dx = _rounded_reference(c, mode, gc) @ _rounded_reference(w.T, mode, gw).T
    rows_x, rows_c = x.reshape(-1, x.shape[-1]), c.reshape(-1, c.shape[-1])
    dw = _rounded_reference(rows_c.T, mode, gc) @ _rounded_reference(rows_x.T, mode, gx).T
    return dx, dw


@pytest.mark.parametrize("mode, global_scales", [("nvfp4", False), ("nvfp4", True),
                                                  ("mxfp8", False)])
def test_qqmm_vjp_quantizes_the_cotangent_as_mlx(mode, global_scales):
    # N = 20 and 15 rows are not whole groups: those axes are zero-padded
    rng = np.random.default_rng(14)
    x = rng.standard_normal((3, 5, 32)).astype(np.float32)
    w = rng.standard_normal((20, 32)).astype(np.float32)
    c = rng.standard_normal((3, 5, 20)).astype(np.float32)
    scales = {}
    if global_scales:
        scales = dict(global_scale_x=mx.array(float(np.abs(x).max())),
                      global_scale_w=mx.array(float(np.abs(w).max())))
    _, (dx, dw) = mx.vjp(lambda a, b: mx.qqmm(a, b, mode=mode, **scales),
                         [mx.array(x), mx.array(w)], [mx.array(c)])
    want_dx, want_dw = _vjp_reference(x, w, c, mode, global_scales)
    assert_allclose(dx, want_dx, dtype=mx.float32, rtol=1e-5, atol=1e-4)
    assert_allclose(dw, want_dw, dtype=mx.float32, rtol=1e-5, atol=1e-4)
    grads = mx.grad(lambda a, b: (mx.qqmm(a, b, mode=mode, **scales) * mx.array(c)).sum(),
                    argnums=(0, 1))(mx.array(x), mx.array(w))
    assert all(mx.array_equal(g, v).item() for g, v in zip(grads, (dx, dw)))


def test_qqmm_gradients_of_quantized_weights_and_of_half_inputs():
    rng = np.random.default_rng(15)
    x = rng.standard_normal((4, 32)).astype(np.float32)
    w = rng.standard_normal((16, 32)).astype(np.float32)
    w_q, scales = mx.quantize(mx.array(w), mode="nvfp4")
    # x's gradient through packed weights: their values, quantized along N
    dx = mx.grad(lambda a: mx.qqmm(a, w_q, scales).sum())(mx.array(x))
    weights = np.asarray(mx.dequantize(w_q, scales, mode="nvfp4", dtype=mx.float32))
    want = _rounded_reference(np.ones((4, 16)), "nvfp4") @ _rounded_reference(
        weights.T, "nvfp4").T
    assert_allclose(dx, want, dtype=mx.float32, rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="^grad: cannot differentiate with respect to an array "
                                        "of uint32"):
        mx.grad(lambda b: mx.qqmm(mx.array(x), b, scales).sum())(w_q)
    half = mx.grad(lambda a, b: mx.qqmm(a, b).sum(), argnums=(0, 1))(
        mx.array(x).astype(mx.bfloat16), mx.array(w).astype(mx.float16))
    assert (half[0].dtype, half[1].dtype) == (mx.bfloat16, mx.float16)


def test_qqmm_jvp_is_the_quantized_product_of_the_tangents():
    rng = np.random.default_rng(16)
    x, w, tx, tw = (mx.array(rng.standard_normal(s).astype(np.float32))
                    for s in ((3, 32), (4, 32), (3, 32), (4, 32)))
    _, (t,) = mx.jvp(lambda a, b: mx.qqmm(a, b, mode="mxfp8"), [x, w], [tx, tw])
    want = (_qqmm_reference(np.asarray(tx), np.asarray(w), "mxfp8")
            + _qqmm_reference(np.asarray(x), np.asarray(tw), "mxfp8"))
    assert_allclose(t, want, dtype=mx.float32, rtol=1e-5, atol=1e-4)


def test_qqmm_keeps_its_rules_under_vmap():
    # vmap records qqmm nodes again, so gradients of a vmapped qqmm are MLX's rule's
    rng = np.random.default_rng(17)
    x = mx.array(rng.standard_normal((3, 2, 32)).astype(np.float32))
    w = mx.array(rng.standard_normal((3, 16, 32)).astype(np.float32))

    def batched(a, b):
        return mx.vmap(lambda p, q: mx.qqmm(p, q))(a, b).sum()

    def looped(a, b):
        return sum(mx.qqmm(a[i], b[i]).sum() for i in range(3))

    for got, want in zip(mx.grad(batched, argnums=(0, 1))(x, w),
                         mx.grad(looped, argnums=(0, 1))(x, w)):
        assert_allclose(got, np.asarray(want), rtol=1e-6, atol=1e-6)


def test_gather_qqmm_is_qqmm_of_the_gathered_matrices():
    rng = np.random.default_rng(18)
    x = mx.array(rng.standard_normal((3, 2, 32)).astype(np.float32))
    w = mx.array(rng.standard_normal((4, 5, 32)).astype(np.float32))
    w_q, scales = mx.quantize(w, mode="mxfp8")
    lhs, rhs = mx.array([[0], [2]]), mx.array([[3, -4, 1]])
    got = mx.gather_qqmm(x, w, lhs_indices=lhs, rhs_indices=rhs, sorted_indices=True)
    packed = mx.gather_qqmm(x, w_q, scales, lhs, rhs, mode="mxfp8")
    assert got.shape == packed.shape == (2, 3, 2, 5)
    for i, j in np.ndindex(2, 3):
        a, b = int(np.asarray(lhs)[i, 0]), int(np.asarray(rhs)[0, j]) % 4
        assert mx.array_equal(got[i, j], mx.qqmm(x[a], w[b])).item()
        assert mx.array_equal(packed[i, j], mx.qqmm(x[a], w_q[b], scales[b], mode="mxfp8")).item()
    # no indices: every batch entry, which must then agree
    assert mx.array_equal(mx.gather_qqmm(x, w[:3]), mx.stack([mx.qqmm(x[i], w[i])
                                                              for i in range(3)])).item()
    assert mx.gather_qqmm(mx.ones((1, 32)), w, rhs_indices=mx.array([2, 0])).shape == (2, 1, 5)
    dx, dw = mx.grad(lambda a, b: mx.gather_qqmm(a, b, rhs_indices=mx.array([1, 1])).sum(),
                     argnums=(0, 1))(x[:2], w)
    assert dx.shape == (2, 2, 32) and np.abs(np.asarray(dw)[[0, 2, 3]]).max() == 0
    assert np.abs(np.asarray(dw)[1]).max() > 0


def test_gather_qqmm_rejects_bad_arguments():
    x, w = mx.ones((2, 1, 32)), mx.ones((3, 4, 32))
    cases = [
        (lambda: mx.gather_qqmm(mx.ones((32,)), w, rhs_indices=mx.array([0])), ValueError,
         r"^gather_qqmm: x must have at least 2 dimensions, got shape \(32,\)"),
        (lambda: mx.gather_qqmm(x, w, rhs_indices=mx.array([2.0, 0.0])), TypeError,
         "^gather_qqmm: indices must be integers, got float32"),
        (lambda: mx.gather_qqmm(x, w), ValueError, "^gather_qqmm: "),
        (lambda: mx.gather_qqmm(x, w, lhs_indices=mx.array([0, 1]),
                                rhs_indices=mx.array([2, 0, 1])), ValueError, "^gather_qqmm: "),
        (lambda: mx.gather_qqmm(x, w, rhs_indices=mx.array([0]), mode="affine"), ValueError,
         "^gather_qqmm: mode must be"),
        (lambda: mx.gather_qqmm(x, mx.ones((3, 4, 4), mx.uint32), rhs_indices=mx.array([0])),
         ValueError, "^gather_qqmm: scales must be given"),
        (lambda: mx.gather_qqmm(mx.ones((2, 1, 32), mx.int32), w, rhs_indices=mx.array([0])),
         TypeError, "^gather_qqmm: x must be float32"),
    ]
    for call, kind, message in cases:
        with pytest.raises(kind, match=message):
            call()


@pytest.mark.parametrize("call, message", [
    (lambda: mx.quantize(mx.ones((4, 64)), bits=2.0), r"^quantize: bits must be an int, got 2.0"),
    (lambda: mx.quantize(mx.ones((4, 64)), group_size=64.0),
     r"^quantize: group_size must be an int, got 64.0"),
    (lambda: mx.dequantize(*mx.quantize(mx.ones((4, 64))), bits=3.0),
     r"^dequantize: bits must be an int, got 3.0"),
    (lambda: mx.quantize(mx.ones((4, 64)), mode="mxfp4", bits=4.0),
     r"^quantize: bits must be an int, got 4.0"),
])
def test_float_group_size_and_bits_are_refused_at_the_call(call, message):
    with pytest.raises(TypeError, match=message):
        call()


@pytest.mark.parametrize("dtype", [mx.int8, mx.bool_, mx.uint64, mx.complex64],
                         ids=lambda d: d.name)
def test_dequantize_to_a_non_floating_dtype_is_refused(dtype):
    packed = mx.quantize(mx.ones((2, 64)))
    # MLX: "Only real floating types are supported" (a ValueError; DtypeError is both)
    with pytest.raises((TypeError, ValueError),
                       match=f"^dequantize: dtype must be a real floating type, got {dtype.name}"):
        mx.dequantize(*packed, dtype=dtype)
