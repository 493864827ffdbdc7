"""Contractions against NumPy: einsum (explicit, implicit, ellipsis, traces, diagonals),
einsum_path, tensordot, inner, outer, vecdot, kron; dtypes, special shapes, errors."""

from __future__ import annotations

import string

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nuvec as mx
from nuvec.graph import dtypes as dt
from nuvec.testing import assert_allclose

RNG = np.random.default_rng(0)


def arrays(*shapes, dtype=np.float64):
    return [RNG.standard_normal(s).astype(dtype) for s in shapes]


EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ba,ca", [(3, 4), (2, 4)]),
    ("ii", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("iji->j", [(3, 2, 3)]),
    ("iij->ji", [(3, 3, 2)]),
    ("ij->", [(3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ab,bc,cd,de->ae", [(2, 3), (3, 4), (4, 2), (2, 3)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("...ij,jk", [(2, 3, 4), (4, 5)]),
    ("i...->...", [(3, 2, 2)]),
    ("...,...->...", [(2, 3), (3,)]),
    ("ijk,kji->", [(2, 3, 4), (4, 3, 2)]),
    ("aab,bc->ac", [(3, 3, 4), (4, 2)]),
    ("ij,kl->", [(2, 3), (4, 5)]),
    ("ij,jk->ik", [(0, 4), (4, 5)]),
    ("ij,jk->ik", [(3, 0), (0, 5)]),
    (",->", [(), ()]),
    ("i,->i", [(3,), ()]),
]

# A size-1 dimension of any label stretches to the label's size in the other operands.
STRETCH_CASES = [
    ("ab,bc->c", [(5, 1), (8, 2)]),
    ("ij,ij->ij", [(2, 1), (2, 3)]),
    ("ij,jk", [(2, 1), (3, 2)]),
    ("abcd,cdab->abcd", [(5, 1, 3, 1), (1, 7, 1, 2)]),
    ("ab,bc->ac", [(2, 1), (3, 4)]),
    ("ab,ab->", [(1, 3), (2, 1)]),
    ("ab,bc,cd->ad", [(2, 1), (3, 1), (4, 5)]),
    ("i,i,i->", [(1,), (3,), (1,)]),
    ("ii,i->i", [(1, 1), (3,)]),
    ("ii,i", [(3, 3), (1,)]),
    ("...ij,jk", [(2, 1, 1), (3, 4)]),
    ("ab,bc->ac", [(2, 1), (0, 4)]),
]


@pytest.mark.parametrize("subscripts,shapes", EINSUM_CASES, ids=[c[0] or "scalars"
                                                                 for c in EINSUM_CASES])
def test_einsum_matches_numpy(subscripts, shapes):
    operands = arrays(*shapes)
    out = mx.einsum(subscripts, *[mx.array(x, mx.float64) for x in operands])
    assert_allclose(out, np.einsum(subscripts, *operands), dtype=dt.float64)


@pytest.mark.parametrize("subscripts,shapes", STRETCH_CASES, ids=str)
@pytest.mark.parametrize("d", [dt.float64, dt.int32], ids=lambda d: d.name)
def test_einsum_stretches_size_one_axes(subscripts, shapes, d):
    operands = [RNG.integers(-3, 4, s).astype(np.float64) for s in shapes]
    out = mx.einsum(subscripts, *[mx.array(x, d) for x in operands])
    assert_allclose(out, np.einsum(subscripts, *operands).astype(d.np), dtype=d)


@pytest.mark.parametrize("subscripts,shapes", STRETCH_CASES, ids=str)
def test_einsum_grad_sums_stretched_axes_back(subscripts, shapes):
    operands = arrays(*shapes)
    w = RNG.standard_normal(np.einsum(subscripts, *operands).shape)

    def loss(k, x):
        return np.sum(np.einsum(subscripts, *operands[:k], x, *operands[k + 1:]) * w)

    grads = mx.grad(lambda *xs: mx.sum(mx.einsum(subscripts, *xs) * mx.array(w, mx.float64)),
                    argnums=tuple(range(len(shapes))))(
        *[mx.array(x, mx.float64) for x in operands])
    for k, (g, x) in enumerate(zip(grads, operands)):
        # the loss is linear in each operand, so central differences are exact
        steps = np.eye(x.size).reshape(x.size, *x.shape)
        numeric = [(loss(k, x + e) - loss(k, x - e)) / 2 for e in steps]
        assert_allclose(g, np.reshape(numeric, x.shape), dtype=dt.float64)


@pytest.mark.parametrize("d", [dt.int32, dt.int64, dt.uint8, dt.bool_, dt.float16, dt.bfloat16,
                               dt.float32, dt.complex64], ids=lambda d: d.name)
def test_einsum_dtypes(d):
    a = RNG.integers(0, 3, (3, 4)).astype(d.np)
    b = RNG.integers(0, 3, (4, 2)).astype(d.np)
    out = mx.einsum("ij,jk->ik", mx.array(a, d), mx.array(b, d))
    wide = np.complex128 if d is dt.complex64 else np.float64
    expected = np.einsum("ij,jk->ik", a.astype(wide), b.astype(wide))
    if d is dt.bool_:
        expected = expected > 0
    elif d.is_integer:
        expected = expected.astype(d.np)
    assert_allclose(out, expected, dtype=d)


def test_einsum_promotes_and_accepts_views():
    a, b = arrays((4, 3), (4, 5), dtype=np.float32)
    view = mx.array(a).T
    out = mx.einsum("ij,jk->ik", view, mx.array(b[:, ::2], mx.float16))
    assert_allclose(out, np.einsum("ij,jk->ik", a.T, b[:, ::2]), dtype=dt.float32,
                    rtol=1e-3, atol=1e-3)


@settings(max_examples=50, deadline=None)
@given(st.data())
def test_einsum_fuzz(data):
    letters = "abcde"
    sizes = {c: data.draw(st.integers(1, 3)) for c in letters}
    n_ops = data.draw(st.integers(1, 3))
    terms = [data.draw(st.lists(st.sampled_from(letters), min_size=0, max_size=3))
             for _ in range(n_ops)]
    used = sorted(set("".join("".join(t) for t in terms)))
    output = data.draw(st.permutations(used)).__iter__()
    keep = data.draw(st.integers(0, len(used)))
    out_labels = "".join(list(output)[:keep])
    subscripts = ",".join("".join(t) for t in terms) + "->" + out_labels
    operands = []
    for t in terms:
        # a label may have size 1 in some operands: it stretches to its size in the others
        own = {c: data.draw(st.sampled_from([sizes[c], 1])) for c in sorted(set(t))}
        operands.append(RNG.standard_normal([own[c] for c in t]))
    out = mx.einsum(subscripts, *[mx.array(x, mx.float64) for x in operands])
    assert_allclose(out, np.einsum(subscripts, *operands), dtype=dt.float64)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_einsum_fuzz_ellipsis_and_repeated_labels(data):
    sizes = {c: data.draw(st.integers(1, 3)) for c in "abc"}
    batch = data.draw(st.lists(st.integers(1, 3), max_size=2), label="batch")
    terms, operands = [], []
    for _ in range(data.draw(st.integers(1, 3))):
        labels = "".join(data.draw(st.lists(st.sampled_from("abc"), max_size=3)))
        at = data.draw(st.integers(0, len(labels)))
        # each operand holds a trailing part of the batch dims, some of them broadcast as 1
        held = batch[len(batch) - data.draw(st.integers(0, len(batch))):]
        dims = [data.draw(st.sampled_from([d, 1])) for d in held]
        terms.append(labels[:at] + "..." + labels[at:])
        operands.append(RNG.standard_normal([sizes[c] for c in labels[:at]] + dims
                                            + [sizes[c] for c in labels[at:]]))
    subscripts = ",".join(terms)
    if data.draw(st.booleans(), label="explicit"):
        used = sorted(set(subscripts) - set(".,"))
        out = data.draw(st.permutations(used))[:data.draw(st.integers(0, len(used)))]
        at = data.draw(st.integers(0, len(out)))
        subscripts += "->" + "".join(out[:at]) + "..." + "".join(out[at:])
    out = mx.einsum(subscripts, *[mx.array(x, mx.float64) for x in operands])
    assert_allclose(out, np.einsum(subscripts, *operands), dtype=dt.float64)


def test_einsum_path():
    a, b, c = mx.zeros((5, 8)), mx.zeros((8, 3)), mx.zeros((3, 7))
    assert mx.einsum_path("ij,jk,kl", a, b, c)[0] == [(0, 1), (0, 1)]
    b2, c2 = mx.zeros((8, 10)), mx.zeros((10, 7))
    path, info = mx.einsum_path("ij,jk,kl", a, b2, c2)
    assert path == [(1, 2), (0, 1)]
    assert "ij,jk,kl->il" in info
    assert mx.einsum_path("ii->i", mx.zeros((5, 5)))[0] == [(0,)]
    assert mx.einsum_path("ij,jk -> ijk", a, b)[0] == [(0, 1)]


@pytest.mark.parametrize("subscripts,shapes,path,naive", [
    ("ab,bc->c", [(5, 1), (8, 2)], [(0, 1)], 160),
    ("ij,jk,kl->il", [(5, 1), (8, 10), (1, 7)], [(1, 2), (0, 1)], 8400),
    ("ab,bc,ca->", [(1, 6), (6, 1), (9, 9)], [(0, 2), (0, 1)], 1458),
    ("abc,cd,de,b->ae", [(2, 1, 4), (1, 6), (6, 3), (5,)], [(0, 3), (0, 1), (0, 1)], 2880),
    ("ij,jk,kl,lm", [(4, 1), (1, 9), (1, 1), (9, 6)], [(1, 2), (1, 2), (0, 1)], 7776),
], ids=str)
def test_einsum_path_stretches_size_one_axes(subscripts, shapes, path, naive):
    # paths and naive FLOP counts as MLX 0.32.4 gives them (sizes after stretching)
    got, info = mx.einsum_path(subscripts, *[mx.zeros(s) for s in shapes])
    assert got == path
    assert f"Naive FLOP count:  {naive:.3e}" in info


@pytest.mark.parametrize("axes,shapes", [
    (2, [(2, 3, 4), (3, 4, 5)]),
    (0, [(2, 3), (4,)]),
    (1, [(3,), (3, 2)]),
    (([0, 2], [1, 0]), [(3, 2, 4), (4, 3, 5)]),
    (([1], [0]), [(2, 3), (3, 2)]),
    ((-1, 0), [(2, 3), (3, 2)]),
])
def test_tensordot(axes, shapes):
    a, b = arrays(*shapes)
    out = mx.tensordot(mx.array(a, mx.float64), mx.array(b, mx.float64), axes=axes)
    assert_allclose(out, np.tensordot(a, b, axes=axes), dtype=dt.float64)


@pytest.mark.parametrize("shapes", [[(3,), (3,)], [(2, 3), (4, 3)], [(), (2, 3)],
                                    [(2, 2, 3), (3,)]], ids=str)
def test_inner(shapes):
    a, b = arrays(*shapes)
    out = mx.inner(mx.array(a, mx.float64), mx.array(b, mx.float64))
    assert_allclose(out, np.inner(a, b), dtype=dt.float64)


@pytest.mark.parametrize("shapes", [[(3,), (4,)], [(2, 2), (3,)], [(), (2,)], [(0,), (2,)]],
                         ids=str)
def test_outer(shapes):
    a, b = arrays(*shapes)
    out = mx.outer(mx.array(a, mx.float64), mx.array(b, mx.float64))
    assert_allclose(out, np.outer(a, b), dtype=dt.float64)
    assert mx.outer(mx.array([1, 2]), mx.array([3])).dtype is dt.int32


@pytest.mark.parametrize("shapes,axis", [([(3,), (3,)], -1), ([(2, 3), (3,)], -1),
                                         ([(3, 4), (3, 1)], 0), ([(2, 1, 3), (4, 3)], 2)])
def test_vecdot(shapes, axis):
    a, b = arrays(*shapes)
    out = mx.vecdot(mx.array(a, mx.float64), mx.array(b, mx.float64), axis=axis)
    expected = np.sum(np.broadcast_arrays(a, b)[0] * np.broadcast_arrays(a, b)[1], axis=axis)
    assert_allclose(out, expected, dtype=dt.float64)


def test_vecdot_conjugates_complex():
    a = np.array([1 + 2j, 3 - 1j], np.complex64)
    b = np.array([2 - 1j, 1j], np.complex64)
    assert_allclose(mx.vecdot(mx.array(a), mx.array(b)), np.vdot(a, b), dtype=dt.complex64)


@pytest.mark.parametrize("shapes", [[(2,), (3,)], [(2, 3), (3, 2)], [(2, 1, 2), (3, 2)],
                                    [(), (2,)], [(2, 2), ()]], ids=str)
def test_kron(shapes):
    a, b = arrays(*shapes)
    out = mx.kron(mx.array(a, mx.float64), mx.array(b, mx.float64))
    assert_allclose(out, np.kron(a, b), dtype=dt.float64)


def test_einsum_grad_through_matmul():
    a, b = arrays((2, 3), (3, 4))
    ga, gb = mx.grad(lambda a, b: mx.einsum("ij,jk->", a, b), argnums=(0, 1))(
        mx.array(a, mx.float64), mx.array(b, mx.float64))
    assert_allclose(ga, np.broadcast_to(b.sum(1), (2, 3)), dtype=dt.float64)
    assert_allclose(gb, np.broadcast_to(a.sum(0)[:, None], (3, 4)), dtype=dt.float64)


@pytest.mark.parametrize("call,error,message", [
    (lambda: mx.einsum("ij,jk", mx.zeros((2, 3))), ValueError, "^einsum: subscripts"),
    (lambda: mx.einsum("ij", mx.zeros((2,))), ValueError, "^einsum: operand"),
    (lambda: mx.einsum("ij,jk", mx.zeros((2, 3)), mx.zeros((4, 2))), ValueError,
     "^einsum: label 'j' has sizes 3 and 4"),
    (lambda: mx.einsum("ii->i", mx.zeros((1, 3))), ValueError,
     r"^einsum: label 'i' repeats with sizes 1 and 3 in the operand of shape \(1, 3\)"),
    (lambda: mx.einsum("ij->k", mx.zeros((2, 3))), ValueError, "^einsum: output label 'k'"),
    (lambda: mx.einsum("ij->ii", mx.zeros((2, 2))), ValueError, "^einsum: output label 'i'"),
    (lambda: mx.einsum("i1", mx.zeros((2, 2))), ValueError, "^einsum: invalid subscript"),
    (lambda: mx.einsum("i..j", mx.zeros((2, 2))), ValueError, "^einsum: invalid ellipsis"),
    (lambda: mx.einsum("i->i->i", mx.zeros((2,))), ValueError, "^einsum: subscripts"),
    (lambda: mx.einsum("...i->i", mx.zeros((2, 2))), ValueError, "^einsum: output subscripts"),
    (lambda: mx.einsum("ij...", mx.zeros((2,))), ValueError, "^einsum: operand"),
    (lambda: mx.einsum(3, mx.zeros((2,))), TypeError, "^einsum: subscripts must be a string"),
    (lambda: mx.einsum("i"), ValueError, "^einsum: at least one operand"),
    (lambda: mx.einsum_path("ij,jk", mx.zeros((2, 3))), ValueError, "^einsum_path: "),
    (lambda: mx.tensordot(mx.zeros((2, 3)), mx.zeros((3,)), axes=3), ValueError,
     "^tensordot: axes 3"),
    (lambda: mx.tensordot(mx.zeros((2, 3)), mx.zeros((3,)), axes=([0], [0])), ValueError,
     "^tensordot: axis 0"),
    (lambda: mx.tensordot(mx.zeros((2, 3)), mx.zeros((3,)), axes=([1, 0], [0])), ValueError,
     "^tensordot: axes"),
    (lambda: mx.tensordot(mx.zeros((2, 3)), mx.zeros((3,)), axes=([2], [0])), ValueError,
     "^tensordot: axis 2"),
    (lambda: mx.tensordot(mx.zeros((3, 3)), mx.zeros((3, 3)), axes=([0, 0], [0, 1])),
     ValueError, "^tensordot: repeated axis"),
    (lambda: mx.tensordot(mx.zeros((3,)), mx.zeros((3,)), axes="x"), ValueError,
     "^tensordot: axes must be"),
    (lambda: mx.tensordot(mx.zeros((1,) * 27), mx.zeros((1,) * 26), axes=0), ValueError,
     "^tensordot: at most 52 dimensions in all"),
    (lambda: mx.inner(mx.zeros((2, 3)), mx.zeros((2,))), ValueError, "^inner: last dimensions"),
    (lambda: mx.vecdot(mx.zeros((2, 3)), mx.zeros((2,))), ValueError, "^vecdot: shapes"),
    (lambda: mx.vecdot(mx.zeros(()), mx.zeros(())), ValueError, "^vecdot: inputs"),
    (lambda: mx.vecdot(mx.array(2.0), mx.ones((2, 3))), ValueError,
     r"^vecdot: inputs must have at least one dimension, got shapes \(\) and \(2, 3\)"),
    (lambda: mx.vecdot(mx.zeros((3,)), mx.zeros((3,)), axis=1), ValueError, "^vecdot: axis 1"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_einsum_accepts_every_letter():
    letters = string.ascii_letters[:8]
    x = RNG.standard_normal((1,) * 8)
    assert_allclose(mx.einsum(letters, mx.array(x, mx.float64)), x)
