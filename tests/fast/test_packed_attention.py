"""packed_attention: values and gradients against float64 formulas (`packed_refs.py`), the
fallback graphs, transforms, memory, GPU nodes through a fake GPU, every rejected input."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from fast_refs import nodes
from nuvec.fast.packed_attention import PackedAttention, PackedAttentionVjp, record_packed
from nuvec.testing import check_grads, check_jvp_vjp, check_vmap
from packed_refs import (
    SEED_LENGTHS,
    arbitrary_tables,
    reference,
    reference_grad,
    rel,
    rope_tables,
)

# max|got − ref| / max|ref| bounds: (out, lse, gradient), as the seed's tests
BOUNDS = {"float32": (1e-5, 1e-5, 1e-5), "float64": (1e-12, 1e-12, 1e-12),
          "float16": (2e-2, 1e-2, 3e-2), "bfloat16": (2e-2, 1e-2, 3e-2)}
WINDOWS = [None, 8, 64]


def make(lengths, heads, d, dtype, tables="arbitrary", seed=0, p=None):
    """Random `qkv` and tables in `dtype` with their exact values in float64."""
    rng = np.random.default_rng(seed)
    t = sum(lengths)
    p = p or max(max(lengths, default=0), 1)
    qkv = mx.array(rng.uniform(-1, 1, (t, 3 * heads * d)), dtype)
    cos, sin = arbitrary_tables(rng, p, d) if tables == "arbitrary" else rope_tables(p, d)
    cos, sin = mx.array(cos, dtype), mx.array(sin, dtype)
    return (qkv, cos, sin), tuple(np.asarray(a).astype(np.float64) for a in (qkv, cos, sin))


def cotangents(lengths, heads, d, dtype, seed=1):
    rng = np.random.default_rng(seed)
    t = sum(lengths)
    dout = mx.array(rng.uniform(-1, 1, (t, heads * d)), dtype)
    dlse = mx.array(rng.uniform(-1, 1, (heads, t)), mx.float32)
    return dout, dlse


def attend(qkv, cos, sin, lengths, heads, window, scale=None):
    return mx.fast.packed_attention(qkv, lengths, cos, sin, heads=heads, window=window,
                                    scale=scale, return_lse=True)


def check(lengths, heads, d, dtype, window, tables="arbitrary", scale=None, grad=True):
    (qkv, cos, sin), (q64, c64, s64) = make(lengths, heads, d, dtype, tables)
    sc = float(np.float32(d ** -0.5 if scale is None else scale))  # kept as float32 bits
    want, want_lse = reference(q64, lengths, c64, s64, heads, sc, window)
    out, lse = attend(qkv, cos, sin, lengths, heads, window, scale)
    bound = BOUNDS[dtype.name]
    assert out.dtype is dtype and out.shape == want.shape
    assert lse.dtype is (mx.float64 if dtype is mx.float64 else mx.float32)
    assert rel(out, want) <= bound[0] and rel(lse, want_lse) <= bound[1]
    if grad:
        dout, dlse = cotangents(lengths, heads, d, dtype)
        _, (g,) = mx.vjp(lambda x: attend(x, cos, sin, lengths, heads, window, scale), [qkv],
                         [dout, dlse])
        want_g = reference_grad(q64, lengths, c64, s64, heads, sc, window,
                                np.asarray(dout).astype(np.float64), np.asarray(dlse))
        assert g.dtype is dtype and rel(g, want_g) <= bound[2]


@pytest.mark.parametrize("tables", ["arbitrary", "rope"])
@pytest.mark.parametrize("window", WINDOWS, ids=str)
@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16], ids=str)
def test_seed_cases(dtype, window, tables):
    check(SEED_LENGTHS, 2, 64, dtype, window, tables)


@pytest.mark.parametrize("lengths,window", [
    ([37], None), ([37], 5), ([1, 1, 1, 1], None), ([1, 1, 1], 0), ([6, 9, 3], 0),
    ([6, 9, 3], 1000), ([0, 4, 0, 3, 0], 2), ([12], 11),
], ids=["one", "one_window", "length_1", "length_1_window_0", "window_0", "wide_window",
        "empty_sequences", "window_just_covers"])
def test_edge_cases(lengths, window):
    check(lengths, 2, 16, mx.float32, window)


def test_head_dimension_128_and_a_scale():
    check([5, 40], 1, 128, mx.float32, 8, scale=0.3)


def test_float64_is_exact():
    check(SEED_LENGTHS, 2, 8, mx.float64, 8)


@pytest.mark.parametrize("window", [None, 3], ids=str)
def test_cpu_kernels_in_row_blocks(monkeypatch, window):
    """Scores capped to a few rows per block: dK and dV add up over the blocks."""
    from nuvec.backends.numpy import fast_packed

    monkeypatch.setattr(fast_packed, "SCORE_BYTES", 2 * 4 * 9 * 4)  # 2 heads, ~4 rows of 9
    check([9, 2, 7], 2, 8, mx.float32, window)


def test_cpu_backward_with_and_without_kept_probabilities(monkeypatch):
    """A backward node over a forward evaluated alone recomputes the probabilities; a
    backward recorded before its forward runs reuses the forward's: both match the formula."""
    from nuvec.backends.numpy import fast_packed

    lengths, heads, d = [5, 12, 1], 2, 8
    (qkv, cos, sin), (q64, c64, s64) = make(lengths, heads, d, mx.float32)
    dout, dlse = cotangents(lengths, heads, d, mx.float32)
    want = reference_grad(q64, lengths, c64, s64, heads, float(np.float32(d ** -0.5)), None,
                          np.asarray(dout).astype(np.float64), np.asarray(dlse))
    recomputed = []
    recompute = fast_packed.probabilities
    monkeypatch.setattr(fast_packed, "probabilities",
                        lambda *a: recomputed.append(1) or recompute(*a))
    kept = len(fast_packed.KEPT)
    out, lse = attend(qkv, cos, sin, lengths, heads, None)
    mx.eval(out, lse)
    assert len(fast_packed.KEPT) == kept  # a forward alone keeps nothing
    back = PackedAttentionVjp(heads, lengths, float(np.float32(d ** -0.5)), None)
    late = record_packed(back, [qkv, cos, sin, out, lse, dout, dlse])[0]
    mx.eval(late)
    assert len(recomputed) == len(lengths)
    _, (early,) = mx.vjp(lambda x: attend(x, cos, sin, lengths, heads, None), [qkv],
                         [dout, dlse])
    mx.eval(early)
    assert len(recomputed) == len(lengths)
    assert rel(late, want) <= 1e-5 and rel(early, want) <= 1e-5


def test_window_0_keeps_only_each_token():
    """A masked key weighs exactly zero: with window 0 each token's output is its value."""
    (qkv, cos, sin), _ = make([4, 7], 2, 8, mx.float32)
    out = mx.fast.packed_attention(qkv, [4, 7], cos, sin, heads=2, window=0)
    values = np.asarray(qkv).reshape(11, 3, 16)[:, 2]
    np.testing.assert_array_equal(np.asarray(out), values)


def test_wider_window_is_no_window():
    (qkv, cos, sin), _ = make([6, 9], 2, 8, mx.float32)
    a = mx.fast.packed_attention(qkv, [6, 9], cos, sin, heads=2, window=8)
    b = mx.fast.packed_attention(qkv, [6, 9], cos, sin, heads=2)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_positions_count_within_each_sequence():
    """With random angles, a pack equals its sequences attended one by one."""
    lengths = [3, 5, 4]
    (qkv, cos, sin), _ = make(lengths, 1, 8, mx.float32)
    out = np.asarray(mx.fast.packed_attention(qkv, lengths, cos, sin, heads=1))
    at = 0
    for n in lengths:
        alone = mx.fast.packed_attention(qkv[at:at + n], [n], cos, sin, heads=1)
        np.testing.assert_allclose(out[at:at + n], np.asarray(alone), rtol=1e-6, atol=1e-6)
        at += n


def test_lengths_as_arrays():
    (qkv, cos, sin), _ = make([3, 5], 1, 8, mx.float32)
    want = np.asarray(mx.fast.packed_attention(qkv, [3, 5], cos, sin, heads=1))
    for lengths in (mx.array([3, 5]), np.array([3, 5], np.int64), (3, 5)):
        got = mx.fast.packed_attention(qkv, lengths, cos, sin, heads=1)
        np.testing.assert_array_equal(np.asarray(got), want)


def test_empty_pack():
    qkv = mx.zeros((0, 3 * 2 * 8))
    out, lse = mx.fast.packed_attention(qkv, [0, 0], mx.zeros((1, 4)), mx.zeros((1, 4)),
                                        heads=2, return_lse=True)
    assert out.shape == (0, 16) and lse.shape == (2, 0)
    g = mx.grad(lambda x: mx.sum(mx.fast.packed_attention(x, [], mx.zeros((1, 4)),
                                                          mx.zeros((1, 4)), heads=2)))(qkv)
    assert g.shape == (0, 48)


# -- the fallback graphs -----------------------------------------------------------------
@pytest.mark.parametrize("window", [None, 0, 8], ids=str)
@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16], ids=str)
def test_fallback_graphs(dtype, window):
    lengths, heads, d = [5, 20, 1, 9], 2, 16
    (qkv, cos, sin), (q64, c64, s64) = make(lengths, heads, d, dtype)
    op = PackedAttention(heads, lengths, d ** -0.5, window)
    out, lse = op.fallback([qkv, cos, sin])
    want, want_lse = reference(q64, lengths, c64, s64, heads, op.scale, window)
    bound = BOUNDS[dtype.name]
    assert rel(out, want) <= bound[0] and rel(lse, want_lse) <= bound[1]
    dout, dlse = cotangents(lengths, heads, d, dtype)
    back = PackedAttentionVjp(heads, lengths, op.scale, window)
    (g,) = back.fallback([qkv, cos, sin, out, lse, dout, dlse])
    want_g = reference_grad(q64, lengths, c64, s64, heads, op.scale, window,
                            np.asarray(dout).astype(np.float64), np.asarray(dlse))
    assert rel(g, want_g) <= bound[2]


def test_fallback_graph_is_block_diagonal():
    """No array of the graph grows with T²: the largest holds one sequence's scores."""
    lengths, heads, d = [40] * 10, 2, 8
    (qkv, cos, sin), _ = make(lengths, heads, d, mx.float32)
    op = PackedAttention(heads, lengths, 0.5, None)
    out, lse = op.fallback([qkv, cos, sin])
    seen, stack, largest = set(), [out, lse], 0
    while stack:
        node = stack.pop()._node
        if id(node) not in seen:
            seen.add(id(node))
            largest = max([largest, *(int(np.prod(s)) for s in node.shapes)])
            stack.extend(node.inputs)
    assert largest == max(heads * 40 * 40, qkv.size)


def test_kernel_peak_memory_is_per_sequence():
    """NumPy reports its buffers to tracemalloc: the peak stays far below dense scores."""
    import tracemalloc

    lengths, heads, d = [128] * 32, 1, 8
    (qkv, cos, sin), _ = make(lengths, heads, d, mx.float32)
    mx.eval(qkv, cos, sin)
    out = mx.fast.packed_attention(qkv, lengths, cos, sin, heads=heads)
    tracemalloc.start()
    mx.eval(out)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    dense = heads * 4096 * 4096 * 4
    assert 16 * peak < dense


# -- transforms ----------------------------------------------------------------------------
SMALL = ([3, 5, 1], 2, 4)


@pytest.mark.parametrize("window", [None, 1], ids=str)
def test_finite_differences(window):
    lengths, heads, d = SMALL
    (qkv, cos, sin), _ = make(lengths, heads, d, mx.float64)
    check_grads(lambda x: attend(x, cos, sin, lengths, heads, window), [qkv])
    check_grads(lambda x, c, s: attend(x, c, s, lengths, heads, window), [qkv, cos, sin])
    check_jvp_vjp(lambda x: attend(x, cos, sin, lengths, heads, window), [qkv])


def test_grad_of_grad():
    lengths, heads, d = SMALL
    (qkv, cos, sin), _ = make(lengths, heads, d, mx.float64)
    w = mx.array(np.random.default_rng(3).standard_normal((9, heads * d)))

    def first(x):
        return mx.grad(lambda y: mx.sum(mx.fast.packed_attention(
            y, lengths, cos, sin, heads=heads) * w))(x)

    check_grads(first, [qkv], rtol=1e-4)


def test_vmap_over_packs():
    lengths, heads, d = SMALL
    rng = np.random.default_rng(4)
    qkv = mx.array(rng.standard_normal((3, 9, 3 * heads * d)), mx.float64)
    (_, cos, sin), _ = make(lengths, heads, d, mx.float64)
    f = lambda x: attend(x, cos, sin, lengths, heads, 1)  # noqa: E731
    check_vmap(f, [qkv])
    check_vmap(mx.grad(lambda x: mx.sum(attend(x, cos, sin, lengths, heads, 1)[0] ** 2)),
               [qkv])
    tables = mx.array(rng.standard_normal((3, 5, d // 2)), mx.float64)
    check_vmap(lambda x, c: attend(x, c, sin, lengths, heads, None), [qkv, tables])
    assert nodes(mx.vmap(f)(qkv)[0], PackedAttention) == 1


# -- nodes for a GPU kernel ---------------------------------------------------------------
def test_gpu_nodes(fake_gpu):
    lengths, heads, d = [5, 9], 2, 64
    (qkv, cos, sin), (q64, c64, s64) = make(lengths, heads, d, mx.bfloat16)
    with mx.stream(fake_gpu):
        out, lse = attend(qkv, cos, sin, lengths, heads, 3)
        dout, dlse = cotangents(lengths, heads, d, mx.bfloat16)
        _, (g,) = mx.vjp(lambda x: attend(x, cos, sin, lengths, heads, 3), [qkv], [dout, dlse])
    assert nodes(out, PackedAttention) == 1 and nodes(g, PackedAttentionVjp) == 1
    sc = float(np.float32(d ** -0.5))
    want, want_lse = reference(q64, lengths, c64, s64, heads, sc, 3)
    assert rel(out, want) <= 2e-2 and rel(lse, want_lse) <= 1e-2
    want_g = reference_grad(q64, lengths, c64, s64, heads, sc, 3,
                            np.asarray(dout).astype(np.float64), np.asarray(dlse))
    assert rel(g, want_g) <= 3e-2


def test_gpu_other_head_dimensions_build_the_fallback(fake_gpu):
    (qkv, cos, sin), _ = make([5, 9], 2, 16, mx.float32)
    with mx.stream(fake_gpu):
        out = mx.fast.packed_attention(qkv, [5, 9], cos, sin, heads=2)
    assert nodes(out, PackedAttention) == 0


# -- rejected inputs -----------------------------------------------------------------------
def _call(t=10, width=48, lengths=(4, 6), p=6, half=4, heads=2, dtype=mx.float32,
          table_dtype=mx.float32, sin_half=None, **options):
    qkv = mx.zeros((t, width), dtype) if t is not None else mx.zeros((width,), dtype)
    cos = mx.zeros((p, half), table_dtype)
    sin = mx.zeros((p, half if sin_half is None else sin_half), table_dtype)
    return mx.fast.packed_attention(qkv, lengths, cos, sin, heads=heads, **options)


BAD = [
    (dict(lengths=(4, 5)), ValueError,
     r"packed_attention: lengths \[4, 5\] sum to 9, but qkv has 10 tokens"),
    (dict(lengths=(12, -2)), ValueError,
     r"packed_attention: lengths must be non-negative, got -2 at index 1 of \[12, -2\]"),
    (dict(lengths=mx.array([4.0, 6.0])), TypeError,
     "packed_attention: lengths must be integers, got an array of float32"),
    (dict(lengths=mx.array([[4, 6]])), ValueError,
     r"packed_attention: lengths must be 1-D, got shape \(1, 2\)"),
    (dict(lengths=(4.0, 6)), TypeError, r"packed_attention: lengths must be integers, got 4.0"),
    (dict(lengths=10), TypeError,
     "packed_attention: lengths must be a sequence of ints or a 1-D integer array, got int"),
    (dict(p=5), ValueError,
     r"packed_attention: the tables have 5 positions, fewer than the longest sequence \(6\)"),
    (dict(half=8), ValueError, r"packed_attention: cos and sin must both be \[P, D/2\] = "
     r"\[P, 4\], got shapes \(6, 8\) and \(6, 8\)"),
    (dict(sin_half=3), ValueError, r"packed_attention: cos and sin must both be \[P, D/2\] = "
     r"\[P, 4\], got shapes \(6, 4\) and \(6, 3\)"),
    (dict(width=30, half=2), ValueError,
     r"packed_attention: the head dimension D = 5 \(width 30 = 3·2·5\) must be even"),
    (dict(width=50), ValueError,
     r"packed_attention: qkv width 50 is not 3·heads·D for heads=2 \(shape \(10, 50\)\)"),
    (dict(t=None), ValueError,
     r"packed_attention: qkv must be 2-D \[T, 3·heads·D\], got shape \(48,\)"),
    (dict(dtype=mx.int32), TypeError, "packed_attention: qkv must be floating-point, got int32"),
    (dict(table_dtype=mx.int32), TypeError,
     "packed_attention: cos must be floating-point, got int32"),
    (dict(window=-1), ValueError, "packed_attention: window must be None or at least 0, got -1"),
    (dict(window=2.0), TypeError, "packed_attention: window must be None or an int, got float"),
    (dict(heads=0), ValueError, "packed_attention: heads must be at least 1, got 0"),
    (dict(heads=2.0), TypeError, "packed_attention: heads must be an int, got float"),
    (dict(scale="a"), TypeError, "packed_attention: scale must be a real number, got str"),
]


@pytest.mark.parametrize("kwargs,error,message", BAD, ids=[m[:60] for _, _, m in BAD])
def test_rejected_inputs(kwargs, error, message):
    with pytest.raises(error, match="^" + message):
        _call(**kwargs)


def test_a_node_built_directly_with_invalid_inputs_is_rejected():
    op = PackedAttention(2, (4, 6), 0.5, None)
    with pytest.raises(ValueError, match="^packed_attention: invalid inputs"):
        mx.fast.record_or_fallback(op, [mx.zeros((10, 48)), mx.zeros((3, 4)), mx.zeros((3, 4))])
