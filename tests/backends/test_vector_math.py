"""`exp` and `tanh` through MKL's vector math (`nuvec.backends.vector_math`): which arrays take
VML (with a stand-in for VML, so the rules are checked without MKL), that every element's bits
depend on its own value only (any split of an array gives the same bits), and, where MKL is
installed, VML's accuracy and the kernels built on it against float64."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import subprocess
import sys

import numpy as np
import pytest

import nuvec as mx
from nuvec.backends import vector_math as vm

_REAL = {np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double}


class FakeVml:
    """VML's calling convention, computing `exp` in float64 (so its float32 bits can differ
    from NumPy's) and recording the sizes it was called on."""

    def __init__(self):
        self.calls: list[int] = []

    def function(self, name, dtype):
        real = _REAL[np.dtype(dtype)]

        def call(n, src, dst):
            self.calls.append(n)
            a = np.ctypeslib.as_array((real * n).from_address(src))
            b = np.ctypeslib.as_array((real * n).from_address(dst))
            b[...] = getattr(np, name)(a.astype(np.float64)).astype(a.dtype)

        return call

    def table(self):
        return {(name, np.dtype(d)): self.function(name, d)
                for name in ("exp", "tanh") for d in (np.float32, np.float64)}


@pytest.fixture
def fake(monkeypatch):
    vml = FakeVml()
    monkeypatch.setattr(vm, "_library", lambda: vm._Library(vml.table(), ranged=True))
    return vml


def _fake_exp(x):
    return np.exp(x.astype(np.float64)).astype(x.dtype)


def test_contiguous_float_arrays_from_min_elements_take_vml(fake):
    n = vm.MIN_ELEMENTS
    x = np.linspace(-5, 5, n, dtype=np.float32)
    np.testing.assert_array_equal(vm.exp(x), _fake_exp(x))
    assert fake.calls == [n]
    np.testing.assert_array_equal(vm.tanh(x.astype(np.float64)), np.tanh(x.astype(np.float64)))
    fake.calls.clear()
    small = x[: n - 1].copy()
    np.testing.assert_array_equal(vm.exp(small), np.exp(small))  # small: NumPy's
    assert fake.calls == []
    vm.exp(x[:10])  # a piece of a larger array: the larger array's path
    assert fake.calls == [10]


def test_other_layouts_dtypes_and_outs_go_to_numpy(fake):
    n = 4 * vm.MIN_ELEMENTS
    cases = (
        lambda x: (x[::2], None),  # strided
        lambda x: (x.astype(np.float16), None),
        lambda x: (x.astype(np.complex64), None),
        lambda x: (x, np.empty(n, np.float64)),  # another dtype
        lambda x: (x[:-1], x[1:]),  # overlapping
        lambda x: (x.reshape(2, -1), np.empty((2, n // 2), np.float32, order="F")),  # strides
    )
    for case in cases:
        arg, out = case(np.linspace(-5, 5, n, dtype=np.float32))
        want = np.exp(arg)
        np.testing.assert_array_equal(vm.exp(arg, out), want)
    assert fake.calls == []


def test_fortran_order_and_in_place(fake):
    x = np.asfortranarray(np.linspace(-3, 3, vm.MIN_ELEMENTS * 2).reshape(128, -1))
    y = vm.exp(x)
    assert y.flags.f_contiguous
    np.testing.assert_array_equal(y, _fake_exp(x))
    z = x.copy(order="F")
    assert vm.exp(z, z) is z
    np.testing.assert_array_equal(z, y)


def _mixed(dtype, n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-20, 20, n).astype(dtype)
    specials = np.array([-np.inf, np.inf, np.nan, 100.0, 1e30, -95.0, -90.0, -103.0, -105.0,
                         -1e30, -3.4e38, 88.5, -87.5], dtype)
    x[rng.integers(0, n, 200)] = rng.choice(specials, 200)
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_each_element_is_vml_zero_or_numpy_by_its_own_value(fake, dtype):
    x = _mixed(dtype, 3 * vm.MIN_ELEMENTS)
    low, high = vm.EXP_RANGE[np.dtype(dtype)]
    inside = (x >= low) & (x <= high)
    zero = x < vm.EXP_ZERO[np.dtype(dtype)]
    with np.errstate(over="ignore"):
        want = np.where(inside, _fake_exp(np.clip(x, low, high)), np.where(zero, 0, np.exp(x)))
        got = vm.exp(x)
    np.testing.assert_array_equal(got, want)  # (NaN where NaN)
    # any split, and in place, gives the same bits
    for cuts in ((1,), (5000, 5001), (17, 9000, 20000)):
        pieces = np.split(x.copy(), cuts)
        with np.errstate(over="ignore"):
            joined = np.concatenate([vm.exp(p, p) for p in pieces])
        np.testing.assert_array_equal(joined.view(np.uint8), got.view(np.uint8))


needs_vml = pytest.mark.skipif(vm.in_use() != "vml",
                               reason="MKL's VML is not in use (no mkl package, or NUVEC_MKL=0)")


@needs_vml
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["exp", "tanh"])
def test_vml_is_within_an_ulp_of_the_exact_value(name, dtype):
    x = _mixed(dtype, 1 << 16, seed=3)
    x[:1000] = np.linspace(-110, 90, 1000)  # the edges of the fast range
    with np.errstate(all="ignore"):
        got = getattr(vm, name)(x)
        exact = getattr(np, name)(x.astype(np.longdouble))
        info = np.finfo(dtype)
        vml = (np.abs(exact) >= info.tiny) & (np.abs(exact) <= info.max)
        if name == "exp":  # outside its fast range, NumPy's exp (or 0)
            low, high = vm.EXP_RANGE[np.dtype(dtype)]
            vml &= (x >= low) & (x <= high)
        ulps = np.abs(got[vml] - exact[vml]) / np.spacing(np.abs(exact[vml]).astype(dtype))
        assert float(ulps.max()) <= 1.0
        np.testing.assert_array_equal(got[~vml], getattr(np, name)(x)[~vml])


@needs_vml
def test_kernels_through_vml_match_float64_and_every_thread_count():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((64, 1024)).astype(np.float32) * 4
    x[3, :500] = -np.inf  # a masked row part: the exact path
    q, k, v = (rng.standard_normal((1, 4, 256, 64)).astype(np.float32) for _ in range(3))
    outs, saved = {}, mx.get_num_threads()
    for threads in (1, 2, 3):
        mx.set_num_threads(threads)
        try:
            xs = mx.array(x)
            outs[threads] = [np.asarray(a) for a in (
                mx.exp(xs), mx.tanh(xs), mx.softmax(xs, axis=-1), mx.logsumexp(xs, axis=-1),
                mx.sigmoid(xs),
                mx.fast.scaled_dot_product_attention(mx.array(q), mx.array(k), mx.array(v),
                                                     scale=0.125, mask="causal"))]
        finally:
            mx.set_num_threads(saved)
    for a, b in zip(outs[1], outs[3]):
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
    for a, b in zip(outs[1], outs[2]):
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(-1, keepdims=True))
    np.testing.assert_allclose(outs[1][2], e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(outs[1][0], np.exp(x64), rtol=1e-6)
    np.testing.assert_allclose(outs[1][4], 1 / (1 + np.exp(-x64)), rtol=1e-6, atol=1e-30)


@needs_vml
def test_nuvec_mkl_vml_keeps_the_vector_math_and_numpys_products():
    code = ("from nuvec.backends.numpy import mkl; from nuvec.backends import vector_math as vm;"
            "print(mkl.available(), vm.in_use() == 'vml')")
    found = {}
    for setting in ("vml", "0", "1"):
        env = {**os.environ, "NUVEC_MKL": setting}
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True)
        found[setting] = run.stdout.split()
    assert found == {"vml": ["False", "True"], "0": ["False", "False"], "1": ["True", "True"]}


@needs_vml
def test_a_forked_child_computes_with_numpy():
    x = np.linspace(-3, 3, 1 << 14, dtype=np.float32)
    assert vm.exp(x) is not None and vm.in_use() == "vml"
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        used, values = pool.apply(_child_exp, (x,))
    assert not used
    np.testing.assert_array_equal(values, np.exp(x))


def _child_exp(x):
    return vm.in_use() == "vml", vm.exp(x)
