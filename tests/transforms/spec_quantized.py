"""Rule rows for quantization: quantize (vmap), dequantize (scales and biases), quantized
products (x, scales and biases; the packed weights are integers), the gathered, masked and
segmented products (compositions) and the products quantizing their input (vmap only: their
gradients are MLX's quantized estimates, checked in tests/ops/test_quantized.py)."""

from __future__ import annotations

import numpy as np

import nuvec as mx
from nuvec.ops import microscaled, quantized
from nuvec.testing import OpSpec


def _packed(rng, rows, columns, group_size=32, bits=4):
    w = mx.array(rng.standard_normal((rows, columns)), mx.float64)
    return [np.asarray(a) for a in mx.quantize(w, group_size, bits)]


def _f32(*arrays):
    return [a.astype(mx.float32) for a in arrays]


def _qqmm_packed(rng):
    w_q, scales = mx.quantize(mx.array(rng.standard_normal((3, 32)), mx.float32), mode="mxfp8")
    return [np.asarray(w_q), np.asarray(scales)]


def _qmm_args(transpose):
    def make(rng):
        if transpose:
            return [rng.standard_normal((2, 64)), *_packed(rng, 3, 64)]
        return [rng.standard_normal((2, 5)), *_packed(rng, 5, 64)]

    return make


SPECS = [
    OpSpec("quantize", lambda w: mx.quantize(w, 32, 3),
           lambda rng: [rng.standard_normal((2, 64))], [quantized.Quantize], grad=False),
    OpSpec("dequantize", lambda w, s, b: mx.dequantize(w, s, b, 32, 4),
           lambda rng: _packed(rng, 2, 64), [quantized.Dequantize], argnums=(1, 2)),
    OpSpec("quantized_matmul", lambda x, w, s, b: mx.quantized_matmul(x, w, s, b, True, 32, 4),
           _qmm_args(True), [quantized.QuantizedMatmul], argnums=(0, 2, 3)),
    OpSpec("quantized_matmul_no_transpose",
           lambda x, w, s, b: mx.quantized_matmul(x, w, s, b, False, 32, 4),
           _qmm_args(False), [quantized.QuantizedMatmul], argnums=(0, 2, 3)),
    # x's extra batch axes (a 2-D w broadcast over them) and a 1-D x
    OpSpec("quantized_matmul_batched_x",
           lambda x, w, s, b: mx.quantized_matmul(x, w, s, b, True, 32, 4),
           lambda rng: [rng.standard_normal((2, 2, 64)), *_packed(rng, 3, 64)],
           [quantized.QuantizedMatmul], argnums=(0, 2, 3)),
    OpSpec("quantized_matmul_vector",
           lambda x, w, s, b: mx.quantized_matmul(x, w, s, b, False, 32, 4),
           lambda rng: [rng.standard_normal(5), *_packed(rng, 5, 64)],
           [quantized.QuantizedMatmul], argnums=(0, 2, 3)),
    OpSpec("gather_mm", lambda a, b, i, j: mx.gather_mm(a, b, i, j),
           lambda rng: [rng.standard_normal((3, 2, 4)), rng.standard_normal((2, 4, 3)),
                        rng.integers(0, 3, size=(2,)), rng.integers(0, 2, size=(2,))],
           [], argnums=(0, 1)),
    OpSpec("gather_qmm", lambda x, w, s, b: mx.gather_qmm(
               x, w, s, b, rhs_indices=mx.array([1, 0, 1]), group_size=32),
           lambda rng: [rng.standard_normal((1, 2, 32)),
                        *(np.stack(p) for p in zip(*(_packed(rng, 3, 32) for _ in range(2))))],
           [], argnums=(0, 2, 3)),
    OpSpec("block_masked_mm", lambda a, b: mx.block_masked_mm(
               a, b, 32, mask_out=mx.array([[True], [False]]),
               mask_lhs=mx.array([[1.0, 0.5], [2.0, 1.0]]), mask_rhs=mx.array([[True], [False]])),
           lambda rng: [rng.standard_normal((40, 34)), rng.standard_normal((34, 3))],
           [], argnums=(0, 1)),
    OpSpec("segmented_mm", lambda a, b: mx.segmented_mm(a, b, mx.array([[0, 2], [1, 5], [3, 3]])),
           lambda rng: [rng.standard_normal((2, 5)), rng.standard_normal((5, 3))],
           [], argnums=(0, 1)),
    OpSpec("qqmm", lambda x, w: mx.qqmm(*_f32(x, w)),
           lambda rng: [rng.standard_normal((2, 32)), rng.standard_normal((3, 32))],
           [microscaled.QQMatmul], grad=False),
    OpSpec("qqmm_vector_packed", lambda x, w, s: mx.qqmm(*_f32(x), w, s, mode="mxfp8"),
           lambda rng: [rng.standard_normal(32), *_qqmm_packed(rng)],
           [microscaled.QQMatmul], grad=False),
    # one global scale per batch entry: a product per entry
    OpSpec("qqmm_global_scales",
           lambda x, w, gx, gw: mx.qqmm(*_f32(x, w), global_scale_x=_f32(gx)[0],
                                        global_scale_w=_f32(gw)[0]),
           lambda rng: [rng.standard_normal((2, 32)), rng.standard_normal((3, 32)),
                        rng.uniform(2, 4, ()), rng.uniform(2, 4, ())],
           [microscaled.QQMatmul], grad=False),
    OpSpec("gather_qqmm", lambda x, w: mx.gather_qqmm(*_f32(x, w), mode="mxfp8",
                                                     rhs_indices=mx.array([1, 0, 1])),
           lambda rng: [rng.standard_normal((1, 2, 32)), rng.standard_normal((2, 3, 32))],
           [], grad=False),
]
