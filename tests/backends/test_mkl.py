"""The MKL products (`nuvec.backends.numpy.mkl`): the layouts CBLAS reads in place, and, where
the `mkl` package is installed, `Matmul` and `Addmm` through MKL against float64 NumPy."""

from __future__ import annotations

import multiprocessing
import os

import numpy as np
import pytest

import nuvec as mx
from nuvec.backends.numpy import mkl

needs_mkl = pytest.mark.skipif(not mkl.available(),
                               reason="MKL is not in use (no mkl package, or NUVEC_MKL=0)")


def test_layout_names_rows_or_columns_contiguous():
    a = np.zeros((6, 5), np.float32)
    assert mkl.layout(a) == (111, 5)
    assert mkl.layout(a.T) == (112, 5)
    assert mkl.layout(a[:, :3]) == (111, 5)  # a leading dimension longer than a row
    assert mkl.layout(a[:4].T) == (112, 5)
    assert mkl.layout(np.zeros((1, 5), np.float64)) == (111, 5)
    assert mkl.layout(np.zeros((5, 1), np.float64)) == (111, 1)


def test_layout_refuses_what_cblas_cannot_read():
    a = np.zeros((6, 5), np.float32)
    assert mkl.layout(a[:, ::2]) is None  # neither rows nor columns contiguous
    assert mkl.layout(a[::-1]) is None  # a negative stride
    assert mkl.layout(np.lib.stride_tricks.as_strided(a, (6, 5), (0, 4))) is None  # broadcast


def test_small_products_and_other_ranks_are_not_taken():
    small = np.ones((8, 8), np.float32)
    assert mkl.matmul(small, small) is None  # under MIN_WORK
    big = np.ones((64, 64, 64), np.float32)
    assert mkl.matmul(big, big) is None  # batched: NumPy's matmul
    assert mkl.matmul(big.transpose(1, 0, 2), big[0]) is None  # rows not one matrix
    half = np.ones((128, 128), np.float16)
    assert mkl.matmul(half, half) is None
    assert mkl.matmul(np.ones((128, 128), np.float32), np.ones((128, 128))) is None


def _operand(rng, shape, dtype, transposed):
    x = rng.standard_normal(shape[::-1] if transposed else shape).astype(dtype)
    return x.T if transposed else x


@needs_mkl
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_through_mkl_matches_float64(dtype, ta, tb):
    rng = np.random.default_rng(3)
    a = _operand(rng, (70, 130), dtype, ta)
    b = _operand(rng, (130, 90), dtype, tb)
    out = mkl.matmul(a, b)
    assert out is not None and out.dtype == dtype and out.flags.c_contiguous
    ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * np.abs(ref).max())


@needs_mkl
def test_nuvec_products_take_mkl_and_keep_addmm_the_composition(monkeypatch):
    calls = []
    take = mkl.matmul

    def counted(a, b):
        out = take(a, b)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(mkl, "matmul", counted)
    rng = np.random.default_rng(4)
    x, w, bias = (rng.standard_normal(s).astype(np.float32) for s in ((64, 96), (80, 96), (80,)))
    xs, ws, bs = mx.array(x), mx.array(w), mx.array(bias)
    product = np.asarray(xs @ ws.T)
    fused = np.asarray(mx.addmm(bs, xs, ws.T, alpha=0.5, beta=2.0))
    assert calls == [True, True]
    ref = x.astype(np.float64) @ w.T.astype(np.float64)
    np.testing.assert_allclose(product, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    np.testing.assert_array_equal(fused, product * np.float32(0.5) + bias * np.float32(2.0))


@needs_mkl
def test_products_mkl_cannot_read_fall_back_to_numpy(monkeypatch):
    calls = []
    take = mkl.matmul
    monkeypatch.setattr(mkl, "matmul", lambda a, b: calls.append(take(a, b)))  # always None
    rng = np.random.default_rng(5)
    a = rng.standard_normal((100, 200)).astype(np.float32)
    b = rng.standard_normal((100, 120)).astype(np.float32)
    out = np.asarray(mx.array(a)[:, ::2] @ mx.array(b))  # a strided view: NumPy's matmul
    assert calls == [None]
    np.testing.assert_allclose(out, a[:, ::2].astype(np.float64) @ b, rtol=1e-5, atol=1e-4)


@needs_mkl
def test_a_linear_layers_rows_are_one_product():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 40, 64)).astype(np.float32)
    w = rng.standard_normal((96, 64)).astype(np.float32)
    out = mkl.matmul(x, w.T)
    assert out is not None and out.shape == (3, 40, 96)
    ref = x.astype(np.float64) @ w.T.astype(np.float64)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def _product_in_child(a, queue):
    queue.put(np.asarray(mx.array(a) @ mx.array(a)))


@needs_mkl
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_computes_its_products_without_mkl():
    a = np.random.default_rng(7).standard_normal((256, 256)).astype(np.float32)
    before = np.asarray(mx.array(a) @ mx.array(a))  # MKL's threads started in the parent
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_product_in_child, args=(a, queue))
    child.start()
    try:  # read before joining: the child's put waits for the pipe to drain
        product = queue.get(timeout=60)  # GNU OpenMP's threads, used after a fork, would hang
    finally:
        child.join(10)
        if child.exitcode is None:
            child.kill()
    assert child.exitcode == 0
    np.testing.assert_allclose(product, before, rtol=1e-4, atol=1e-3)
