"""The gathered-matmul kernels (`gather_mm.cu`) in the emulator: gather_mm and gather_qmm
against their fallback graphs, quantized_matmul against a float64 formula."""

import numpy as np
import pytest
from kernel_checks import DTYPES, TOL, check, emulate, random

import nuvec as mx
from nuvec.backends.cuda.launchers import LAUNCHERS, gather
from nuvec.fast.gather import GatherMm, GatherQmm
from nuvec.ops.quantized import QuantizedMatmul

DT = list(DTYPES)


def offsets(rhs, experts):
    """Where each weight batch's rows start (the count of smaller indices), int32."""
    return np.array([(rhs < e).sum() for e in range(experts)], np.int32)


def indices(values):
    return np.array(values, np.uint32)


def quantized(shape, group, bits, dtype, seed=3):
    """Packed weights with scales and biases in `dtype`."""
    w, s, b = mx.quantize(mx.array(random(shape, "float32", seed)), group, bits)
    return np.asarray(w), np.asarray(s).astype(DTYPES[dtype]), np.asarray(b).astype(DTYPES[dtype])


# (rhs indices, experts): empty segments (1 and 3), one expert, segments longer than 16 rows
# (tiles of 64 rows), indices not sorted under the sorted hint.
SEGMENTS = [
    ([0, 0, 2, 2, 2, 4, 4, 4], 5),
    ([0] * 5, 1),
    ([0] * 20 + [1] * 30, 2),
    ([3, 0, 2, 0, 1, 3], 4),
]


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("case", range(len(SEGMENTS)))
def test_gather_mm_segments(dtype, case):
    rhs, experts = SEGMENTS[case]
    rhs = indices(rhs)
    lhs = indices(np.random.default_rng(case).integers(0, 6, rhs.size))
    x, w = random((6, 1, 48), dtype), random((experts, 48, 72), dtype, 1)
    check(GatherMm(), x, w, lhs, rhs, offsets(rhs, experts))


# (a, b, lhs, rhs): several rows per product, K neither a multiple of 8 nor of the 32-wide
# step, N past one 64-column tile, more than 16 rows (tiles of 64 rows).
BATCHED = [
    ((3, 5, 40), (4, 40, 70), [0, 2, 1, 1], [3, 0, 1, 3]),
    ((2, 3, 37), (3, 37, 9), [[1, 0], [0, 1]], [[2, 2], [0, 1]]),
    ((2, 20, 16), (2, 16, 8), [1, 0, 1], [0, 1, 1]),
]


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("case", range(len(BATCHED)))
def test_gather_mm_without_offsets(dtype, case):
    a_shape, b_shape, lhs, rhs = BATCHED[case]
    check(GatherMm(), random(a_shape, dtype), random(b_shape, dtype, 1), indices(lhs),
          indices(rhs))


# Every bit width with each group size and both layouts across the dtypes.
QUANT = [(bits, group, transpose, DT[i % 3])
         for i, (bits, group, transpose) in enumerate(
             (bits, group, transpose) for bits in (1, 2, 3, 4, 5, 6, 8) for group in (32, 64, 128)
             for transpose in (True, False) if (bits + group // 32 + transpose) % 2 == 0)]


@pytest.mark.parametrize("bits, group, transpose, dtype", QUANT)
def test_gather_qmm(bits, group, transpose, dtype):
    k, n = 128, 40 if transpose else 128
    w, s, b = quantized((3, n, k) if transpose else (3, k, n), group, bits, dtype)
    x = random((2, 3, k), dtype)
    check(GatherQmm(group, bits, transpose), x, w, s, b, indices([0, 1, 1]), indices([2, 0, 2]))


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("transpose", [True, False])
def test_gather_qmm_segments(dtype, transpose):
    rhs = indices([0, 0, 2, 2, 2, 1, 3])  # one row out of order under the hint
    k, n = 64, 32
    w, s, b = quantized((4, n, k) if transpose else (4, k, n), 32, 4, dtype)
    x = random((5, 1, k), dtype)
    lhs = indices([4, 0, 1, 3, 2, 2, 0])
    check(GatherQmm(32, 4, transpose), x, w, s, b, lhs, rhs, offsets(rhs, 4))


def dequantized(w, scales, biases, group, bits):
    """`scales * q + biases` in float64 from the little-endian bit stream of each row."""
    stream = np.unpackbits(w.astype("<u4").view(np.uint8), axis=-1, bitorder="little")
    stream = stream.reshape(*w.shape[:-1], -1, bits).astype(np.int64)
    codes = (stream << np.arange(bits)).sum(axis=-1).astype(np.float64)
    per_group = codes.reshape(*scales.shape, group)
    out = per_group * scales.astype(np.float64)[..., None] + biases.astype(np.float64)[..., None]
    return out.reshape(codes.shape)


@pytest.mark.parametrize("x_shape, w_batch", [((64,), ()), ((2, 3, 64), ()), ((2, 3, 64), (2,)),
                                              ((3, 20, 64), (3,))])
@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("dtype", DT)
def test_quantized_matmul(x_shape, w_batch, transpose, dtype):
    group, bits = (64, 4) if transpose else (32, 3)
    shape = (*w_batch, 24, 64) if transpose else (*w_batch, 64, 32)
    w, s, b = quantized(shape, group, bits, dtype)
    x = random(x_shape, dtype)
    (got,) = emulate(QuantizedMatmul(group, bits, transpose), x, w, s, b)
    weights = dequantized(w, s, b, group, bits)
    want = x.astype(np.float64) @ (np.swapaxes(weights, -1, -2) if transpose else weights)
    assert got.shape == want.shape and got.dtype == x.dtype
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol,
                               atol=atol * max(np.abs(want).max(), 1.0))


def test_empty_products_and_launcher_table():
    x, w = random((2, 0, 8), "float32"), random((3, 8, 5), "float32")
    (out,) = emulate(GatherMm(), x, w, indices([1, 0]), indices([2, 2]))
    assert out.shape == (2, 0, 5)
    for cls, launcher in ((GatherMm, gather.gather_mm), (GatherQmm, gather.gather_qmm),
                          (QuantizedMatmul, gather.quantized_matmul)):
        assert LAUNCHERS[cls] is launcher


class Shaped:
    def __init__(self, *shape):
        self.shape = shape


def test_takes_sends_outputs_past_32_bit_offsets_to_the_fallback():
    x, w, i = Shaped(4, 1, 4096), Shaped(8, 4096, 1 << 18), Shaped(1 << 14)
    assert not gather.takes(GatherMm(), [x, w, i, i])
    assert gather.takes(GatherMm(), [x, w, Shaped(16), Shaped(16)])
    q = QuantizedMatmul(64, 4, True)
    assert not gather.takes(q, [Shaped(1 << 17, 4096), Shaped(1 << 15, 512)])
    assert gather.takes(q, [Shaped(16, 4096), Shaped(1 << 15, 512)])


def test_takes_keeps_the_grid_within_cuda_limits():
    # 2^22 columns are 65536 column tiles; 2^31 one-row products are 2^31 row tiles
    assert not gather.takes(GatherMm(), [Shaped(4, 1, 8), Shaped(2, 8, 1 << 22), Shaped(16),
                                         Shaped(16)])
    assert gather.takes(GatherMm(), [Shaped(4, 1, 8), Shaped(2, 8, 1 << 21), Shaped(16),
                                     Shaped(16)])
    assert not gather.takes(GatherMm(), [Shaped(4, 1, 8), Shaped(2, 8, 1), Shaped(1 << 31),
                                         Shaped(1 << 31)])
