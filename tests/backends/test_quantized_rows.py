"""`quantized_matmul` of a few float32 rows from the packed 4- and 8-bit weights
(`nuvec/backends/numpy/quantized.c`): against the float64 product with the dequantized
weights, the same bits on one thread as on two, and the dequantizing path beyond `FEW_ROWS`."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from helpers import has_avx512
from nuvec.backends import native
from nuvec.backends.numpy import quantized as qz
from nuvec.testing import assert_allclose


def _case(rng, n, k, group_size, bits, scale=1.0):
    w = mx.array(rng.standard_normal((n, k)).astype(np.float32) * scale)
    w_q, s, b = mx.quantize(w, group_size, bits)
    dense = np.asarray(mx.dequantize(w_q, mx.astype(s, mx.float64), mx.astype(b, mx.float64),
                                     group_size, bits))
    return w_q, s, b, dense


def test_the_kernel_is_built_where_the_machine_hashas_avx512():
    built = native.compiler() is not None and has_avx512()
    assert (native.bound(qz._SOURCE, qz._bind) is not None) == built


@pytest.mark.parametrize("rows", [1, 7, 8, 9, 16, 17, 32, 40])
@pytest.mark.parametrize("bits,group_size", [(4, 32), (4, 64), (4, 128), (8, 32), (8, 128)])
def test_few_rows_match_the_dequantized_product(rows, bits, group_size):
    """Rows of x in passes of 8 (1 to 32), and beyond `FEW_ROWS` the dequantizing path; weight
    rows split over the thread pool."""
    rng = np.random.default_rng(rows * bits + group_size)
    w_q, s, b, dense = _case(rng, 300, 256, group_size, bits)
    x = rng.standard_normal((rows, 256)).astype(np.float32)
    out = mx.quantized_matmul(mx.array(x), w_q, s, b, True, group_size, bits)
    assert_allclose(out, x.astype(np.float64) @ dense.T, dtype=mx.float32, rtol=1e-5,
                    atol=1e-5 * np.abs(x @ dense.T).max())


def test_one_thread_gives_the_numbers_of_two(num_threads):
    rng = np.random.default_rng(3)
    w_q, s, b, _ = _case(rng, 4096, 512, 64, 4, scale=30.0)
    x = mx.array(rng.standard_normal((3, 512)).astype(np.float32))
    results = []
    for n in (1, 2):
        num_threads(n)
        results.append(np.asarray(mx.quantized_matmul(x, w_q, s, b, True, 64, 4)))
    assert np.array_equal(results[0], results[1])


def test_the_packed_product_takes_only_what_it_computes():
    """float32 rows up to `FEW_ROWS`, 2-D weights, `transpose`, 4 or 8 bits, groups of a
    multiple of 32: anything else returns None (the caller dequantizes)."""
    class P:
        bits, group_size, transpose = 4, 32, True

    rng = np.random.default_rng(4)
    w_q, s, b, dense = (np.asarray(a) for a in _case(rng, 8, 64, 32, 4))
    x = rng.standard_normal((2, 64)).astype(np.float32)
    if native.bound(qz._SOURCE, qz._bind) is not None:
        np.testing.assert_allclose(qz._packed_product(P, x, w_q, s, b), x @ dense.T, rtol=1e-5,
                                   atol=1e-5)
    assert qz._packed_product(P, x.astype(np.float64), w_q, s, b) is None
    assert qz._packed_product(P, np.zeros((qz.FEW_ROWS + 1, 64), np.float32), w_q, s, b) is None
    assert qz._packed_product(P, x, w_q[None], s[None], b[None]) is None
    P.transpose = False
    assert qz._packed_product(P, x, w_q, s, b) is None
