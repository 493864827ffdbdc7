"""rope and norm_rope: values per dtype and branch, checks, derivatives, batching."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
import fast_refs as ref
from fast_refs import DTYPE_IDS, DTYPES, close, nodes, sample
from nuvec.fast.rope import NormRope, Rope
from nuvec.graph.array import record
from nuvec.testing import check_grads, check_jvp_vjp

TOL = {"float16": (4e-3, 4e-3), "bfloat16": (3e-2, 3e-2)}


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("traditional", [False, True], ids=["halves", "traditional"])
@pytest.mark.parametrize("shape, dims", [((2, 3, 5, 8), 8), ((1, 4, 6), 4), ((2, 1, 2, 3, 6), 2)],
                         ids=["full", "partial-3d", "5d"])
def test_rope_with_base(dtype, traditional, shape, dims):
    rng = np.random.default_rng(0)
    x, xr = sample(rng, shape, dtype)
    y = mx.fast.rope(x, dims, traditional=traditional, base=100.0, scale=0.5, offset=3)
    close(y, ref.rope(xr, dims, traditional, 100.0, 0.5, 3), dtype, TOL)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("traditional", [False, True], ids=["halves", "traditional"])
def test_rope_with_freqs_and_per_row_offsets(dtype, traditional):
    rng = np.random.default_rng(1)
    x, xr = sample(rng, (3, 2, 4, 8), dtype)
    freqs = np.array([1.0, 3.0, 10.0, 40.0])
    offset = np.array([0, 5, 2])
    y = mx.fast.rope(x, 8, traditional=traditional, base=None, scale=1.0,
                     offset=mx.array(offset), freqs=mx.array(freqs))
    close(y, ref.rope(xr, 8, traditional, None, 1.0, offset, freqs), dtype, TOL)


@pytest.mark.parametrize("traditional", [False, True], ids=["halves", "traditional"])
def test_rope_over_many_batches_of_a_transposed_view_on_every_thread_count(traditional):
    # the CPU kernel rotates whole batches of heads at once, threads splitting them anywhere
    rng = np.random.default_rng(9)
    stored = rng.standard_normal((64, 128, 3, 32)).astype(np.float32)  # [batch, T, heads, D]
    x = mx.array(stored).transpose(0, 2, 1, 3)
    want = ref.rope(stored.transpose(0, 2, 1, 3).astype(np.float64), 32, traditional, 500.0,
                    1.0, 2)
    outs, saved = [], mx.get_num_threads()
    try:
        for threads in (1, 2, 3):
            mx.set_num_threads(threads)
            outs.append(np.asarray(mx.fast.rope(x, 32, traditional=traditional, base=500.0,
                                                scale=1.0, offset=2)))
    finally:
        mx.set_num_threads(saved)
    np.testing.assert_allclose(outs[0], want, rtol=1e-4, atol=1e-4)  # (float32 angles)
    for other in outs[1:]:
        np.testing.assert_array_equal(outs[0], other)


@pytest.mark.parametrize("offset", [mx.array(4, mx.int64), mx.array([4], mx.uint8), 4],
                         ids=["int64", "uint8-1d", "int"])
def test_rope_offset_kinds(offset):
    rng = np.random.default_rng(2)
    x, xr = sample(rng, (2, 3, 4), mx.float32)
    y = mx.fast.rope(x, 4, traditional=False, base=10000.0, scale=1.0, offset=offset)
    close(y, ref.rope(xr, 4, False, 10000.0, 1.0, 4), mx.float32, TOL)


def test_rope_fallback_graph_agrees():
    rng = np.random.default_rng(3)
    x, xr = sample(rng, (2, 2, 3, 8), mx.float32)
    for trad in (False, True):
        op = Rope(6, trad, 10.0, 1.0)
        (y,) = op.fallback([x, mx.array(2)])
        close(y, ref.rope(xr, 6, trad, 10.0, 1.0, 2), mx.float32, TOL)
        (z,) = op.inverse().fallback([y, mx.array(2)])
        close(z, xr, mx.float32, TOL)


X3 = mx.ones((2, 3, 4))


@pytest.mark.parametrize("call, message, error", [
    (lambda: mx.fast.rope(mx.ones((3, 4)), 4, traditional=False, base=1.0, scale=1.0, offset=0),
     r"rope: the input needs at least 3 dimensions, got \(3, 4\)", ValueError),
    (lambda: mx.fast.rope(mx.array(np.ones((1, 2, 4), np.int32)), 4, traditional=False,
                          base=1.0, scale=1.0, offset=0),
     "rope: unsupported dtype int32", TypeError),
    (lambda: mx.fast.rope(X3, 4, traditional=False, base=1.0, scale=1.0, offset=mx.zeros((3,))),
     r"rope: offset must be a scalar or have 2 elements, got shape \(3,\)", ValueError),
    (lambda: mx.fast.rope(X3, 4, traditional=False, base=1.0, scale=1.0,
                          offset=mx.zeros((1, 1), mx.int32)),
     r"rope: offset must be a scalar or have 2 elements, got shape \(1, 1\)", ValueError),
    (lambda: mx.fast.rope(X3, 4, traditional=False, base=1.0, scale=1.0, offset=mx.array(1.0)),
     "rope: offset must be an integer, got float32", TypeError),
    (lambda: mx.fast.rope(X3, 3, traditional=False, base=1.0, scale=1.0, offset=0),
     "rope: dims must be even, positive and at most 4, got 3", ValueError),
    (lambda: mx.fast.rope(X3, 6, traditional=False, base=1.0, scale=1.0, offset=0),
     "rope: dims must be even, positive and at most 4, got 6", ValueError),
    (lambda: mx.fast.rope(X3, 0, traditional=False, base=1.0, scale=1.0, offset=0),
     "rope: dims must be even, positive and at most 4, got 0", ValueError),
    (lambda: mx.fast.rope(X3, 4, traditional=False, base=None, scale=1.0, offset=0),
     "rope: exactly one of base and freqs must be given", ValueError),
    (lambda: mx.fast.rope(X3, 4, traditional=False, base=1.0, scale=1.0, offset=0,
                          freqs=mx.ones((2,))),
     "rope: exactly one of base and freqs must be given", ValueError),
    (lambda: mx.fast.rope(X3, 4, traditional=False, base=None, scale=1.0, offset=0,
                          freqs=mx.ones((3,))),
     r"rope: freqs must be 1-D with 2 elements, got shape \(3,\)", ValueError),
    (lambda: mx.fast.norm_rope(mx.ones((1, 1, 2, 4)), dims=4, base=1.0, cache=mx.ones((1, 1, 3, 4)),
                               offset=2),
     r"norm_rope: a cache of shape \(1, 1, 3, 4\) cannot take \(1, 1, 2, 4\) at position 2",
     ValueError),
    (lambda: mx.fast.norm_rope(mx.ones((1, 1, 2, 4)), dims=-2, base=1.0),
     "norm_rope: dims must not be negative, got -2", ValueError),
    (lambda: mx.fast.norm_rope(mx.ones((1, 1, 2, 4)), mx.ones((4,)), dims=4, base=1.0),
     "norm_rope: a weight needs eps", ValueError),
    (lambda: mx.fast.norm_rope(mx.ones((1, 1, 2, 4)), dims=4, base=1.0, offset=-1),
     "norm_rope: offset must be a non-negative int, got -1", ValueError),
    (lambda: mx.fast.norm_rope(mx.ones((1, 1, 2, 4)), mx.ones((3,)), 1e-5, dims=4, base=1.0),
     r"norm_rope: weight must be 1-D with 4 elements, got shape \(3,\)", ValueError),
    (lambda: mx.fast.norm_rope(mx.ones((1, 1, 2, 4)), dims=4),
     "rope: exactly one of base and freqs must be given", ValueError),
], ids=lambda v: v if isinstance(v, str) else None)
def test_rejected_inputs(call, message, error):
    with pytest.raises(error, match="^" + message):
        call()


CPU = mx.default_stream(mx.cpu)
X4 = mx.ones((1, 2, 3, 4))


@pytest.mark.parametrize("op, inputs", [
    (Rope(4, False, 1.0, 1.0), [X3, mx.array(0.5)]),
    (Rope(4, False, 1.0, 1.0), [mx.ones((2, 4)), mx.array(0)]),
    (Rope(4, False, 1.0, 1.0), [X3, mx.zeros((3,), mx.int32)]),
    (Rope(5, False, 1.0, 1.0), [X3, mx.array(0)]),
    (Rope(4, False, 1.0, 1.0), [X3, mx.array(0), mx.ones((2,), mx.float16)]),
    (NormRope(1e-5, 4, False, 1.0, 1.0, 0, False), [X4, mx.ones((3,))]),
    (NormRope(None, 4, False, 1.0, 1.0, 0, False), [X4, mx.ones((4,))]),
    (NormRope(None, 4, False, 1.0, 1.0, 2, True), [mx.ones((1, 2, 4, 4)), X4, mx.array(1.0)]),
    (NormRope(None, 4, False, 1.0, 1.0, 0, False), [mx.ones((1, 3, 4)), mx.array(1.0)]),
    (Rope(4, False, 1.0, 1.0), [X3, mx.zeros((1, 1), mx.int32)]),  # offset of 2 dimensions
    (Rope(4, False, 1.0, 1.0), [X3, mx.array(0, mx.int64)]),  # offset not int32/uint32
    (Rope(6, False, 1.0, 1.0), [X3, mx.array(0)]),  # more dims than features
    (Rope(0, False, 1.0, 1.0), [X3, mx.array(0)]),
    (Rope(4, False, 1.0, 1.0), [X3, mx.array(0), mx.ones((3,))]),  # freqs of dims / 2
    (Rope(4, False, 1.0, 1.0), [X3, mx.array(0), mx.ones((1, 2))]),
    (NormRope(None, 4, False, 1.0, 1.0, 0, False), [mx.ones((1, 1, 2, 1026)), mx.array(1.0)]),
    (NormRope(None, 4, False, 1.0, 1.0, 0, True),
     [mx.ones((1, 2, 4, 4), mx.float16), X4, mx.array(1.0)]),  # x's dtype is not the cache's
    (NormRope(None, 4, False, 1.0, 1.0, 0, True), [mx.ones((1, 3, 4, 4)), X4, mx.array(1.0)]),
    (NormRope(None, 4, False, 1.0, 1.0, 0, True), [mx.ones((1, 2, 4, 6)), X4, mx.array(1.0)]),
    (NormRope(None, 4, False, 1.0, 1.0, 0, True), [mx.ones((2, 4, 4)), X4, mx.array(1.0)]),
    (NormRope(None, 4, False, 1.0, 1.0, 0, False), [X4, mx.array(1.0, mx.float16)]),
    (NormRope(None, 3, False, 1.0, 1.0, 0, False), [X4, mx.array(1.0)]),
    (NormRope(None, 4, False, 1.0, 1.0, 0, False), [X4, mx.array(1.0), mx.ones((2,),
                                                                               mx.float16)]),
    (NormRope(None, 4, False, 1.0, 1.0, 2**31 - 3, False), [X4, mx.array(1.0)]),  # past i32
    (NormRope(None, 4, False, 1.0, 1.0, -1, False), [X4, mx.array(1.0)]),
], ids=lambda v: v.op if hasattr(v, "op") else None)
def test_a_node_built_directly_with_invalid_inputs_is_rejected(op, inputs):
    with pytest.raises(ValueError, match=f"^{op.op}: invalid inputs"):
        record(op, inputs, CPU)


@pytest.mark.parametrize("op, inputs", [
    (Rope(4, False, 1.0, 1.0), [mx.array(1.0), mx.array(0)]),
    (NormRope(None, 4, False, 1.0, 1.0, 0, False), [mx.array(1.0), mx.array(1.0)]),
], ids=["rope", "norm_rope"])
def test_a_0d_first_input_is_rejected_as_the_arity(op, inputs):
    with pytest.raises(ValueError, match=f"^{op.op}: 2 inputs expected, got 2"):
        record(op, inputs, CPU)


def test_norm_rope_position_overflow():
    # The seed's positions are `usize`; `offset + L` past 2**64 - 1 overflows.
    op = NormRope(None, 4, False, 1.0, 1.0, 2**64 - 2, False)
    with pytest.raises(ValueError, match=f"^norm_rope: position {2**64 - 2} overflows"):
        record(op, [X4, mx.array(1.0)], CPU)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("normed", [True, False], ids=["norm", "no-norm"])
@pytest.mark.parametrize("cached", [True, False], ids=["cache", "no-cache"])
def test_norm_rope(dtype, normed, cached):
    rng = np.random.default_rng(4)
    x, xr = sample(rng, (2, 2, 3, 8), dtype)
    w, wr = sample(rng, (8,), dtype) if normed else (None, None)
    h = ref.rms_norm(xr, wr, 1e-5) if normed else xr
    want = ref.rope(h, 8, True, 100.0, 1.0, 2)
    cache = None
    if cached:
        cache, cr = sample(rng, (2, 2, 6, 8), dtype)
        cr[:, :, 2:5] = want
        want = cr
    y = mx.fast.norm_rope(x, w, 1e-5 if normed else None, dims=8, traditional=True,
                          base=100.0, offset=2, cache=cache)
    close(y, want, dtype, TOL)


@pytest.mark.parametrize("cached", [True, False], ids=["cache", "no-cache"])
def test_norm_rope_node_and_fallback_agree(cached, fake_gpu):
    rng = np.random.default_rng(5)
    x, xr = sample(rng, (1, 2, 3, 8), mx.float32)
    w, wr = sample(rng, (8,), mx.float32)
    freqs = mx.array([1.0, 2.0, 4.0])
    cache, cr = sample(rng, (1, 2, 4, 8), mx.float32) if cached else (None, None)
    want = ref.rope(ref.rms_norm(xr, wr, 1e-5), 6, False, None, 2.0, 1, [1.0, 2.0, 4.0])
    if cached:
        cr[:, :, 1:4] = want
        want = cr
    with mx.stream(fake_gpu):
        y = mx.fast.norm_rope(x, w, 1e-5, dims=6, scale=2.0, offset=1, freqs=freqs, cache=cache)
        assert isinstance(y.primitive, NormRope)
    close(y, want, mx.float32, TOL)


def test_rope_gradient_is_the_inverse_rotation():
    rng = np.random.default_rng(6)
    x = mx.array(rng.standard_normal((2, 3, 4, 6)), mx.float64)

    def f(x):
        return mx.fast.rope(x, 4, traditional=True, base=10.0, scale=1.0,
                            offset=mx.array([1, 3]))

    check_grads(f, [x])
    check_jvp_vjp(f, [x])
    g = mx.vjp(f, [x], [mx.ones((2, 3, 4, 6), mx.float64)])[1][0]
    assert isinstance(g.primitive, Rope) and not g.primitive.forward


def test_rope_jvp_with_respect_to_the_frequencies():
    """The frequencies' tangent goes through the fallback graph (the seed's jvp rule);
    the reference is a central difference of the float64 formula."""
    rng = np.random.default_rng(10)
    x = mx.array(rng.standard_normal((1, 2, 3, 4)), mx.float64)
    f0, t, h = np.array([1.5, 4.0]), np.array([0.3, -0.7]), 1e-5

    def f(freqs):
        return mx.fast.rope(x, 4, traditional=False, base=None, scale=1.0, offset=2,
                            freqs=freqs)

    _, (tangent,) = mx.jvp(f, [mx.array(f0, mx.float32)], [mx.array(t, mx.float32)])
    xr = np.asarray(x)
    want = (ref.rope(xr, 4, False, None, 1.0, 2, f0 + h * t)
            - ref.rope(xr, 4, False, None, 1.0, 2, f0 - h * t)) / (2 * h)
    np.testing.assert_allclose(np.asarray(tangent), want, rtol=1e-6, atol=1e-7)


def test_no_gradient_with_respect_to_the_frequencies():
    x = mx.ones((1, 2, 4))
    with pytest.raises(ValueError, match="^rope: no gradient with respect to the offset or freq"):
        mx.grad(lambda f: mx.sum(mx.fast.rope(x, 4, traditional=False, base=None, scale=1.0,
                                              offset=0, freqs=f)))(mx.ones((2,)))


def test_no_gradient_with_respect_to_the_offset():
    x = mx.ones((1, 2, 4))
    with pytest.raises(ValueError, match="^rope: no gradient with respect to the offset or freq"):
        mx.grad(lambda o: mx.sum(mx.fast.rope(x, 4, traditional=False, base=10.0, scale=1.0,
                                              offset=mx.astype(o, mx.int32))))(mx.array(1.0))


def test_norm_rope_derivatives():
    rng = np.random.default_rng(7)
    x, w, c = (mx.array(rng.standard_normal(s), mx.float64) for s in
               ((1, 2, 2, 4), (4,), (1, 2, 3, 4)))

    def f(x, w, c):
        return mx.fast.norm_rope(x, w, 1e-5, dims=4, base=10.0, offset=1, cache=c)

    check_grads(f, [x, w, c])
    check_jvp_vjp(f, [x, w, c])


def test_vmap_keeps_one_rope_node_with_the_batch_axis_first():
    rng = np.random.default_rng(8)
    x = mx.array(rng.standard_normal((2, 3, 5, 4)), mx.float32)

    def f(row):
        return mx.fast.rope(row, 4, traditional=False, base=10.0, scale=1.0, offset=1)

    y = mx.vmap(f, in_axes=2)(x)
    assert nodes(y, Rope) == 1
    xr = np.moveaxis(np.asarray(x, np.float64), 2, 0)
    close(y, ref.rope(xr, 4, False, 10.0, 1.0, 1), mx.float32, TOL)


def test_vmap_with_per_row_and_batched_offsets_batches_the_fallback():
    from nuvec.testing import check_vmap

    x = mx.array(np.random.default_rng(9).standard_normal((3, 2, 2, 4, 6)), mx.float32)
    per_row = mx.array([1, 4])
    check_vmap(lambda x: mx.fast.rope(x, 4, traditional=True, base=10.0, scale=1.0,
                                      offset=per_row), [x], in_axes=0)
    offsets = mx.array([[1, 2], [3, 4], [0, 0]])
    check_vmap(lambda x, o: mx.fast.rope(x, 4, traditional=False, base=10.0, scale=1.0,
                                         offset=o), [x, offsets], in_axes=(0, 0))


def test_rope_kept_angle_tables_follow_every_parameter(monkeypatch):
    """The CPU keeps rope's angle tables per parameters and positions: calls differing in one of
    them each get their own tables, and a repeated call the same values."""
    from nuvec.backends.common import fast as kernels

    tables = kernels._AngleTables()
    monkeypatch.setattr(kernels, "_angle_tables", tables)
    rng = np.random.default_rng(4)
    x, xr = sample(rng, (2, 3, 5, 8), mx.float32)
    x64, xr64 = sample(rng, (2, 3, 5, 8), mx.float64)
    freqs = np.array([1.0, 3.0, 10.0, 40.0])
    cases = [  # (input, its float64 values, dims, traditional, base, scale, offset, freqs)
        (x, xr, 8, False, 100.0, 0.5, 3, None), (x, xr, 8, False, 100.0, 0.5, 4, None),
        (x, xr, 8, False, 10.0, 0.5, 3, None), (x, xr, 8, False, 100.0, 1.0, 3, None),
        (x, xr, 6, False, 100.0, 0.5, 3, None), (x, xr, 8, True, 100.0, 0.5, 3, None),
        (x, xr, 8, False, None, 0.5, 3, freqs), (x, xr, 8, False, None, 0.5, 3, freqs * 2),
        (x, xr, 8, False, 100.0, 0.5, np.array([3, 1]), None),
        (x64, xr64, 8, False, 100.0, 0.5, 3, None), (x[:, :, :4], xr[:, :, :4], 8, False, 100.0,
                                                     0.5, 3, None),
    ]
    for _ in range(2):
        for xi, xri, dims, trad, base, scale, offset, f in cases:
            y = mx.fast.rope(xi, dims, traditional=trad, base=base, scale=scale,
                             offset=mx.array(offset), freqs=None if f is None else mx.array(f))
            close(y, ref.rope(xri, dims, trad, base, scale, offset, f), xi.dtype, TOL)
    assert len(tables.tables) == len(cases)
    c, s = next(iter(tables.tables.values()))
    assert not c.flags.writeable and not s.flags.writeable
    # the inverse rotation (the gradient) has tables of its own
    g = mx.grad(lambda a: mx.sum(mx.fast.rope(a, 8, traditional=False, base=100.0, scale=0.5,
                                                offset=3) * mx.array(xr)))(x)
    close(g, ref.rope(xr, 8, False, 100.0, 0.5, 3, inverse=True), mx.float32, TOL)
    assert len(tables.tables) == len(cases) + 1


def test_rope_kept_angle_tables_stay_under_their_limit(monkeypatch):
    from nuvec.backends.common import fast as kernels

    tables = kernels._AngleTables()
    monkeypatch.setattr(kernels, "_angle_tables", tables)
    monkeypatch.setattr(kernels._AngleTables, "LIMIT", 3000)  # two tables of 5 x 32 float32
    rng = np.random.default_rng(5)
    x, xr = sample(rng, (1, 2, 5, 32), mx.float32)
    for offset in range(4):
        y = mx.fast.rope(x, 32, traditional=False, base=10000.0, scale=1.0, offset=offset)
        close(y, ref.rope(xr, 32, False, 10000.0, 1.0, offset), mx.float32, TOL)
        assert tables.nbytes <= 3000
    assert len(tables.tables) == 2 and tables.nbytes == 2 * 2 * 5 * 32 * 4
    big, _ = sample(rng, (1, 1, 20, 32), mx.float32)  # tables over the limit are not kept
    mx.eval(mx.fast.rope(big, 32, traditional=False, base=10000.0, scale=1.0, offset=0))
    assert len(tables.tables) == 2
    monkeypatch.setattr(kernels._AngleTables, "ENTRIES", 1)  # nor more than ENTRIES tables
    mx.eval(mx.fast.rope(x, 32, traditional=False, base=10000.0, scale=1.0, offset=9))
    assert len(tables.tables) == 1


@pytest.mark.parametrize("shape", [(1, 2, 0, 8), (0, 2, 3, 8)], ids=str)
@pytest.mark.parametrize("traditional", [False, True])
def test_empty_input_rotates_to_empty(shape, traditional):
    def f(x):
        return mx.fast.rope(x, 8, traditional=traditional, base=10000.0, scale=1.0, offset=0)

    x = mx.zeros(shape)
    assert f(x).shape == shape and f(x).size == 0
    assert mx.grad(lambda x: mx.sum(f(x)))(x).shape == shape
