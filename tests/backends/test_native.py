"""The CPU's own C (`nuvec.backends.native`): the build and its fallbacks, `vector_math.c`'s
float32 `exp` against the exact value, and generated elementwise chains
(`nuvec.backends.numpy.native_fused`) bit for bit against the unfused graph and NumPy."""

from __future__ import annotations

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import nuvec as mx
from nuvec.backends import native
from nuvec.backends import threads as threads_module
from nuvec.backends import vector_math as vm
from nuvec.backends.common.unary import derivative_product
from nuvec.backends.numpy import fused, native_fused, native_norms
from nuvec.fast.fused import FusedElementwise
from nuvec.graph.array import record1
from nuvec.graph.device import to_stream
from nuvec.ops.unary import DerivativeProduct

needs_cc = pytest.mark.skipif(native.compiler() is None,
                              reason="no C compiler on the PATH: nuvec computes with NumPy")
F32, F64, BOOL = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.bool_)
DTYPES = {F32: mx.float32, F64: mx.float64, BOOL: mx.bool_}


@needs_cc
def test_a_library_builds_once_and_loads():
    source = "int twice(int x) { return 2 * x; }\n"
    lib = native.library("twice.c", source)
    assert lib.twice(21) == 42
    assert native.library("twice.c", source) is lib


@needs_cc
def test_a_failing_build_warns_and_gives_none():
    with pytest.warns(RuntimeWarning, match="broken.c failed to build"):
        assert native.library("broken.c", "int broken(void) { return }\n") is None


def test_nuvec_native_0_keeps_numpy():
    code = ("from nuvec.backends import native, vector_math as vm;"
            "print(native.compiler(), vm.in_use())")
    env = {**os.environ, "NUVEC_NATIVE": "0", "NUVEC_MKL": "0"}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert run.stdout.split() == ["None", "None"]


def test_a_broken_compiler_warns_once_and_numpy_computes():
    code = ("import warnings, numpy as np, nuvec as mx\n"
            "from nuvec.backends import vector_math as vm\n"
            "with warnings.catch_warnings(record=True) as seen:\n"
            "    warnings.simplefilter('always')\n"
            "    x = mx.array(np.linspace(-2, 2, 1 << 16, dtype=np.float32))\n"
            "    y = mx.compile(lambda a: mx.maximum(a * 2 - 1, 0))(x)\n"
            "    ok = bool((np.asarray(y) == np.maximum(np.asarray(x) * 2 - 1, 0)).all())\n"
            "    ok &= bool((np.asarray(mx.exp(x)) == np.exp(np.asarray(x))).all())\n"
            "print(ok, vm.in_use(), sum('failed to build' in str(w.message) for w in seen))\n")
    env = {**os.environ, "CC": "false", "NUVEC_MKL": "0"}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert run.stdout.split() == ["True", "None", "1"]


own_exp = pytest.mark.skipif(vm.in_use() != "c",
                             reason="float32 exp is MKL's (mkl installed) or NumPy's (no compiler)")


@own_exp
def test_exp_is_within_an_ulp_over_the_whole_range():
    x = np.concatenate([np.linspace(-104, 89, 1 << 21, dtype=np.float32),
                        np.linspace(-1, 1, 1 << 16, dtype=np.float32)])
    got = vm.exp(x).astype(np.float64)
    exact = np.exp(x.astype(np.longdouble))
    finite = exact <= np.finfo(np.float32).max
    ulp = np.spacing(exact[finite].astype(np.float32)).astype(np.float64)
    assert float((np.abs(got[finite] - exact[finite]) / ulp).max()) <= 1.0
    assert np.isinf(got[~finite]).all()


@own_exp
def test_exp_special_values():
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 88.72, 88.73, -87.34, -103.97,
                        -103.98, -104.0, -1e30, 1e30, 1e-45, -1e-45], np.float32)
    x = np.resize(special, vm.MIN_ELEMENTS)
    with np.errstate(over="ignore"):
        want = np.exp(special.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(vm.exp(x)[:special.size], want)


@own_exp
def test_exp_of_arguments_below_its_range_is_zero_and_leaves_the_others_alone():
    # a causal mask's -inf or finfo.min next to ordinary scores, in every lane of a vector
    rng = np.random.default_rng(8)
    x = rng.normal(0, 3, vm.MIN_ELEMENTS).astype(np.float32)
    hidden = rng.random(x.size) < 0.5
    low = np.array([-np.inf, np.finfo(np.float32).min, -1e30, -104.5, -104.00001], np.float32)
    masked = np.where(hidden, np.resize(low, x.size), x)
    got = vm.exp(masked)
    assert (got[hidden] == 0).all() and not np.signbit(got[hidden]).any()
    np.testing.assert_array_equal(got[~hidden], vm.exp(x)[~hidden])
    # just inside the range: subnormal results, as float64 rounds them
    edge = np.resize(np.array([-104.0, -103.97, -100.0, -95.5, -87.5], np.float32), x.size)
    np.testing.assert_array_equal(vm.exp(edge), np.exp(edge.astype(np.float64)).astype(np.float32))


@own_exp
@pytest.mark.parametrize("d", [512, 37, 1])
def test_exp_rows_gives_exps_bits_and_the_row_sums(d):
    rng = np.random.default_rng(d)
    rows = max(1, 2 * vm.MIN_ELEMENTS // d)
    x = (rng.standard_normal((rows, d + 3)) * 4).astype(np.float32)[:, :d]  # rows apart
    x[0, 0], x[1 % rows, -1] = -np.inf, np.nan
    out, sums = np.empty((rows, d), np.float32), np.empty((rows, 1), np.float32)
    assert vm.exp_rows(x, out, sums)
    np.testing.assert_array_equal(out, vm.exp(np.ascontiguousarray(x)))
    with np.errstate(invalid="ignore"):
        want = np.exp(x.astype(np.float64)).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(sums, want, rtol=1e-6)  # (NaN where NaN)
    with np.errstate(divide="ignore", invalid="ignore"):
        factors = (1 / sums).astype(np.float32)
        want_scaled = out * factors
    assert vm.scale_rows(out, factors)
    np.testing.assert_array_equal(out, want_scaled)


@own_exp
def test_exp_rows_and_scale_rows_refuse_what_they_do_not_take():
    x = np.zeros((4, vm.MIN_ELEMENTS), np.float32)
    sums = np.empty(4, np.float32)
    assert not vm.exp_rows(x.astype(np.float64), x.astype(np.float64), sums)
    assert not vm.exp_rows(x, np.empty_like(x), np.empty(3, np.float32))
    assert not vm.exp_rows(x[:, ::2], np.empty((4, vm.MIN_ELEMENTS // 2), np.float32), sums)
    assert not vm.exp_rows(x[:, :8].copy(), np.empty((4, 8), np.float32), sums)  # small
    assert not vm.scale_rows(x.astype(np.float64), sums.astype(np.float64))
    assert not vm.scale_rows(x, np.empty(5, np.float32))


@own_exp
def test_sigmoid_in_c_gives_the_bits_of_the_numpy_steps_with_its_exp():
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(3 * vm.MIN_ELEMENTS) * 20).astype(np.float32)
    x[:9] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -104.5, 88.9, -87.5]
    got = vm.sigmoid(x)
    e = vm.exp(-np.abs(x))
    want = np.maximum(e, (x >= 0).astype(np.float32)) / (e + np.float32(1))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.asarray(mx.sigmoid(mx.array(x))), want)
    # a piece of a large array takes the whole array's path; other dtypes are not taken
    np.testing.assert_array_equal(vm.sigmoid(x[:100], whole=x.size), want[:100])
    assert vm.sigmoid(x.astype(np.float64)) is None and vm.sigmoid(x[:100].copy()) is None


@own_exp
@pytest.mark.parametrize("n, shift, window", [(7, 0, None), (7, 3, None), (7, -2, 3),
                                              (5, 40, None), (5, 2, 1), (1, 0, 4)])
def test_exp_visible_masks_and_sums_a_chunk_of_scores(n, shift, window):
    """Each column `j` of a keys x stacked-rows chunk is a query row at position
    `shift + j % n`: later keys (and with a window, keys `window` or more before it) give 0,
    the others `exp` with `vm.exp`'s bits, and the sums are the columns' float64 sums."""
    rng = np.random.default_rng(n + shift)
    keys, cols = 12, 3 * n
    padded = rng.uniform(-5, 5, (keys, cols + 4)).astype(np.float32)
    s = padded[:, :cols]  # rows `cols + 4` floats apart
    x = s.copy()
    sums = np.full(cols, np.nan, np.float32)
    assert vm.exp_visible(s, n, shift, window, sums)
    position = shift + np.arange(cols) % n
    key = np.arange(keys)[:, None]
    seen = (key <= position) & ((key > position - window) if window else True)
    want = np.where(seen, vm.exp(np.resize(x, vm.MIN_ELEMENTS))[:x.size].reshape(x.shape), 0)
    np.testing.assert_array_equal(s, want)
    np.testing.assert_allclose(sums, want.astype(np.float64).sum(axis=0), rtol=1e-6)
    assert (padded[:, cols:] != 0).all()  # the padding columns untouched


@own_exp
def test_exp_visible_refuses_what_it_does_not_take():
    sums = np.empty(4, np.float32)
    assert not vm.exp_visible(np.zeros((2, 4)), 2, 0, None, sums)  # float64
    assert not vm.exp_visible(np.zeros((4, 2), np.float32).T, 2, 0, None, sums)  # columns
    assert not vm.exp_visible(np.zeros((2, 4), np.float32), 3, 0, None, sums)  # 4 % 3
    assert not vm.exp_visible(np.zeros((2, 4), np.float32), 2, 0, None, np.empty(3, np.float32))


def _fused(steps, shape):
    return FusedElementwise(tuple(steps), shape)


def _primitive(fn, *args):
    return fn(*[mx.ones(1, a) if isinstance(a, mx.Dtype) else a for a in args]).primitive


def _special(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype) * 3
    flat = x.reshape(-1)
    picks = rng.integers(0, flat.size, 64)
    flat[picks] = rng.choice(np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, 0.5, -2.5], dtype),
                             64)
    return x


def _chains():
    """(name, steps over inputs, input dtypes, NumPy formula of the inputs)."""
    f32, f64, b = mx.float32, mx.float64, mx.bool_
    add, sub = _primitive(mx.add, f32, f32), _primitive(mx.subtract, f32, f32)
    mul, div = _primitive(mx.multiply, f32, f32), _primitive(mx.divide, f32, f32)
    mx_, mn = _primitive(mx.maximum, f32, f32), _primitive(mx.minimum, f32, f32)
    neg, ab = _primitive(mx.negative, f32), _primitive(mx.abs, f32)
    sq, sqrt, rsqrt = _primitive(mx.square, f32), _primitive(mx.sqrt, f32), \
        _primitive(mx.rsqrt, f32)
    floor, ceil = _primitive(mx.floor, f32), _primitive(mx.ceil, f32)
    trunc, rint = _primitive(mx.trunc, f32), _primitive(mx.round, f32)
    gt, le = _primitive(mx.greater, f32, f32), _primitive(mx.less_equal, f32, f32)
    land, lnot = _primitive(mx.logical_and, b, b), _primitive(mx.logical_not, b)
    where = _primitive(mx.where, b, f32, f32)
    to64, to32 = _primitive(lambda x: x.astype(f64), f32), _primitive(lambda x: x.astype(f32), f64)
    tobool, fromb = _primitive(lambda x: x.astype(b), f32), _primitive(lambda x: x.astype(f32), b)
    with np.errstate(all="ignore"):
        yield ("arithmetic", [(add, (0, 1), f32), (mul, (2, 1), f32), (sub, (3, 0), f32),
                              (div, (4, 1), f32)], [F32, F32],
               lambda x, y: ((x + y) * y - x) / y)
        yield ("extrema", [(mx_, (0, 1), f32), (mn, (2, 0), f32), (mx_, (1, 3), f32)],
               [F32, F32], lambda x, y: np.maximum(y, np.minimum(np.maximum(x, y), x)))
        yield ("unary", [(neg, (0,), f32), (ab, (1,), f32), (sq, (2,), f32), (sqrt, (3,), f32),
                         (rsqrt, (0,), f32), (add, (4, 5), f32)], [F32],
               lambda x: np.sqrt(np.square(np.abs(-x))) + np.float32(1) / np.sqrt(x))
        yield ("rounding", [(floor, (0,), f32), (ceil, (0,), f32), (trunc, (1,), f32),
                            (rint, (1,), f32), (add, (2, 3), f32), (add, (4, 5), f32),
                            (add, (6, 7), f32)], [F32, F32],
               lambda x, y: (np.floor(x) + np.ceil(x)) + (np.trunc(y) + np.rint(y)))
        yield ("logic", [(gt, (0, 1), b), (le, (0, 1), b), (lnot, (3,), b), (land, (2, 4), b),
                         (where, (5, 0, 1), f32)], [F32, F32],
               lambda x, y: np.where((x > y) & ~(x <= y), x, y))
        yield ("casts", [(to64, (0,), f64), (to32, (2,), f32), (tobool, (1,), b),
                         (fromb, (4,), f32), (add, (3, 5), f32)], [F32, F32],
               lambda x, y: x.astype(np.float64).astype(np.float32) + y.astype(bool)
               .astype(np.float32))
        yield ("float64", [(add, (0, 1), f64), (mul, (2, 0), f64)], [F64, F64],
               lambda x, y: (x + y) * x)
        one = np.float32(1)
        yield ("derivatives", [(DerivativeProduct("tanh"), (0, 1), f32),
                               (DerivativeProduct("sigmoid"), (2, 1), f32),
                               (DerivativeProduct("tanh", scaled=False), (3,), f32),
                               (DerivativeProduct("sigmoid", scaled=False), (4,), f32)],
               [F32, F32], lambda g, y: (lambda a: (lambda b: (lambda c: (one - c) * c)(
                   one - b * b))(((one - y) * y) * a))((one - y * y) * g))
        yield ("relu_derivatives", [(DerivativeProduct("relu"), (0, 1), f32),
                                    (DerivativeProduct("relu", scaled=False), (1,), f32),
                                    (sub, (2, 3), f32)],
               [F32, F32], lambda g, y: g * (y > 0).astype(np.float32)
               - (y > 0).astype(np.float32))


CHAINS = list(_chains())


def _views(dtypes, shape, layout):
    """Inputs for `shape` in a layout: all full, the last one a row broadcast, a column
    broadcast (one value per row), or a strided slice of a larger array."""
    views = [_special(d, shape, seed=k) for k, d in enumerate(dtypes)]
    last = views[-1]
    if layout == "row":
        views[-1] = np.broadcast_to(last[:1], shape)
    elif layout == "column":
        views[-1] = np.broadcast_to(last[:, :1], shape)
    elif layout == "slice":
        wide = np.concatenate([last, last], axis=1)
        views[-1] = wide[:, : shape[1]]
    return views


@needs_cc
@pytest.mark.parametrize("layout", ["full", "row", "column", "slice"])
@pytest.mark.parametrize("name, steps, dtypes, formula", CHAINS, ids=[c[0] for c in CHAINS])
def test_chains_match_the_unfused_graph_and_numpy_bit_for_bit(name, steps, dtypes, formula,
                                                             layout):
    shape = (64, 1024)
    p = _fused(steps, shape)
    views = _views(dtypes, shape, layout)
    got = native_fused.run(p, views, None)
    assert got is not None and got.dtype == steps[-1][2].np and got.shape == shape
    with np.errstate(all="ignore"):
        want = np.asarray(formula(*views))
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    unfused = p.fallback([mx.array(v, DTYPES[v.dtype]) for v in views])[0]
    unfused = np.ascontiguousarray(np.asarray(unfused))
    np.testing.assert_array_equal(got.view(np.uint8), unfused.view(np.uint8))


@needs_cc
@own_exp
def test_exp_in_a_chain_is_vector_maths_exp():
    x = _special(np.float32, (64, 1024), seed=5)
    w = _special(np.float32, (1024,), seed=6)
    exp, mul = _primitive(mx.exp, mx.float32), _primitive(mx.multiply, mx.float32, mx.float32)
    p = _fused([(exp, (0,), mx.float32), (mul, (2, 1), mx.float32)], x.shape)
    got = native_fused.run(p, [x, np.broadcast_to(w, x.shape)], None)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, vm.exp(x) * w)


@needs_cc
@own_exp
def test_sigmoid_in_a_chain_is_vector_maths_sigmoid():
    x = _special(np.float32, (64, 1024), seed=7)
    sig, mul = _primitive(mx.sigmoid, mx.float32), _primitive(mx.multiply, mx.float32, mx.float32)
    p = _fused([(sig, (0,), mx.float32), (mul, (1, 0), mx.float32)], x.shape)  # silu
    got = native_fused.run(p, [x], None)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, vm.sigmoid(x) * x)
    np.testing.assert_array_equal(got, np.asarray(mx.sigmoid(mx.array(x)) * mx.array(x)))


@needs_cc
def test_every_thread_count_and_an_out_buffer_give_the_same_bits(monkeypatch):
    monkeypatch.setattr(threads_module, "MIN_BYTES", 1 << 12)  # split on every thread count
    monkeypatch.setattr(threads_module, "MEMORY_BOUND_BYTES", 1 << 12)
    name, steps, dtypes, formula = CHAINS[0]
    shape = (96, 4096)
    p = _fused(steps, shape)
    views = _views(dtypes, shape, "row")
    outs, saved = [], mx.get_num_threads()
    try:
        for threads in (1, 2, 3):
            mx.set_num_threads(threads)
            outs.append(native_fused.run(p, views, None))
    finally:
        mx.set_num_threads(saved)
    for other in outs[1:]:
        np.testing.assert_array_equal(outs[0].view(np.uint8), other.view(np.uint8))
    donor = views[0].copy()  # the first input's buffer given up: written in place
    into = native_fused.run(p, [donor, *views[1:]], donor)
    assert into is donor
    np.testing.assert_array_equal(into.view(np.uint8), outs[0].view(np.uint8))


@needs_cc
def test_chains_it_does_not_take():
    sin = _primitive(mx.sin, mx.float32)
    add = _primitive(mx.add, mx.float32, mx.float32)
    x = np.ones((64, 1024), np.float32)
    assert native_fused.run(_fused([(sin, (0,), mx.float32)], x.shape), [x], None) is None
    small = _fused([(add, (0, 0), mx.float32)], (8, 8))
    assert native_fused.run(small, [x[:8, :8]], None) is None
    transposed = _fused([(add, (0, 0), mx.float32)], (1024, 64))
    assert native_fused.run(transposed, [x.T], None) is None
    # the CPU kernel still computes them (in blocks, with NumPy)
    y = record1(transposed, [mx.array(x).T], to_stream(None))
    np.testing.assert_array_equal(np.asarray(y), x.T * 2)


@needs_cc
def test_eager_fusion_and_compile_run_generated_chains(monkeypatch):
    calls = []
    original = native_fused.run

    def counting(p, views, out):
        result = original(p, views, out)
        calls.append(result is not None)
        return result

    monkeypatch.setattr(native_fused, "run", counting)
    rng = np.random.default_rng(0)
    x, w = (rng.standard_normal((256, 512)).astype(np.float32) for _ in range(2))
    f = mx.compile(lambda x, w: mx.maximum(x * w - 0.5, 0) * 3)
    got = np.asarray(f(mx.array(x), mx.array(w)))
    np.testing.assert_array_equal(got, np.maximum(x * w - np.float32(0.5), 0) * np.float32(3))
    assert calls == [True]
    big = rng.standard_normal((2048, 1024)).astype(np.float32)
    y = mx.array(big) * 2 - mx.array(big) / 3
    np.testing.assert_array_equal(np.asarray(y), big * 2 - big / np.float32(3))
    assert calls == [True, True]


class _EPS:
    eps = 1e-5


def _norm_reference(x, w, b, eps, layer):
    x = x.astype(np.float64)
    if layer:
        x = x - x.mean(-1, keepdims=True)
    y = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    y = y if w is None else y * w
    return y if b is None else y + b


@needs_cc
@pytest.mark.parametrize("dtype, tolerance", [(np.float32, 1e-5), (np.float64, 1e-10)])
@pytest.mark.parametrize("d", [4096, 1000, 3])
@pytest.mark.parametrize("layer, weights", [(True, "both"), (True, "weight"), (True, "bias"),
                                             (True, "none"), (False, "weight"), (False, "none")])
def test_norm_rows_in_c_match_float64(dtype, tolerance, d, weights, layer):
    rng = np.random.default_rng(d)
    # a large mean: float32 rounds it (and the inputs) to within 2e-5 of their exact values
    x = (rng.standard_normal((3, 40, d)) * 2 + 300 * (layer and d > 3)).astype(dtype)
    w = rng.standard_normal(d).astype(dtype) if weights in ("both", "weight") else None
    b = rng.standard_normal(d).astype(dtype) if weights in ("both", "bias") else None
    xs = mx.array(x, DTYPES[np.dtype(dtype)])
    ws = None if w is None else mx.array(w, DTYPES[np.dtype(dtype)])
    if layer:
        bs = None if b is None else mx.array(b, DTYPES[np.dtype(dtype)])
        y = mx.fast.layer_norm(xs, ws, bs, 1e-5)
    else:
        y = mx.fast.rms_norm(xs, ws, 1e-5)
    want = _norm_reference(x, w, b, 1e-5, layer)
    got = np.asarray(y)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance * np.abs(want).max())
    # the C rows computed it (not the NumPy body)
    none = [np.asarray(0.0, dtype)] * (2 if layer else 1)
    assert native_norms._rows_in_c("layer_norm" if layer else "rms_norm",
                                   _EPS, x, none) is not None


@needs_cc
def test_norm_rows_in_c_give_the_same_bits_on_every_thread_count_and_layout():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 2048)).astype(np.float32)
    w, b = (mx.array(rng.standard_normal(2048).astype(np.float32)) for _ in range(2))
    outs, saved = [], mx.get_num_threads()
    try:
        for threads in (1, 2, 3):
            mx.set_num_threads(threads)
            outs.append(np.asarray(mx.fast.layer_norm(mx.array(x), w, b, 1e-5)))
    finally:
        mx.set_num_threads(saved)
    for other in outs[1:]:
        np.testing.assert_array_equal(outs[0].view(np.uint8), other.view(np.uint8))
    transposed = mx.array(np.ascontiguousarray(x.T)).T  # rows read through a transposed view
    np.testing.assert_array_equal(np.asarray(mx.fast.layer_norm(transposed, w, b, 1e-5)),
                                  outs[0])


@needs_cc
def test_half_rows_take_the_numpy_body():
    x = np.ones((4, 64), np.float16)
    assert native_norms._rows_in_c("rms_norm", None, x, [np.asarray(0.0)]) is None
    y = mx.fast.rms_norm(mx.array(x), None, 1e-5)
    assert y.dtype == mx.float16
    np.testing.assert_allclose(np.asarray(y).astype(np.float32), 1.0, rtol=1e-3)


@needs_cc
@pytest.mark.parametrize("layer", [True, False], ids=["layer_norm", "rms_norm"])
def test_norm_rows_in_c_agree_with_the_numpy_body(layer):
    """The NumPy body still computes half types, CuPy's rows and machines without a
    compiler: both paths within float32's rounding of each other and of float64."""
    from nuvec.backends.common import fast as bodies

    rng = np.random.default_rng(2)
    x = rng.standard_normal((16, 512)).astype(np.float32) + 3
    w, b = (rng.standard_normal(512).astype(np.float32) for _ in range(2))
    if layer:
        numpy_rows = bodies.layer_norm(np, _EPS, x, w, b)
        c_rows = native_norms._rows_in_c("layer_norm", _EPS, x, [w, b])
    else:
        numpy_rows = bodies.rms_norm(np, _EPS, x, w)
        c_rows = native_norms._rows_in_c("rms_norm", _EPS, x, [w])
    want = _norm_reference(x, w, b if layer else None, _EPS.eps, layer)
    for got in (numpy_rows, c_rows):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c_rows, numpy_rows, rtol=1e-5, atol=1e-5)


def _rms_norm_grads(x, w, g, eps):
    """float64 `dx` and `dw` of `sum(g * rms_norm(x, w))`."""
    x, g = x.astype(np.float64), g.astype(np.float64)
    w = np.ones(x.shape[-1]) if w is None else w.astype(np.float64)
    n = 1 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    wg = g * w
    dx = wg * n - x * (wg * x).mean(-1, keepdims=True) * n**3
    return dx, (g * x * n).reshape(-1, x.shape[-1]).sum(0)


@needs_cc
@pytest.mark.parametrize("dtype, tolerance", [(np.float32, 2e-5), (np.float64, 1e-11)])
@pytest.mark.parametrize("d, weighted", [(128, True), (1000, True), (3, True), (64, False)])
def test_rms_norm_gradient_rows_in_c_match_float64(dtype, tolerance, d, weighted):
    rng = np.random.default_rng(d)
    x = (rng.standard_normal((2, 300, d)) * 2).astype(dtype)
    w = rng.standard_normal(d).astype(dtype) if weighted else None
    g = rng.standard_normal(x.shape).astype(dtype)
    kind = DTYPES[np.dtype(dtype)]
    ws = None if w is None else mx.array(w, kind)

    def loss(x, w):
        return mx.sum(mx.fast.rms_norm(x, w, 1e-5) * mx.array(g, kind))

    dx, dw = mx.grad(loss, argnums=(0, 1) if weighted else 0)(mx.array(x, kind), ws) \
        if weighted else (mx.grad(loss)(mx.array(x, kind), ws), None)
    want_dx, want_dw = _rms_norm_grads(x, w, g, 1e-5)
    np.testing.assert_allclose(np.asarray(dx), want_dx, rtol=tolerance,
                               atol=tolerance * np.abs(want_dx).max())
    if weighted:
        np.testing.assert_allclose(np.asarray(dw), want_dw, rtol=tolerance * 10,
                                   atol=tolerance * 10 * np.abs(want_dw).max())
    # the C rows computed it (not the NumPy body)
    calls = []
    original = native_norms._functions()[("rms_norm_vjp", np.dtype(dtype))]
    try:
        native_norms._functions()[("rms_norm_vjp", np.dtype(dtype))] = \
            lambda *a: calls.append(1) or original(*a)
        native_norms.rms_norm_vjp(_EPS, x, np.asarray(1.0, dtype) if w is None else w, g)
    finally:
        native_norms._functions()[("rms_norm_vjp", np.dtype(dtype))] = original
    assert calls


@needs_cc
def test_rms_norm_gradient_rows_in_c_give_the_same_bits_on_every_thread_count_and_layout():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((96, 512)).astype(np.float32)
    w = mx.array(rng.standard_normal(512).astype(np.float32))
    g = mx.array(rng.standard_normal((96, 512)).astype(np.float32))
    grad = mx.grad(lambda x, w: mx.sum(mx.fast.rms_norm(x, w, 1e-5) * g), argnums=(0, 1))
    outs, saved = [], mx.get_num_threads()
    try:
        for threads in (1, 2, 3):
            mx.set_num_threads(threads)
            outs.append([np.asarray(a) for a in grad(mx.array(x), w)])
    finally:
        mx.set_num_threads(saved)
    for other in outs[1:]:
        for a, b in zip(outs[0], other):
            np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
    transposed = mx.array(np.ascontiguousarray(x.T)).T  # rows read through a transposed view
    for a, b in zip(grad(transposed, w), outs[0]):
        np.testing.assert_array_equal(np.asarray(a), b)


@needs_cc
def test_rms_norm_gradient_rows_in_c_agree_with_the_numpy_body():
    from nuvec.backends.common import fast as bodies

    rng = np.random.default_rng(5)
    x, g = (rng.standard_normal((16, 512)).astype(np.float32) + 1 for _ in range(2))
    w = rng.standard_normal(512).astype(np.float32)
    numpy_rows = bodies.rms_norm_vjp(np, _EPS, x, w, g)
    c_rows = native_norms.rms_norm_vjp(_EPS, x, w, g)
    want = _rms_norm_grads(x, w, g, _EPS.eps)
    for got in (numpy_rows, c_rows):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * np.abs(b).max())
    half = native_norms.rms_norm_vjp(_EPS, x.astype(np.float16), w.astype(np.float16),
                                     g.astype(np.float16))  # the NumPy body's half rows
    np.testing.assert_allclose(half[0], want[0], rtol=2e-2, atol=2e-2 * np.abs(want[0]).max())


@needs_cc
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("traditional", [False, True], ids=["halves", "pairs"])
@pytest.mark.parametrize("dims", [32, 12])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "reversed"])
def test_rope_in_c_gives_the_numpy_bodys_bits(dtype, traditional, dims, layout):
    from nuvec.backends.numpy import native_rope

    rng = np.random.default_rng(dims)
    stored = rng.standard_normal((3, 20, 5, 32)).astype(dtype)  # [batch, T, heads, D]
    x = {"contiguous": np.ascontiguousarray(stored.transpose(0, 2, 1, 3)),
         "transposed": stored.transpose(0, 2, 1, 3),
         "reversed": stored.transpose(0, 2, 1, 3)[::-1, :, ::-1]}[layout]
    y = mx.fast.rope(mx.array(x, DTYPES[np.dtype(dtype)]), dims, traditional=traditional,
                     base=500.0, scale=0.5, offset=4)
    p = y.primitive
    calls = []
    functions = native_rope._functions()
    original = functions[np.dtype(dtype)]
    functions[np.dtype(dtype)] = lambda *a: calls.append(1) or original(*a)
    try:
        for offset in (np.array(4), np.array([0, 9, 2])):  # one offset, one per batch entry
            got = native_rope.rope(p, x, offset)
            np.testing.assert_array_equal(got, native_rope._SHARED(p, x, offset))
    finally:
        functions[np.dtype(dtype)] = original
    assert calls
    np.testing.assert_array_equal(np.asarray(y), native_rope.rope(p, x, np.array(4)))


@needs_cc
def test_rope_in_c_gives_the_same_bits_on_every_thread_count_and_leaves_half_types():
    rng = np.random.default_rng(4)
    x = mx.array(rng.standard_normal((8, 256, 6, 64)).astype(np.float32)).transpose(0, 2, 1, 3)
    outs, saved = [], mx.get_num_threads()
    try:
        for threads in (1, 2, 3):
            mx.set_num_threads(threads)
            outs.append(np.asarray(mx.fast.rope(x, 64, traditional=False, base=1e4, scale=1.0,
                                                offset=0)))
    finally:
        mx.set_num_threads(saved)
    for other in outs[1:]:
        np.testing.assert_array_equal(outs[0], other)
    half = mx.fast.rope(x.astype(mx.float16), 64, traditional=False, base=1e4, scale=1.0,
                        offset=0)
    assert half.dtype == mx.float16
    np.testing.assert_allclose(np.asarray(half).astype(np.float32), outs[0], atol=4e-3,
                               rtol=4e-3)


COVERED = ("exp", "sqrt", "negative", "square", "add", "multiply", "subtract", "divide",
           "maximum", "minimum", "scalar")


@needs_cc
@pytest.mark.parametrize("seed", range(16))
def test_random_covered_chains_equal_the_unfused_graph(seed, monkeypatch):
    from test_compile_fusion import BINARY, UNARY

    built = []
    original = native_fused.run
    monkeypatch.setattr(native_fused, "run", lambda *a: built.append(original(*a)) or built[-1])
    rng = np.random.default_rng(seed)
    dtype = (np.float32, np.float64)[seed % 2]
    ops = [op for op in UNARY + BINARY if op[0] in COVERED
           and (op[0] != "exp" or (dtype == np.float32 and vm.in_use() == "c"))]
    chain = [ops[k] for k in rng.integers(0, len(ops), rng.integers(3, 9))]
    shape, others = ((130, 257), [(257,), (130, 1), ()]) if seed % 4 < 2 else \
        ((20000,), [(20000,), (1,)])
    data = [rng.standard_normal(s).astype(dtype) for s in [shape, *others]]
    picks = rng.integers(0, 8, len(chain))

    def f(x, *ys):
        v = x
        for (name, op), k in zip(chain, picks):
            v = op(mx, v) if op.__code__.co_argcount == 2 else op(mx, v, ys[k % len(ys)])
        return v

    arrays = [mx.array(d, DTYPES[np.dtype(dtype)]) for d in data]
    got = np.asarray(mx.compile(f)(*arrays))
    want = np.asarray(f(*arrays))
    np.testing.assert_array_equal(got, want, err_msg="-".join(n for n, _ in chain))
    assert any(r is not None for r in built)  # a generated chain computed it


@pytest.mark.parametrize("kind", ["tanh", "sigmoid", "relu"])
@pytest.mark.parametrize("scaled", [True, False])
@pytest.mark.parametrize("dtype", [F32, F64])
def test_the_derivative_product_kernel_gives_numpys_bits(kind, scaled, dtype):
    """One generated pass where a compiler is found, NumPy's calls elsewhere and on the
    layouts the generator refuses: the bits of NumPy's three calls either way."""
    p = DerivativeProduct(kind, scaled)
    out = _special(dtype, (64, 512), seed=3)
    if kind == "sigmoid":
        out = np.abs(np.tanh(out)).astype(dtype)
    inputs = [_special(dtype, out.shape, seed=4), out] if scaled else [out]
    with np.errstate(all="ignore"):  # (as the evaluator runs kernels: inf * 0 is NaN)
        want = derivative_product(np, p, *inputs)
        for layout in (inputs, [x.T for x in inputs], [x[:, ::2] for x in inputs]):
            got = fused.one_pass_derivative(p, *layout)
            np.testing.assert_array_equal(_bits(got), _bits(derivative_product(np, p, *layout)))
        donor = inputs[0].copy()
        got = fused.one_pass_derivative(p, donor, *inputs[1:], out=donor)
    assert got is donor or native.compiler() is None
    np.testing.assert_array_equal(_bits(got), _bits(want))


def _bits(x):
    return np.ascontiguousarray(x).view(np.uint8)


def test_the_tanh_gradient_takes_the_derivative_kernel_with_the_compositions_values():
    x = mx.array(_special(F32, (128, 256), seed=5) * 0.1)

    def f(y):
        return mx.sum(mx.tanh(mx.tanh(y)))

    t1 = np.tanh(np.asarray(x))
    t2 = np.tanh(t1)
    want = (1 - t2 * t2) * (1 - t1 * t1)
    np.testing.assert_allclose(np.asarray(mx.grad(f)(x)), want, rtol=1e-6, atol=1e-7)


def test_address_is_the_first_elements_for_every_layout():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    frozen = x.copy()
    frozen.flags.writeable = False
    for a in (x, x[1:], x.T, x[:, ::2], frozen, x[:0], np.ones(()),
              np.broadcast_to(x[0], (4, 6)), x.astype(ml_dtypes.bfloat16),
              np.zeros(3, "datetime64[s]"), x > 3):
        assert native.address(a) == a.__array_interface__["data"][0]


@needs_cc
@pytest.mark.parametrize("width", [1, 2, 4])
@pytest.mark.parametrize("shape", [(), (0,), (1,), (2,), (3,), (7, 5), (1001,)], ids=str)
def test_threefry_in_c_gives_the_bits_of_the_numpy_body(shape, width):
    from nuvec.backends.common import random as common_random
    from nuvec.backends.numpy import native_random
    from nuvec.ops.random import RandomBits

    assert native_random.random_words() is not None  # (the C path, not the body it falls back to)
    p = RandomBits(shape, width)
    keys = np.random.default_rng(7).integers(0, 2**32, (3, 2, 2), dtype=np.uint64)
    for key in (keys[0, 0].astype(np.uint32), keys.astype(np.uint32)):  # one key, a batch
        got, want = native_random.random_bits(p, key), common_random.random_bits(np, p, key)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
