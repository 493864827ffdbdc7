"""Elementwise fusion in `compile`: compiled chains give exactly the unfused graph's values
(random chains, shapes, broadcasts, dtypes, weak scalars), agree with NumPy float64 formulas,
fuse where they should and not elsewhere, and compose with the transforms."""

from __future__ import annotations

import tracemalloc

import ml_dtypes
import numpy as np
import pytest

import nuvec as mx
from nuvec.backends.numpy import fused as cpu_fused
from nuvec.backends.numpy import blas, native_fused
from nuvec.fast.fused import FusedElementwise, ProductUpdate
from nuvec.testing import assert_allclose

UNARY = [
    ("exp", lambda m, a: m.exp(a * 0.5)),
    ("sin", lambda m, a: m.sin(a)),
    ("tanh", lambda m, a: m.tanh(a)),
    ("sqrt", lambda m, a: m.sqrt(m.abs(a) + 1)),
    ("log1p", lambda m, a: m.log1p(m.abs(a))),
    ("negative", lambda m, a: -a),
    ("square", lambda m, a: m.square(a) * 0.25),
    ("sigmoid", lambda m, a: m.sigmoid(a) if m is mx else 1 / (1 + np.exp(-a))),
]
BINARY = [
    ("add", lambda m, a, b: a + b),
    ("multiply", lambda m, a, b: a * b),
    ("subtract", lambda m, a, b: a - b),
    ("divide", lambda m, a, b: a / (m.abs(b) + 1)),
    ("maximum", lambda m, a, b: m.maximum(a, b)),
    ("minimum", lambda m, a, b: m.minimum(a, b)),
    ("scalar", lambda m, a, b: a * 1.5 + 2),
]
DTYPES = {"float32": (np.float32, 2e-5), "float16": (np.float16, 4e-3),
          "bfloat16": (ml_dtypes.bfloat16, 3e-2), "float64": (np.float64, 1e-12)}
SHAPES = [((257, 130), [(130,), (257, 1), ()]), ((3, 40, 33), [(40, 1), (33,), (3, 1, 1)]),
          ((5000,), [(1,), (5000,)]), ((2, 1, 70), [(1, 70), (2, 1, 1)])]


def _chain(rng):
    """A random chain of 4-9 elementwise ops over x and broadcast operands ys."""
    ops = [(UNARY if rng.random() < 0.5 else BINARY)[0] for _ in range(rng.integers(4, 10))]
    ops = [UNARY[rng.integers(len(UNARY))] if rng.random() < 0.5
           else BINARY[rng.integers(len(BINARY))] for _ in ops]
    picks = rng.integers(0, 8, len(ops))

    def f(m, x, *ys):
        v = x
        for (name, op), k in zip(ops, picks):
            v = op(m, v) if op.__code__.co_argcount == 2 else op(m, v, ys[k % len(ys)])
        return v

    return f, "-".join(name for name, _ in ops)


def _count(out, cls):
    """Nodes of primitive class `cls` in the graphs of the arrays `out`."""
    seen, stack, count = set(), list(out), 0
    while stack:
        a = stack.pop()
        if id(a._node) in seen or a.primitive is None:
            continue
        seen.add(id(a._node))
        count += isinstance(a.primitive, cls)
        stack.extend(a.inputs)
    return count


def _fused_count(y):
    """The FusedElementwise nodes in the graph of `y`."""
    return _count([y], FusedElementwise)


@pytest.fixture(params=["blocks", "whole"])
def small_blocks(request, monkeypatch):
    """The CPU kernel's two NumPy paths: many blocks with ragged tails (small arrays otherwise
    run whole), or each step over the whole arrays; generated C kept out (its own random
    chains are in `tests/backends/test_native.py`)."""
    monkeypatch.setattr(native_fused, "MIN_ELEMENTS", 1 << 62)
    if request.param == "blocks":
        monkeypatch.setattr(cpu_fused, "BLOCK", 64)
        monkeypatch.setattr(cpu_fused, "WHOLE", 0)
    else:
        monkeypatch.setattr(cpu_fused, "WHOLE", 1 << 20)


@pytest.mark.parametrize("seed", range(24))
def test_random_chains_equal_the_unfused_graph(seed, small_blocks):
    rng = np.random.default_rng(seed)
    f, name = _chain(rng)
    dtype_name = list(DTYPES)[seed % len(DTYPES)]
    dtype, tol = DTYPES[dtype_name]
    shape, others = SHAPES[seed % len(SHAPES)]
    data = [rng.standard_normal(s).astype(dtype) for s in [shape, *others]]
    arrays = [mx.array(d, getattr(mx, dtype_name)) for d in data]
    compiled = mx.compile(lambda *a: f(mx, *a))
    got = compiled(*arrays)
    want = f(mx, *arrays)
    assert isinstance(got.primitive, FusedElementwise), name  # (smaller operands: own chains)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(np.array(got), np.array(want), err_msg=name)
    for a, d in zip(arrays, data):  # steps write into their own values, never an input's
        np.testing.assert_array_equal(np.array(a), np.array(mx.array(d, a.dtype)))
    reference = f(np, *[d.astype(np.float64) for d in data])
    scale = max(1.0, float(np.max(np.abs(reference))))
    np.testing.assert_allclose(np.array(got).astype(np.float64), reference,
                               rtol=tol * 8, atol=tol * 8 * scale, err_msg=name)


@pytest.mark.parametrize("dtype", [mx.int32, mx.float16, mx.bool_])
def test_weak_scalars_and_promotion_as_unfused(dtype, small_blocks):
    x = mx.array(np.arange(-50, 50).reshape(4, 25) % 7, dtype)

    def f(a):
        return mx.maximum(a * 3 + 1, 2) - (a > 1) + 0.5

    got, want = mx.compile(f)(x), f(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.array(got), np.array(want))


def test_fused_chain_matches_numpy_float64():
    rng = np.random.default_rng(3)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in [(300, 300), (300,), (300, 1)])
    f = mx.compile(lambda x, w, b: mx.tanh(mx.exp(x) * w + b) * 0.5 - mx.sin(x))
    got = f(mx.array(x), mx.array(w), mx.array(b))
    x64, w64, b64 = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64)
    assert_allclose(got, np.tanh(np.exp(x64) * w64 + b64) * 0.5 - np.sin(x64), dtype=mx.float32)


def test_a_shared_intermediate_is_computed_once_and_ends_the_chain():
    def f(x):
        t = mx.exp(x) * 2
        return t + 1, mx.sum(t * t)

    x = mx.array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    a, s = mx.compile(f)(x)
    # t feeds two chains (t + 1, t * t): it is one fused node, read by both, never recomputed
    t = a.inputs[0]
    assert a.primitive.name == "Add" and isinstance(t.primitive, FusedElementwise)
    assert _fused_count(s) == 1 and _fused_count(a) == 1
    a0, s0 = f(x)
    np.testing.assert_array_equal(np.array(a), np.array(a0))
    np.testing.assert_array_equal(np.array(s), np.array(s0))


def test_non_elementwise_steps_and_single_ops_stay_as_they_are():
    f = mx.compile(lambda x: mx.sum(mx.exp(x), axis=0) + 1)
    y = f(mx.array(np.ones((3, 2), np.float32)))
    assert y.primitive.name == "Add" and _fused_count(y) == 0
    assert_allclose(y, np.full(2, 3 * np.e + 1), dtype=mx.float32)


def test_shapeless_programs_are_not_fused():
    f = mx.compile(lambda x: mx.exp(x) * 2 + 1, shapeless=True)
    y = f(mx.array(np.zeros(3, np.float32)))
    assert _fused_count(y) == 0 and y.tolist() == [3.0, 3.0, 3.0]


def _f(x, w):
    return mx.sum(mx.tanh(mx.exp(x) * w + 1) * x)


def _f_np(x, w):
    return np.sum(np.tanh(np.exp(x) * w + 1) * x)


def _df_np(x, w):
    t = np.tanh(np.exp(x) * w + 1)
    return t + x * (1 - t**2) * np.exp(x) * w


def test_grad_of_compiled_and_compiled_grad():
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((6, 5)) * 0.5, rng.standard_normal(5)
    xs, ws = mx.array(x, mx.float64), mx.array(w, mx.float64)
    for g in (mx.grad(mx.compile(_f)), mx.compile(mx.grad(_f))):
        assert_allclose(g(xs, ws), _df_np(x, w), dtype=mx.float64)
    assert _fused_count(mx.compile(mx.grad(_f))(xs, ws)) >= 1
    value, tangent = mx.jvp(mx.compile(_f), [xs, ws], [mx.ones_like(xs), mx.zeros_like(ws)])
    assert_allclose(value[0], _f_np(x, w), dtype=mx.float64)
    assert_allclose(tangent[0], _df_np(x, w).sum(), dtype=mx.float64)


def test_grad_of_compiled_replays_a_fused_backward_and_one_forward():
    from nuvec.ops.unary import Exp

    rng = np.random.default_rng(9)
    x, w = rng.standard_normal((6, 5)) * 0.5, rng.standard_normal(5)
    xs, ws = mx.array(x, mx.float64), mx.array(w, mx.float64)
    calls = []

    def f(x, w):
        calls.append(1)
        return _f(x, w)

    step = mx.value_and_grad(mx.compile(f))
    for _ in range(3):  # traced once (the reverse mode too), replayed after
        value, g = step(xs, ws)
        # the backward pass is fused; the forward pass (one exp) is computed once, its
        # values read by the backward pass
        assert isinstance(g.primitive, FusedElementwise)
        assert _count([value, g], Exp) == 1
        assert_allclose(value, _f_np(x, w), dtype=mx.float64)
        assert_allclose(g, _df_np(x, w), dtype=mx.float64)
    assert len(calls) == 1
    # with respect to both arguments: the broadcast weight's cotangent is summed
    gx, gw = mx.grad(mx.compile(_f), argnums=(0, 1))(xs, ws)
    t = np.tanh(np.exp(x) * w + 1)
    assert_allclose(gw, (x * (1 - t**2) * np.exp(x)).sum(0), dtype=mx.float64)
    assert_allclose(gx, _df_np(x, w), dtype=mx.float64)


def test_grad_of_compiled_with_random_state_and_integer_outputs():
    # the captured random state (integers) and an integer output take no cotangent; values,
    # gradients and the state's advance are those of the uncompiled function
    state = [mx.random.state]

    def f(x):
        return mx.sum(mx.exp(x) * mx.random.normal(x.shape)), mx.arange(3)

    compiled = mx.value_and_grad(mx.compile(f, inputs=state, outputs=state))
    x = mx.array(np.linspace(-1, 1, 5, dtype=np.float32))
    for _ in range(2):
        mx.random.seed(3)
        (v1, i1), g1 = compiled(x)
        after = np.array(mx.random.state[0])
        mx.random.seed(3)
        (v2, i2), g2 = mx.value_and_grad(f)(x)
        np.testing.assert_array_equal(after, np.array(mx.random.state[0]))
        assert_allclose(v1, np.array(v2), dtype=mx.float32)
        assert_allclose(g1, np.array(g2), dtype=mx.float32)
        assert i1.tolist() == [0, 1, 2]


def test_vmap_of_compiled_records_one_wider_fused_node():
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((4, 3, 5)), rng.standard_normal(5)
    chain = mx.compile(lambda x, w: mx.tanh(mx.exp(x) * w + 1) * x)
    y = mx.vmap(chain, in_axes=(1, None))(mx.array(x), mx.array(w))
    assert isinstance(y.primitive, FusedElementwise) and y.primitive.shape == (3, 4, 5)
    want = np.tanh(np.exp(x) * w + 1) * x
    assert_allclose(y, np.moveaxis(want, 1, 0), dtype=mx.float32)
    # a batched operand of lower rank than the chain: right-aligned under the batch axis
    ws = rng.standard_normal((2, 5))
    y = mx.vmap(chain, in_axes=(None, 0))(mx.array(x), mx.array(ws))
    assert y.primitive.shape == (2, 4, 3, 5)
    assert_allclose(y, np.stack([np.tanh(np.exp(x) * v + 1) * x for v in ws]), dtype=mx.float32)


def test_blocks_cover_the_array_in_order():
    for shape, size in [((7, 5, 3), 4), ((2, 100), 32), ((10,), 3), ((3, 1000), 64)]:
        seen = np.zeros(shape, int)
        flat = []
        for lead, rows in cpu_fused.blocks(shape, size):
            block = seen[lead][rows]
            block += 1
            assert block.size <= max(size, int(np.prod(shape[len(lead) + 1:])))
            flat.append(np.ravel_multi_index((*lead, rows.start) + (0,) * (len(shape)
                                                                           - len(lead) - 1),
                                             shape))
        assert (seen == 1).all() and flat == sorted(flat)


def test_non_contiguous_inputs():
    x = np.arange(60, dtype=np.float32).reshape(6, 10) / 10
    a, b = mx.array(x).T[:3, :4], mx.array(x)[::2, ::3]
    mx.eval(a, b)
    f = lambda a, b: mx.exp(a) * b - 1
    np.testing.assert_array_equal(np.array(mx.compile(f)(a, b)), np.array(f(a, b)))
    assert_allclose(mx.compile(f)(a, b), np.exp(x.T[:3, :4]) * x[::2, ::3] - 1,
                    dtype=mx.float32)


def test_gpu_streams_fuse_only_what_the_generated_kernel_covers():
    from nuvec.backends.double import DoubleBackend  # the NumPy-backed GPU double
    from nuvec.graph.device import DeviceType, register_backend

    register_backend(DeviceType.gpu, DoubleBackend())
    try:
        with mx.stream(mx.default_stream(mx.gpu)):
            x = mx.array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
            covered = mx.compile(lambda a: mx.tanh(mx.exp(a) * 2) - a)(x)
            assert isinstance(covered.primitive, FusedElementwise)
            np.testing.assert_array_equal(np.array(covered),
                                          np.array(mx.tanh(mx.exp(x) * 2) - x))
            # a comparison (bool result) and float64 steps are outside the CUDA kernel
            split = mx.compile(lambda a: mx.where(a > 0, mx.exp(a) * 2 + 1, a))(x)
            assert split.primitive.name == "Select" and _fused_count(split) == 1
            wide = mx.compile(lambda a: mx.exp(a) * 2 + 1)(x.astype(mx.float64))
            assert _fused_count(wide) == 0
            assert_allclose(wide, np.exp(np.array(x, np.float64)) * 2 + 1, dtype=mx.float64)
    finally:
        register_backend(DeviceType.gpu, None)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_blocks_split_over_threads_give_the_same_values(threads, monkeypatch):
    monkeypatch.setattr(cpu_fused, "BLOCK", 4096)  # 64 blocks of 128 KiB of work each
    monkeypatch.setattr(cpu_fused, "WHOLE", 0)
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((512, 512)).astype(np.float32), rng.standard_normal(512)
    f = lambda x, w: mx.tanh(mx.exp(x) * w + 1) * 0.5 + mx.sin(x) - 1
    before = mx.get_num_threads()
    mx.set_num_threads(threads)
    try:
        got = mx.compile(f)(mx.array(x), mx.array(w, mx.float32))
        assert isinstance(got.primitive, FusedElementwise)
        got = np.array(got)
    finally:
        mx.set_num_threads(before)
    want = np.array(f(mx.array(x), mx.array(w, mx.float32)))
    np.testing.assert_array_equal(got, want)


def test_steps_on_whole_arrays_write_into_the_values_they_read_last():
    """After the first step, each writes into the value only it reads (a buffer of the
    chain's own making): the chain takes one buffer the size of its output, not one a step."""
    data = np.linspace(-1, 1, 1 << 16, dtype=np.float32)
    y = mx.compile(lambda a: mx.tanh(mx.cos(mx.sin(mx.exp(a)))))(mx.array(data))
    assert isinstance(y.primitive, FusedElementwise) and len(y.primitive.steps) == 4
    tracemalloc.start()
    try:
        out = cpu_fused.fused_elementwise(y.primitive, data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * data.nbytes
    unfused = mx.tanh(mx.cos(mx.sin(mx.exp(mx.array(data)))))
    np.testing.assert_array_equal(out, np.asarray(unfused))


# -- an optimizer's update absorbing its weight gradient's product -------------------------

def _sgd_step(lr=0.1):
    """A two-layer SGD step as MLX code compiles it, its model and optimizer."""
    import nuvec.nn as nn
    import nuvec.optimizers as optim

    model = nn.Sequential(nn.Linear(96, 160), nn.ReLU(), nn.Linear(160, 128))
    optimizer = optim.SGD(learning_rate=lr)
    loss_and_grad = nn.value_and_grad(model, lambda m, x, y: mx.mean((m(x) - y) ** 2))

    def step(x, y):
        loss, grads = loss_and_grad(model, x, y)
        optimizer.update(model, grads)
        return loss
    return step, model, optimizer


def _recorded(arrays):
    """The primitives of the graph behind `arrays` (walked as a tree: a small step)."""
    stack, seen = list(arrays), []
    while stack:
        a = stack.pop()
        if a.primitive is not None:
            seen.append(a.primitive)
            stack.extend(a.inputs)
    return seen


def test_sgd_updates_absorb_their_weight_gradients_products():
    """Each weight's `w - lr * (g.T @ h)` is one `ProductUpdate` (the biases' updates stay
    fused chains), and compiled steps follow the uncompiled ones to within the products'
    rounding (one gemm accumulating into the weight)."""
    rng = np.random.default_rng(4)
    x = mx.array(rng.standard_normal((64, 96)).astype(np.float32))
    y = mx.array(rng.standard_normal((64, 128)).astype(np.float32))
    runs = []
    for compiled in (False, True):
        mx.random.seed(0)
        step, model, optimizer = _sgd_step()
        state = [model.state, optimizer.state]
        if compiled:
            step = mx.compile(step, inputs=state, outputs=state)
        losses = []
        for _ in range(4):
            if compiled:
                out = step(x, y)
                updates = [p for p in _recorded([model.layers[0].weight, model.layers[2].weight])
                           if isinstance(p, ProductUpdate)]
            losses.append(step(x, y).item() if not compiled else out.item())
            mx.eval(state)
        runs.append((losses, [np.asarray(model.layers[i].weight) for i in (0, 2)]))
    assert len(updates) == 2
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-5)
    for compiled_w, plain_w in zip(runs[1][1], runs[0][1]):
        np.testing.assert_allclose(compiled_w, plain_w, rtol=1e-5, atol=1e-6)


def test_product_update_is_one_gemm_into_the_weight(monkeypatch):
    """The CPU kernel calls the BLAS gemm once per weight, accumulating into the old weight's
    buffer, and matches the float64 formula."""
    calls = []
    gemm = blas.gemm
    monkeypatch.setattr(blas, "gemm", lambda *args: calls.append(args[4].shape) or gemm(*args))
    rng = np.random.default_rng(5)
    w_np, g_np, h_np = (rng.standard_normal(s).astype(np.float32)
                        for s in ((256, 384), (128, 256), (128, 384)))
    step = mx.compile(lambda w, g, h, lr: w - lr * (g.T @ h))
    w, g, h, lr = mx.array(w_np), mx.array(g_np), mx.array(h_np), mx.array(0.25)
    out = step(w, g, h, lr)
    assert type(out.primitive) is ProductUpdate
    mx.eval(out)
    if not blas.available():
        pytest.skip("no BLAS with known names: the fallback path ran")
    assert calls == [(256, 384)]
    want = w_np.astype(np.float64) - 0.25 * (g_np.T.astype(np.float64) @ h_np)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(w), w_np)  # the caller's weight is left as it was


@pytest.mark.parametrize("case", ["per-element scale", "small", "float16", "held product",
                                  "transposed weight"])
def test_product_update_falls_back_or_is_not_formed(case):
    """Where the gemm does not apply (a scale that is not one value, a small or half-type
    update, a non-contiguous old value) the kernel computes the product and then the update,
    as the unfused graph; a product read elsewhere is not absorbed. Values as uncompiled."""
    rng = np.random.default_rng(6)
    dtype = np.float16 if case == "float16" else np.float32
    n = 8 if case == "small" else 192
    w, g, h = (mx.array(rng.standard_normal(s).astype(dtype)) for s in ((n, 96), (64, n), (64, 96)))
    lr = mx.array(rng.uniform(0.1, 0.2, (n, 96)).astype(dtype)) if case == "per-element scale" \
        else mx.array(0.125, mx.float16 if case == "float16" else mx.float32)
    if case == "transposed weight":
        w = mx.array(np.asfortranarray(rng.standard_normal((n, 96)).astype(dtype)))

    def f(w, g, h, lr):
        product = g.T @ h
        new = w - lr * product
        return (new, product * 2) if case == "held product" else new

    got, want = mx.compile(f)(w, g, h, lr), f(w, g, h, lr)
    got, want = (got, want) if case == "held product" else ((got,), (want,))
    kinds = {type(p).__name__ for p in _recorded(list(got))}
    assert ("ProductUpdate" in kinds) == (case not in ("held product", "float16"))
    for a, b in zip(got, want):
        assert_allclose(a, b, dtype=mx.float16 if case == "float16" else mx.float32)


def test_product_update_transforms_as_its_graph():
    """`vmap` and `jvp` of a compiled update go through the node's fallback graph."""
    rng = np.random.default_rng(7)
    w, g, h = (mx.array(rng.standard_normal(s).astype(np.float32))
               for s in ((3, 128, 160), (64, 128), (64, 160)))

    def f(w):
        return w - 0.5 * (g.T @ h)

    assert_allclose(mx.vmap(mx.compile(f))(w), mx.vmap(f)(w), dtype=mx.float32)
    tangent = mx.ones((128, 160))
    got = mx.jvp(mx.compile(f), [w[0]], [tangent])
    want = mx.jvp(f, [w[0]], [tangent])
    for a, b in zip(got, want):
        assert_allclose(a[0], b[0], dtype=mx.float32)
