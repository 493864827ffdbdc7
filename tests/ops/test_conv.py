"""Convolutions against a direct NumPy reference (a sum over kernel taps of shifted, strided
input slices times weight matrices): 1-3 spatial dims, stride, padding, dilations, groups,
flip, transposed forms, dtypes, special shapes, errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import nuvec as mx
from nuvec.graph import dtypes as dt
from nuvec.testing import assert_allclose

RNG = np.random.default_rng(0)


def reference(x, w, stride, lo, hi, kernel_dilation, input_dilation, groups, flip):
    """conv_general in float64, one kernel tap at a time."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    nd = x.ndim - 2
    if flip:
        w = np.flip(w, axis=tuple(range(1, nd + 1)))
    shape = [x.shape[0], *((n - 1) * d + 1 for n, d in zip(x.shape[1:-1], input_dilation)),
             x.shape[-1]]
    spread = np.zeros(shape)
    spread[(slice(None), *(slice(None, None, d) for d in input_dilation))] = x
    for i in range(nd):
        keep = range(max(-lo[i], 0), spread.shape[1 + i] - max(-hi[i], 0))
        spread = np.take(spread, keep, axis=1 + i)
    spread = np.pad(spread, [(0, 0), *((max(a, 0), max(b, 0)) for a, b in zip(lo, hi)),
                             (0, 0)])
    kernel = w.shape[1:-1]
    out = [(spread.shape[1 + i] - (kernel[i] - 1) * kernel_dilation[i] - 1) // stride[i] + 1
           for i in range(nd)]
    c_out, cg_in = w.shape[0], w.shape[-1]
    cg_out = c_out // groups
    y = np.zeros([x.shape[0], *out, c_out])
    for tap in itertools.product(*map(range, kernel)):
        window = tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                       for t, d, o, s in zip(tap, kernel_dilation, out, stride))
        patch = spread[(slice(None), *window)]
        for g in range(groups):
            wg = w[(slice(g * cg_out, (g + 1) * cg_out), *tap)]
            y[..., g * cg_out:(g + 1) * cg_out] += patch[..., g * cg_in:(g + 1) * cg_in] @ wg.T
    return y


def ints(value, nd):
    return (value,) * nd if isinstance(value, int) else tuple(value)


CASES = [  # (input shape, weight shape, stride, padding, dilation, groups)
    ((2, 9, 3), (4, 3, 3), 1, 0, 1, 1),
    ((2, 9, 4), (4, 3, 2), 2, 1, 2, 2),
    ((1, 5, 1), (1, 5, 1), 1, 2, 1, 1),
    ((2, 6, 7, 3), (5, 3, 3, 3), 1, 1, 1, 1),
    ((1, 8, 6, 4), (4, 3, 2, 1), (2, 1), (1, 0), (1, 2), 4),
    ((1, 5, 4, 3, 2), (3, 2, 3, 2, 2), (1, 2, 1), (1, 0, 1), 1, 1),
    ((1, 6, 5, 4, 4), (2, 2, 2, 2, 2), 2, 1, (1, 2, 1), 2),
    ((2, 9, 3), (4, 3, 3), 1, -1, 1, 1),  # a negative padding crops the input (MLX's rule)
    ((2, 6, 7, 3), (5, 3, 3, 3), (1, 2), (-1, 1), 1, 1),
]


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups", CASES, ids=str)
def test_conv_matches_reference(xs, ws, stride, padding, dilation, groups):
    nd = len(xs) - 2
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    op = {1: mx.conv1d, 2: mx.conv2d, 3: mx.conv3d}[nd]
    out = op(mx.array(x, mx.float64), mx.array(w, mx.float64), stride=stride,
             padding=padding, dilation=dilation, groups=groups)
    pad = ints(padding, nd)
    expected = reference(x, w, ints(stride, nd), pad, pad, ints(dilation, nd), (1,) * nd,
                         groups, False)
    assert_allclose(out, expected, dtype=dt.float64)


@pytest.mark.parametrize("xs,ws,kw", [
    ((2, 7, 3), (2, 3, 3), dict(stride=2, padding=([1], [2]), kernel_dilation=2,
                                input_dilation=2, flip=True)),
    ((2, 5, 6, 4), (6, 3, 2, 2), dict(stride=(2, 1), padding=([1, 0], [2, -1]),
                                      kernel_dilation=(1, 2), input_dilation=(2, 1), groups=2,
                                      flip=True)),
    ((1, 4, 4, 3, 1), (2, 2, 2, 2, 1), dict(padding=[1, 0, 1], input_dilation=(1, 2, 1))),
])
def test_conv_general(xs, ws, kw):
    nd = len(xs) - 2
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    out = mx.conv_general(mx.array(x, mx.float64), mx.array(w, mx.float64), **kw)
    padding = kw.get("padding", 0)
    if isinstance(padding, tuple):
        lo, hi = ints(padding[0], nd), ints(padding[1], nd)
    else:
        lo = hi = ints(padding, nd)
    expected = reference(x, w, ints(kw.get("stride", 1), nd), lo, hi,
                         ints(kw.get("kernel_dilation", 1), nd),
                         ints(kw.get("input_dilation", 1), nd), kw.get("groups", 1),
                         kw.get("flip", False))
    assert_allclose(out, expected, dtype=dt.float64)


def transpose_reference(x, w, stride, padding, dilation, output_padding, groups):
    """The transposed convolution as the adjoint of the forward one: scatter each input
    position's contribution (x[n, i] * w[:, t]) to output position i * stride + t * dilation."""
    kernel = w.shape[1:-1]
    full = [(n - 1) * s + (k - 1) * d + 1 + op for n, s, k, d, op in
            zip(x.shape[1:-1], stride, kernel, dilation, output_padding)]
    c_out, cg_in = w.shape[0], w.shape[-1]
    cg_out = c_out // groups
    y = np.zeros([x.shape[0], *full, c_out])
    for tap in itertools.product(*map(range, kernel)):
        window = tuple(slice(t * d, t * d + (n - 1) * s + 1, s)
                       for t, d, n, s in zip(tap, dilation, x.shape[1:-1], stride))
        for g in range(groups):
            wg = w[(slice(g * cg_out, (g + 1) * cg_out), *tap)]
            y[(slice(None), *window, slice(g * cg_out, (g + 1) * cg_out))] += (
                x[..., g * cg_in:(g + 1) * cg_in] @ wg.T)
    # a padding crops the full output; a negative one grows it by zeros (MLX's rule)
    y = np.pad(y, [(0, 0)] + [(max(-p, 0),) * 2 for p in padding] + [(0, 0)])
    crop = tuple(slice(max(p, 0), f - max(p, 0)) for p, f in zip(padding, y.shape[1:-1]))
    return y[(slice(None), *crop)]


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,output_padding,groups", [
    ((2, 4, 3), (2, 3, 3), 2, 0, 1, 0, 1),
    ((2, 4, 4), (4, 3, 2), 2, 1, 1, 1, 2),
    ((1, 3, 4, 2), (3, 2, 3, 2), (2, 1), (0, 1), (1, 2), (1, 0), 1),
    ((1, 2, 3, 2, 2), (2, 2, 2, 2, 2), 2, 0, 1, 0, 1),
    ((2, 5, 2), (3, 2, 2), 1, -1, 1, 0, 1),  # a negative padding grows the output
], ids=str)
def test_conv_transpose(xs, ws, stride, padding, dilation, output_padding, groups):
    nd = len(xs) - 2
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    op = {1: mx.conv_transpose1d, 2: mx.conv_transpose2d, 3: mx.conv_transpose3d}[nd]
    out = op(mx.array(x, mx.float64), mx.array(w, mx.float64), stride=stride, padding=padding,
             dilation=dilation, output_padding=output_padding, groups=groups)
    expected = transpose_reference(x, w, ints(stride, nd), ints(padding, nd),
                                   ints(dilation, nd), ints(output_padding, nd), groups)
    assert_allclose(out, expected, dtype=dt.float64)


@pytest.mark.parametrize("d", [dt.float16, dt.bfloat16, dt.float32], ids=lambda d: d.name)
def test_conv_dtypes(d):
    x, w = RNG.standard_normal((2, 5, 5, 3)), RNG.standard_normal((4, 3, 3, 3))
    out = mx.conv2d(mx.array(x, d), mx.array(w, d), padding=1)
    expected = reference(x.astype(d.np), w.astype(d.np), (1, 1), (1, 1), (1, 1), (1, 1),
                         (1, 1), 1, False)
    tol = {dt.float32: 1e-4, dt.float16: 2e-2, dt.bfloat16: 1e-1}[d]
    assert_allclose(out, expected, dtype=d, rtol=tol, atol=tol)
    mixed = mx.conv2d(mx.array(x, dt.float16), mx.array(w, dt.float32), padding=1)
    assert mixed.dtype is dt.float32


def test_conv_special_shapes_and_views():
    w = RNG.standard_normal((2, 1, 3))
    empty = mx.conv1d(mx.zeros((0, 4, 3)), mx.array(w))
    assert empty.shape == (0, 4, 2)
    x = RNG.standard_normal((5, 3, 2)).astype(np.float32)
    view = mx.array(x).transpose(2, 0, 1)[:, ::2]  # [2, 3, 3], not contiguous
    out = mx.conv1d(view, mx.array(w, mx.float32))
    expected = reference(np.transpose(x, (2, 0, 1))[:, ::2], w, (1,), (0,), (0,), (1,), (1,),
                         1, False)
    assert_allclose(out, expected, dtype=dt.float32, rtol=1e-5, atol=1e-5)
    one = mx.conv2d(mx.ones((1, 1, 1, 1)), mx.full((1, 1, 1, 1), 3.0))
    assert one.tolist() == [[[[3.0]]]]


def test_conv_grads_train_a_step():
    x = mx.array(RNG.standard_normal((4, 6, 6, 2)), mx.float64)
    w = mx.array(RNG.standard_normal((3, 3, 3, 2)) * 0.1, mx.float64)

    def loss(w):
        return (mx.conv2d(x, w, padding=1) ** 2).sum()

    value, g = mx.value_and_grad(loss)(w)
    assert g.shape == w.shape
    assert loss(w - 1e-3 * g).item() < value.item()


# -- scratch memory: the formulations, and inputs that are mostly padding or holes -----------


@pytest.mark.parametrize("force", ["blocks", "sparse"])
@pytest.mark.parametrize("xs,ws,kw", [
    ((2, 7, 6), (4, 3, 3), dict(stride=2, padding=([1], [2]), kernel_dilation=2,
                                input_dilation=3, groups=2, flip=True)),
    ((2, 5, 6, 4), (6, 3, 2, 2), dict(stride=(2, 3), padding=([4, 0], [2, -1]),
                                      kernel_dilation=(1, 2), input_dilation=(2, 1), groups=2)),
    ((1, 4, 4, 3, 2), (3, 2, 2, 3, 2), dict(stride=(1, 2, 1), padding=([1, 3, -1], [0, 2, 2]),
                                            input_dilation=(1, 2, 3), flip=True)),
], ids=str)
def test_conv_formulations_agree(monkeypatch, force, xs, ws, kw):
    """im2col in blocks of one output position, and the sparse form that skips padding."""
    import nuvec.backends.common.conv as body

    if force == "blocks":
        monkeypatch.setattr(body, "SCRATCH_BYTES", 1)
    else:
        monkeypatch.setattr(body, "_prefers_sparse", lambda *args: True)
    nd = len(xs) - 2
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    out = mx.conv_general(mx.array(x, mx.float64), mx.array(w, mx.float64), **kw)
    lo, hi = (ints(v, nd) for v in kw["padding"])
    expected = reference(x, w, ints(kw["stride"], nd), lo, hi,
                         ints(kw.get("kernel_dilation", 1), nd), ints(kw["input_dilation"], nd),
                         kw.get("groups", 1), kw.get("flip", False))
    assert_allclose(out, expected, dtype=dt.float64)


def test_conv_crop_past_the_input_removes_padding():
    # [0, 0, 0, 0, x0, x1] without its last 3 entries: 3 zeros
    out = mx.conv_general(mx.ones((1, 2, 1)), mx.ones((1, 2, 1)), padding=([4], [-3]))
    assert out.tolist() == [[[0.0], [0.0]]]


def test_conv_padding_much_larger_than_the_input():
    # im2col would pad the input to 512 GiB; the output is 8 MB
    pad = 2**20
    x = RNG.standard_normal((1, 1, 2**16)).astype(np.float32)
    w = RNG.standard_normal((1, 3, 2**16)).astype(np.float32)
    out = np.asarray(mx.conv1d(mx.array(x), mx.array(w), padding=pad))
    assert out.shape == (1, 2 * pad - 1, 1)
    taps = w[0].astype(np.float64) @ x[0, 0].astype(np.float64)  # output pad - t reads tap t
    np.testing.assert_allclose(out[0, pad - 2: pad + 1, 0], taps[::-1], rtol=1e-4)
    assert not out[0, : pad - 2].any() and not out[0, pad + 1:].any()
    # a 3-D one, against the reference
    x, w = RNG.standard_normal((1, 6, 6, 6, 2)), RNG.standard_normal((4, 3, 3, 3, 2))
    out = mx.conv3d(mx.array(x, mx.float64), mx.array(w, mx.float64), padding=49)
    expected = reference(x, w, (1,) * 3, (49,) * 3, (49,) * 3, (1,) * 3, (1,) * 3, 1, False)
    assert_allclose(out, expected, dtype=dt.float64)


def test_conv_transpose_with_a_kernel_much_larger_than_the_input():
    # im2col would need 155 GiB of columns for this 2.6 MB output
    out = np.asarray(mx.conv_transpose3d(mx.ones((1, 6, 6, 6, 2)), mx.ones((4, 50, 50, 50, 2))))
    # output o sums, per axis, the inputs j with 0 <= o - j < 50
    pairs = np.array([sum(0 <= o - j < 50 for j in range(6)) for o in range(55)])
    expected = 2.0 * np.einsum("i,j,k->ijk", pairs, pairs, pairs)
    np.testing.assert_array_equal(out, np.broadcast_to(expected[None, ..., None], out.shape))


def test_conv_transpose_huge_kernel_values_and_grads():
    # im2col would need 196 GiB of columns; so would the gradients' convolutions
    x = RNG.standard_normal((1, 6, 6, 2)).astype(np.float32)
    w = RNG.standard_normal((4, 400, 400, 2)).astype(np.float32)
    out = mx.conv_transpose2d(mx.array(x), mx.array(w))
    expected = np.zeros((1, 405, 405, 4))
    for i, j in itertools.product(range(6), range(6)):
        expected[0, i:i + 400, j:j + 400] += np.einsum("c,otsc->tso", x[0, i, j], w)
    assert_allclose(out, expected, dtype=dt.float32, rtol=1e-4, atol=1e-4)
    gx, gw = mx.grad(lambda a, b: mx.sum(mx.conv_transpose2d(a, b)), argnums=(0, 1))(
        mx.array(x), mx.array(w))
    # every (input, tap) pair reaches one output once
    assert_allclose(gx, np.broadcast_to(w.astype(np.float64).sum((0, 1, 2)), x.shape),
                    dtype=dt.float32, rtol=1e-3, atol=1e-2)
    assert_allclose(gw, np.broadcast_to(x.astype(np.float64).sum((0, 1, 2)), w.shape),
                    dtype=dt.float32, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("call,error,message", [
    (lambda: mx.conv1d(mx.zeros((1, 4, 2)), mx.zeros((1, 3, 3))), ValueError,
     "^conv1d: input shape .* has 2 channels"),
    (lambda: mx.conv1d(mx.zeros((4, 2)), mx.zeros((1, 3, 2))), ValueError,
     "^conv1d: input must have 3 dimensions"),
    (lambda: mx.conv2d(mx.zeros((1, 4, 4, 2)), mx.zeros((1, 3, 2))), ValueError,
     "^conv2d: weight must have 4 dimensions"),
    (lambda: mx.conv1d(mx.zeros((1, 4, 2), mx.int32), mx.zeros((1, 3, 2))), TypeError,
     "^conv1d: input must be floating"),
    (lambda: mx.conv1d(mx.zeros((1, 4, 2)), mx.zeros((1, 3, 2), mx.int32)), TypeError,
     "^conv1d: weight must be floating"),
    (lambda: mx.conv1d(mx.zeros((1, 4, 3)), mx.zeros((2, 3, 1)), groups=2), ValueError,
     "^conv1d: input channels 3 and output channels 2 must be divisible"),
    (lambda: mx.conv1d(mx.zeros((1, 4, 2)), mx.zeros((1, 3, 2)), groups=0), ValueError,
     "^conv1d: groups must be"),
    (lambda: mx.conv1d(mx.zeros((1, 2, 2)), mx.zeros((1, 3, 2))), ValueError,
     "^conv1d: the padded input"),
    (lambda: mx.conv1d(mx.zeros((1, 4, 2)), mx.zeros((1, 3, 2)), stride=0), ValueError,
     "^conv1d: stride must be >= 1"),
    (lambda: mx.conv1d(mx.zeros((1, 4, 2)), mx.zeros((1, 3, 2)), padding=-1), ValueError,
     "^conv1d: the padded input"),  # a negative padding crops (MLX's): 2 < 3 taps
    (lambda: mx.conv2d(mx.zeros((1, 4, 4, 2)), mx.zeros((1, 3, 3, 2)), stride=(1, 1, 1)),
     ValueError, "^conv2d: stride must be an int or 2 ints"),
    (lambda: mx.conv3d(mx.zeros((1, 4, 4, 4, 2)), mx.zeros((1, 3, 3, 3, 2)), dilation=0),
     ValueError, "^conv3d: dilation must be >= 1"),
    (lambda: mx.conv_general(mx.zeros((4, 2)), mx.zeros((1, 2))), ValueError,
     "^conv_general: input must have 3 to 5 dimensions"),
    (lambda: mx.conv_general(mx.zeros((1, 4, 2)), mx.zeros((1, 3, 2)), padding=([1], [1, 2])),
     ValueError, "^conv_general: padding must be"),
    (lambda: mx.conv_general(mx.zeros((1, 4, 2)), mx.zeros((1, 3, 2)), input_dilation=0),
     ValueError, "^conv_general: input_dilation must be >= 1"),
    (lambda: mx.conv_transpose1d(mx.zeros((1, 4, 2)), mx.zeros((1, 3, 2)), stride=2,
                                 output_padding=2), ValueError,
     "^conv_transpose1d: output_padding"),
    (lambda: mx.conv_transpose2d(mx.zeros((1, 4, 4, 2)), mx.zeros((1, 3, 3, 1))), ValueError,
     "^conv_transpose2d: input shape"),
    (lambda: mx.conv1d(mx.ones((1, 64, 2)), mx.ones((4096, 3, 2)), padding=2**31 - 1),
     ValueError, r"^conv1d: an array of shape \(1, 4294967356, 4096\) and dtype float32 needs "
     r"70368745160704 bytes, more than"),
    (lambda: mx.conv_transpose3d(mx.ones((1, 2, 2, 2, 1)), mx.ones((8, 2, 2, 2, 1)),
                                 padding=-2**12), ValueError,
     r"^conv_transpose3d: an array of shape \(1, 8195, 8195, 8195, 8\)"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_depthwise_conv1d_goes_through_the_fused_op_and_matches_the_grouped_form(monkeypatch):
    import nuvec.fast.conv as fast_conv

    calls = []
    original = fast_conv.depthwise_conv1d
    monkeypatch.setattr(fast_conv, "depthwise_conv1d",
                        lambda *args: calls.append(args[2:]) or original(*args))
    rng = np.random.default_rng(3)
    x = mx.array(rng.standard_normal((2, 9, 4)).astype(np.float32))
    w = mx.array(rng.standard_normal((4, 3, 1)).astype(np.float32))
    y = mx.conv1d(x, w, stride=2, padding=1, dilation=2, groups=4)
    assert calls == [(2, 1, 2)]  # (stride, padding, dilation); on the CPU: its fallback graph
    general = mx.conv_general(x, w, stride=2, padding=1, kernel_dilation=2, groups=4)
    np.testing.assert_allclose(np.asarray(y), np.asarray(general), rtol=1e-5, atol=1e-6)
    gx, gw = mx.grad(lambda a, b: mx.sum(mx.conv1d(a, b, padding=1, groups=4) ** 2),
                     argnums=(0, 1))(x, w)
    hx, hw = mx.grad(lambda a, b: mx.sum(mx.conv_general(a, b, padding=1, groups=4) ** 2),
                     argnums=(0, 1))(x, w)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(hx), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gw), np.asarray(hw), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="^conv1d: the padded input"):
        mx.conv1d(mx.zeros((1, 2, 4)), mx.zeros((4, 5, 1)), groups=4)


# -- convolve (1-D, NumPy's modes) --------------------------------------------------------


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("sizes", [(5, 3), (3, 5), (6, 4), (4, 7), (1, 1), (7, 1), (5, 5)],
                         ids=lambda s: f"{s[0]}x{s[1]}")
def test_convolve_matches_numpy(mode, sizes):
    a, v = RNG.standard_normal(sizes[0]), RNG.standard_normal(sizes[1])
    got = mx.convolve(mx.array(a, mx.float64), mx.array(v, mx.float64), mode)
    assert_allclose(got, np.convolve(a, v, mode), dtype=mx.float64)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16, mx.float32], ids=lambda d: d.name)
def test_convolve_dtypes_and_promotion(dtype):
    a, v = RNG.standard_normal(6).astype(np.float32), RNG.standard_normal(3).astype(np.float32)
    got = mx.convolve(mx.array(a, dtype), mx.array(v, mx.float32))
    want = np.convolve(np.asarray(mx.array(a, dtype), np.float64), v.astype(np.float64))
    assert_allclose(got, want, dtype=dt.promote_types(dtype, mx.float32))


def test_convolve_grad():
    a, v = RNG.standard_normal(5), RNG.standard_normal(3)
    ga, gv = mx.grad(lambda x, y: mx.sum(mx.convolve(x, y) ** 2), argnums=(0, 1))(
        mx.array(a, mx.float64), mx.array(v, mx.float64))
    full = np.convolve(a, v)
    # d/da sum(conv(a, v)^2) = correlate(2 conv, v), and likewise for v
    assert_allclose(ga, np.correlate(2 * full, v, "valid"), dtype=mx.float64)
    assert_allclose(gv, np.correlate(2 * full, a, "valid"), dtype=mx.float64)


@pytest.mark.parametrize(
    "a, v, mode, error, message",
    [
        (mx.ones((3,)), mx.ones((2,)), "circular", ValueError, "^convolve: mode must be"),
        (mx.ones((2, 3)), mx.ones((2,)), "full", ValueError, "^convolve: inputs must be 1-D"),
        (mx.ones((0,)), mx.ones((2,)), "full", ValueError, "^convolve: inputs cannot be empty"),
        (mx.ones((3,), mx.int32), mx.ones((2,), mx.int32), "full", TypeError,
         "^convolve: expected a floating-point array, got int32"),
    ],
    ids=["mode", "2-d", "empty", "int"],
)
def test_convolve_rejects(a, v, mode, error, message):
    with pytest.raises(error, match=message):
        mx.convolve(a, v, mode)
