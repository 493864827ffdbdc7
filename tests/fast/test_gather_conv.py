"""Gathered (quantized) matrix products and the depthwise conv1d as fused ops."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from fast_refs import DTYPE_IDS, DTYPES, close, nodes, sample
from nuvec.fast.conv import DepthwiseConv1d, depthwise_conv1d
from nuvec.fast.gather import GatherMm, GatherQmm, gather_mm_node, gather_qmm_node
from nuvec.graph.array import record
from nuvec.testing import assert_allclose

CPU = mx.default_stream(mx.cpu)
TOL = {"float16": (5e-3, 5e-3), "bfloat16": (3e-2, 3e-2)}


def _u32(values):
    return mx.array(np.asarray(values, np.uint32))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_gather_mm(dtype):
    rng = np.random.default_rng(0)
    a, ar = sample(rng, (3, 2, 4), dtype)
    b, br = sample(rng, (2, 2, 4, 5), dtype)
    lhs, rhs = np.array([[2, 0], [1, 1]]), np.array([[3, 0], [1, 2]])
    y = gather_mm_node(a, b, _u32(lhs), _u32(rhs))
    want = ar[lhs] @ br.reshape(4, 4, 5)[rhs]
    close(y, want, dtype, TOL)


def test_gather_mm_with_sorted_row_offsets(fake_gpu):
    rng = np.random.default_rng(1)
    a, ar = sample(rng, (4, 1, 3), mx.float32)
    b, br = sample(rng, (3, 3, 2), mx.float32)
    rhs = np.array([0, 0, 2, 2])
    with mx.stream(fake_gpu):
        y = gather_mm_node(a, b, _u32([0, 1, 2, 3]), _u32(rhs), mx.array([0, 2, 2], mx.int32))
        assert isinstance(y.primitive, GatherMm)
        # The public op records the same node, with the offsets computed from sorted indices.
        z = mx.gather_mm(a, b, mx.arange(4), mx.array(rhs, mx.int64), sorted_indices=True)
        assert isinstance(z.primitive, GatherMm)
        offsets = z._node.inputs[-1]
        assert offsets.dtype == mx.int32 and offsets.tolist() == [0, 2, 2]
        assert len(mx.gather_mm(a, b, mx.arange(4), mx.array(rhs))._node.inputs) == 4
    close(y, ar @ br[rhs], mx.float32, TOL)
    close(z, ar @ br[rhs], mx.float32, TOL)


def test_public_gather_qmm_records_the_node(fake_gpu):
    rng = np.random.default_rng(6)
    x, _ = sample(rng, (2, 1, 64), mx.float32)
    w, scales, biases = mx.quantize(mx.array(rng.standard_normal((3, 8, 64)), mx.float32))
    lhs, rhs = mx.array([1, 0]), mx.array([2, 0])
    want = mx.gather_qmm(x, w, scales, biases, lhs, rhs)
    with mx.stream(fake_gpu):
        y = mx.gather_qmm(x, w, scales, biases, lhs, rhs, sorted_indices=True)
        assert isinstance(y.primitive, GatherQmm)
    assert_allclose(y, np.asarray(want), dtype=mx.float32, rtol=1e-5, atol=1e-5)


def _unpack(w, bits):
    per = 32 // bits
    shifts = np.arange(per, dtype=np.uint32) * bits
    q = (w[..., None] >> shifts) & ((1 << bits) - 1)
    return q.reshape(*w.shape[:-1], -1).astype(np.float64)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("transpose", [True, False], ids=["t", "n"])
@pytest.mark.parametrize("bits", [1, 4])
def test_gather_qmm(dtype, transpose, bits):
    rng = np.random.default_rng(2)
    x, xr = sample(rng, (2, 1, 64), dtype)
    shape = (3, 8, 64) if transpose else (3, 64, 64)
    w, scales, biases = mx.quantize(mx.array(rng.standard_normal(shape), dtype),
                                    group_size=64, bits=bits)
    lhs, rhs = np.array([1, 0]), np.array([2, 0])
    y = gather_qmm_node(x, w, scales, biases, _u32(lhs), _u32(rhs), transpose=transpose,
                        group_size=64, bits=bits)
    q = _unpack(np.asarray(w), bits)
    s, bb = (np.asarray(a).astype(np.float64) for a in (scales, biases))
    wr = q * np.repeat(s, 64, axis=-1) + np.repeat(bb, 64, axis=-1)
    wr = wr[rhs]
    want = xr[lhs] @ (np.swapaxes(wr, -1, -2) if transpose else wr)
    # Half types dequantize each weight into their own precision before the products.
    rtol, atol = {"float16": (1e-2, 5e-2), "bfloat16": (3e-2, 2e-1)}.get(dtype.name,
                                                                          (1e-4, 1e-4))
    assert_allclose(y, want, dtype=dtype, rtol=rtol, atol=atol)


@pytest.mark.parametrize("op, inputs, message", [
    (GatherMm(), [mx.ones((4,)), mx.ones((2, 4, 3)), _u32([0]), _u32([0])],
     r"gather_mm: operands must be \[\.\.\., M, K\] and \[\.\.\., K, N\]"),
    (GatherMm(), [mx.ones((2, 2, 4)), mx.ones((2, 3, 3)), _u32([0]), _u32([0])],
     "gather_mm: invalid inputs"),
    (GatherMm(), [mx.ones((2, 2, 4)), mx.ones((2, 4, 3), mx.float16), _u32([0]), _u32([0])],
     "gather_mm: invalid inputs"),
    (GatherMm(), [mx.ones((2, 2, 4)), mx.ones((2, 4, 3)), mx.array([0]), _u32([0])],
     "gather_mm: invalid inputs"),
    (GatherMm(), [mx.ones((2, 2, 4)), mx.ones((2, 4, 3)), _u32([0, 1]), _u32([0])],
     "gather_mm: invalid inputs"),
    (GatherMm(), [mx.ones((2, 2, 4)), mx.ones((2, 4, 3)), _u32([0]), _u32([0]),
                  mx.array([0, 1], mx.int32)], "gather_mm: invalid inputs"),
    (GatherMm(), [mx.ones((2, 1, 4)), mx.ones((2, 4, 3)), _u32([0]), _u32([0]),
                  mx.array([0, 1, 2], mx.int32)], "gather_mm: invalid inputs"),
    (GatherQmm(48, 4, True), [mx.ones((2, 1, 64)), _u32(np.zeros((2, 8, 8))),
                              mx.ones((2, 8, 1)), mx.ones((2, 8, 1)), _u32([0]), _u32([0])],
     "gather_qmm: group_size must be 32, 64 or 128, got 48"),
    (GatherQmm(64, 7, True), [mx.ones((2, 1, 64)), _u32(np.zeros((2, 8, 8))),
                              mx.ones((2, 8, 1)), mx.ones((2, 8, 1)), _u32([0]), _u32([0])],
     "gather_qmm: bits must be 1, 2, 3, 4, 5, 6 or 8, got 7"),
    (GatherQmm(64, 4, False), [mx.ones((2, 1, 64)), _u32(np.zeros((2, 8, 8))),
                               mx.ones((2, 8, 1)), mx.ones((2, 8, 1)), _u32([0]), _u32([0])],
     "gather_qmm: invalid inputs"),
    (GatherQmm(64, 4, True), [mx.ones((2, 1, 64)), _u32(np.zeros((2, 8, 8))),
                              mx.ones((2, 8, 2)), mx.ones((2, 8, 2)), _u32([0]), _u32([0])],
     "gather_qmm: invalid inputs"),
    (GatherQmm(64, 4, True), [mx.ones((2, 1, 64)), _u32(np.zeros((2, 8, 8))),
                              mx.ones((2, 8, 1)), mx.ones((2, 8, 1), mx.float16), _u32([0]),
                              _u32([0])], "gather_qmm: invalid inputs"),  # biases' dtype
    (GatherQmm(64, 4, True), [mx.ones((2, 1, 64)), mx.zeros((2, 8, 8), mx.int32),
                              mx.ones((2, 8, 1)), mx.ones((2, 8, 1)), _u32([0]), _u32([0])],
     "gather_qmm: invalid inputs"),  # packed weights not uint32
    (GatherQmm(64, 4, True), [mx.ones((2, 1, 64)), _u32(np.zeros((2, 8, 8))),
                              mx.ones((3, 8, 1)), mx.ones((3, 8, 1)), _u32([0]), _u32([0])],
     "gather_qmm: invalid inputs"),  # scales of other batches
    (GatherQmm(64, 4, True), [mx.ones((2, 1, 32)), _u32(np.zeros((2, 8, 8))),
                              mx.ones((2, 8, 1)), mx.ones((2, 8, 1)), _u32([0]), _u32([0])],
     "gather_qmm: invalid inputs"),  # x's K is not the weights'
    (GatherMm(), [mx.ones((2, 1, 4)), mx.ones((2, 4, 3)), _u32([0]), _u32([0]),
                  mx.array([0, 1], mx.int64)], "gather_mm: invalid inputs"),  # offsets' dtype
    (GatherMm(), [mx.ones((2, 2, 1, 4)), mx.ones((2, 4, 3)), _u32([0]), _u32([0]),
                  mx.array([0, 1], mx.int32)], "gather_mm: invalid inputs"),  # x not 3-D
    (GatherMm(), [mx.ones((2, 1, 4)), mx.ones((2, 4, 3)), _u32([[0]]), _u32([[0]]),
                  mx.array([0, 1], mx.int32)], "gather_mm: invalid inputs"),  # rhs not 1-D
], ids=lambda v: v if isinstance(v, str) else None)
def test_a_node_built_directly_with_invalid_inputs_is_rejected(op, inputs, message):
    with pytest.raises(ValueError, match="^" + message):
        record(op, inputs, CPU)


def _conv_ref(x, w, stride, padding, dilation):
    n, length, c = x.shape
    k = w.shape[1]
    xp = np.pad(x, ((0, 0), (padding, padding), (0, 0)))
    out_len = (length + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    out = np.zeros((n, out_len, c))
    for i in range(out_len):
        for j in range(k):
            out[:, i] += xp[:, i * stride + j * dilation] * w[:, j, 0]
    return out


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("stride, padding, dilation", [(1, 0, 1), (2, 1, 1), (1, 2, 3)],
                         ids=["plain", "strided-padded", "dilated"])
def test_depthwise_conv1d(dtype, stride, padding, dilation):
    rng = np.random.default_rng(3)
    x, xr = sample(rng, (2, 9, 3), dtype)
    w, wr = sample(rng, (3, 3, 1), dtype)
    y = depthwise_conv1d(x, w, stride, padding, dilation)
    close(y, _conv_ref(xr, wr, stride, padding, dilation), dtype, TOL)


def test_depthwise_conv1d_node_on_the_gpu_stream(fake_gpu):
    rng = np.random.default_rng(4)
    x, xr = sample(rng, (1, 6, 4), mx.float32)
    w, wr = sample(rng, (4, 2, 1), mx.float32)
    with mx.stream(fake_gpu):
        y = depthwise_conv1d(x, w, 1, 1, 1)
        assert isinstance(y.primitive, DepthwiseConv1d)
    close(y, _conv_ref(xr, wr, 1, 1, 1), mx.float32, TOL)
    assert nodes(depthwise_conv1d(x, w, 1, 1, 1), DepthwiseConv1d) == 0


@pytest.mark.parametrize("op, inputs", [
    (DepthwiseConv1d(1, 0, 1), [mx.ones((1, 5, 3)), mx.ones((2, 2, 1))]),
    (DepthwiseConv1d(1, 0, 1), [mx.ones((1, 5, 3)), mx.ones((3, 2, 2))]),
    (DepthwiseConv1d(0, 0, 1), [mx.ones((1, 5, 3)), mx.ones((3, 2, 1))]),
    (DepthwiseConv1d(1, 0, 0), [mx.ones((1, 5, 3)), mx.ones((3, 2, 1))]),
    (DepthwiseConv1d(1, 0, 3), [mx.ones((1, 5, 3)), mx.ones((3, 3, 1))]),
    (DepthwiseConv1d(1, 0, 1), [mx.ones((5, 3)), mx.ones((3, 2, 1))]),
    (DepthwiseConv1d(1, 0, 1), [mx.ones((1, 5, 3)), mx.ones((3, 2, 1), mx.float16)]),
], ids=str)
def test_invalid_depthwise_nodes_are_rejected(op, inputs):
    with pytest.raises(ValueError, match="^conv1d: invalid inputs"):
        record(op, inputs, CPU)
