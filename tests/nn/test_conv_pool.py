"""Convolution, pooling and upsampling layers against float64 NumPy loops: forward values,
gradients, weight layouts and initial ranges as MLX's."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from nn_refs import check_layer_grads, f64, params64, rand64

import nuvec as mx
import nuvec.nn as nn


def conv_ref(x, w, b, stride, padding, dilation, groups):
    """Cross-correlation over channels-last `x` (N, *S, C), `w` (O, *K, C/groups)."""
    n, *spatial, c = x.shape
    o, *kernel, cg = w.shape
    d = len(spatial)
    x = np.pad(x, [(0, 0)] + [(p, p) for p in padding] + [(0, 0)])
    out_size = [(x.shape[1 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
                for i in range(d)]
    y = np.zeros((n, *out_size, o))
    per_group = o // groups
    for pos in itertools.product(*(range(s) for s in out_size)):
        for k in itertools.product(*(range(s) for s in kernel)):
            src = tuple(pos[i] * stride[i] + k[i] * dilation[i] for i in range(d))
            patch = x[(slice(None), *src)]  # (N, C)
            for g in range(groups):
                wk = w[(slice(g * per_group, (g + 1) * per_group), *k)]  # (O/g, C/g)
                y[(slice(None), *pos, slice(g * per_group, (g + 1) * per_group))] += (
                    patch[:, g * cg:(g + 1) * cg] @ wk.T)
    return y + b


def conv_transpose_ref(x, w, b, stride, padding, dilation, output_padding):
    """Transposed 1-D convolution: input `i` and tap `k` add into output `i*s + k*d - p`."""
    n, length, c = x.shape
    o, kernel, _ = w.shape
    out = (length - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1
    y = np.zeros((n, out, o))
    for i in range(length):
        for k in range(kernel):
            j = i * stride + k * dilation - padding
            if 0 <= j < out:
                y[:, j] += x[:, i] @ w[:, k].T
    return y + b


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 2),
                                                            (1, 2, 2, 1)])
def test_conv1d(stride, padding, dilation, groups) -> None:
    layer = f64(nn.Conv1d(4, 6, 3, stride=stride, padding=padding, dilation=dilation,
                          groups=groups))
    assert layer.weight.shape == (6, 3, 4 // groups) and layer.bias.shape == (6,)
    layer.bias = rand64(6, seed=2)
    x = rand64(2, 9, 4)
    p = params64(layer)
    expected = conv_ref(np.asarray(x), p["weight"], p["bias"], (stride,), (padding,),
                        (dilation,), groups)
    np.testing.assert_allclose(np.asarray(layer(x)), expected, rtol=1e-10, atol=1e-12)
    check_layer_grads(layer, x)


def test_conv2d_conv3d_and_init() -> None:
    mx.random.seed(0)
    big = nn.Conv2d(16, 32, 3)
    bound = 1 / math.sqrt(16 * 9)
    w = np.asarray(big.weight)
    assert w.shape == (32, 3, 3, 16) and np.abs(w).max() <= bound
    np.testing.assert_allclose(w.std(), bound / math.sqrt(3), rtol=0.05)
    assert np.asarray(big.bias).tolist() == [0.0] * 32
    layer = f64(nn.Conv2d(2, 3, (2, 3), stride=(1, 2), padding=(1, 0)))
    x = rand64(2, 4, 5, 2)
    p = params64(layer)
    expected = conv_ref(np.asarray(x), p["weight"], p["bias"], (1, 2), (1, 0), (1, 1), 1)
    np.testing.assert_allclose(np.asarray(layer(x)), expected, rtol=1e-10, atol=1e-12)
    check_layer_grads(layer, x)
    layer3 = f64(nn.Conv3d(2, 2, 2, bias=False))
    assert "bias" not in layer3
    x3 = rand64(1, 3, 3, 3, 2)
    expected = conv_ref(np.asarray(x3), params64(layer3)["weight"], 0.0, (1,) * 3, (0,) * 3,
                        (1,) * 3, 1)
    np.testing.assert_allclose(np.asarray(layer3(x3)), expected, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match=r"Conv2d: the number of input channels \(3\) must be "
                                         r"divisible by the number of groups \(2\)"):
        nn.Conv2d(3, 4, 3, groups=2)


@pytest.mark.parametrize("stride,padding,dilation,output_padding", [(1, 0, 1, 0), (2, 1, 1, 1),
                                                                    (2, 0, 2, 0)])
def test_conv_transpose1d(stride, padding, dilation, output_padding) -> None:
    layer = f64(nn.ConvTranspose1d(3, 4, 3, stride=stride, padding=padding, dilation=dilation,
                                   output_padding=output_padding))
    assert layer.weight.shape == (4, 3, 3)
    layer.bias = rand64(4, seed=3)
    x = rand64(2, 5, 3)
    p = params64(layer)
    expected = conv_transpose_ref(np.asarray(x), p["weight"], p["bias"], stride, padding,
                                  dilation, output_padding)
    np.testing.assert_allclose(np.asarray(layer(x)), expected, rtol=1e-10, atol=1e-12)
    check_layer_grads(layer, x)


def test_conv_transpose2d_3d_shapes_and_gradients() -> None:
    layer = f64(nn.ConvTranspose2d(2, 3, 2, stride=2))
    assert layer.weight.shape == (3, 2, 2, 2)
    x = rand64(1, 3, 3, 2)
    y = np.asarray(layer(x))
    assert y.shape == (1, 6, 6, 3)
    w, b = params64(layer)["weight"], params64(layer)["bias"]
    # stride 2 with a 2x2 kernel: each input pixel paints its own 2x2 block
    np.testing.assert_allclose(y[0, 2:4, 4:6], np.einsum("c,oijc->ijo", np.asarray(x)[0, 1, 2],
                                                         w) + b, rtol=1e-10)
    check_layer_grads(layer, x)
    assert nn.ConvTranspose3d(2, 4, 3)(mx.ones((1, 2, 2, 2, 2))).shape == (1, 4, 4, 4, 4)


def pool_ref(x, kernel, stride, padding, op):
    n, *spatial, c = x.shape
    fill = -np.inf if op is np.max else 0.0
    x = np.pad(x, [(0, 0)] + [(p, p) for p in padding] + [(0, 0)], constant_values=fill)
    out = [(x.shape[1 + i] - kernel[i]) // stride[i] + 1 for i in range(len(spatial))]
    y = np.zeros((n, *out, c))
    for pos in itertools.product(*(range(s) for s in out)):
        window = tuple(slice(p * s, p * s + k) for p, s, k in zip(pos, stride, kernel))
        y[(slice(None), *pos)] = op(x[(slice(None), *window)],
                                    axis=tuple(range(1, 1 + len(spatial))))
    return y


def max_pool_grad_ref(x, cotangent, kernel, stride, padding):
    """The gradient of `sum(cotangent * max_pool(x))`: each window's cotangent split evenly
    among its tied maxima (MLX's rule)."""
    pad = [(0, 0)] + [(p, p) for p in padding] + [(0, 0)]
    xp = np.pad(x, pad, constant_values=-np.inf)
    g = np.zeros_like(xp)
    for pos in itertools.product(*(range(s) for s in cotangent.shape[1:-1])):
        window = (slice(None),) + tuple(slice(p * s, p * s + k)
                                        for p, s, k in zip(pos, stride, kernel))
        patch = xp[window]
        axes = tuple(range(1, patch.ndim - 1))
        ties = patch == patch.max(axis=axes, keepdims=True)
        share = cotangent[(slice(None), *pos)] / ties.sum(axis=axes)
        g[window] += ties * np.expand_dims(share, axes)
    return g[tuple(slice(lo, g.shape[i] - hi) for i, (lo, hi) in enumerate(pad))]


@pytest.mark.parametrize("cls,kernel,stride,padding", [
    (nn.MaxPool1d, (2,), (2,), (0,)), (nn.MaxPool1d, (3,), (1,), (1,)),
    (nn.MaxPool2d, (2, 2), (2, 2), (0, 0)), (nn.MaxPool2d, (3, 2), (2, 1), (1, 0)),
    (nn.MaxPool2d, (2, 2), (3, 3), (0, 0)), (nn.MaxPool3d, (2, 2, 2), (1, 2, 1), (1, 0, 1))])
def test_max_pool_splits_tied_gradients(cls, kernel, stride, padding) -> None:
    rng = np.random.default_rng(4)
    # integer values: most windows hold tied maxima
    x = np.round(rng.standard_normal((2, *[6] * len(kernel), 3)) * 0.7)
    layer = cls(kernel, stride, padding)
    expected = pool_ref(x, kernel, stride, padding, np.max)
    cotangent = rng.standard_normal(expected.shape)
    y, vjp = mx.vjp(layer, [mx.array(x, mx.float64)], [mx.array(cotangent, mx.float64)])
    np.testing.assert_array_equal(np.asarray(y[0]), expected)
    np.testing.assert_allclose(np.asarray(vjp[0]),
                               max_pool_grad_ref(x, cotangent, kernel, stride, padding),
                               rtol=1e-12, atol=1e-15)
    grad = mx.grad(lambda x: nn.MaxPool2d(2)(x).sum())(mx.ones((1, 2, 2, 1)))
    assert grad.reshape(-1).tolist() == [0.25] * 4


@pytest.mark.parametrize("cls,op", [(nn.MaxPool1d, np.max), (nn.AvgPool1d, np.mean)])
def test_pool1d(cls, op) -> None:
    x = rand64(2, 9, 3)
    for kernel, stride, padding in [(2, None, 0), (3, 2, 1), (3, 1, 0)]:
        layer = cls(kernel, stride, padding)
        expected = pool_ref(np.asarray(x), (kernel,), (stride or kernel,), (padding,), op)
        np.testing.assert_allclose(np.asarray(layer(x)), expected, rtol=1e-12)
    check_layer_grads(cls(3, 2), x)
    np.testing.assert_allclose(np.asarray(cls(2)(x[0])), pool_ref(np.asarray(x), (2,), (2,),
                                                                 (0,), op)[0], rtol=1e-12)


@pytest.mark.parametrize("cls,op", [(nn.MaxPool2d, np.max), (nn.AvgPool2d, np.mean),
                                    (nn.MaxPool3d, np.max), (nn.AvgPool3d, np.mean)])
def test_pool_2d_3d(cls, op) -> None:
    dims = 2 if "2d" in cls.__name__ else 3
    x = rand64(2, *([5] * dims), 2)
    layer = cls(kernel_size=(2,) * dims, stride=(2, 1, 1)[:dims], padding=(1,) + (0,) * (dims - 1))
    expected = pool_ref(np.asarray(x), (2,) * dims, (2, 1, 1)[:dims], (1,) + (0,) * (dims - 1), op)
    np.testing.assert_allclose(np.asarray(layer(x)), expected, rtol=1e-12)
    check_layer_grads(cls(2), x)
    with pytest.raises(ValueError, match=f"{cls.__name__}: expected an input of {dims + 2}"):
        cls(2)(mx.ones((2,) * (dims + 3)))
    for bad in ({"kernel_size": 0}, {"kernel_size": 2, "stride": 0},
                {"kernel_size": 2, "padding": -1}):
        with pytest.raises(ValueError, match=f"{cls.__name__}: kernel_size and stride must be "
                                             "positive"):
            cls(**bad)


def _src(n, m, scale, align):
    """Source coordinates: corners matched, or a grid spaced `1 / scale` centred on the input."""
    i = np.arange(m)
    return i * (n - 1) / (m - 1) if align else (i - (m - 1) / 2) / scale + (n - 1) / 2


def _linear_ref(x, scales, align):
    n, h, w, c = x.shape
    sh, sw = scales
    ys = np.clip(_src(h, int(h * sh), sh, align), 0, h - 1)
    xs = np.clip(_src(w, int(w * sw), sw, align), 0, w - 1)
    out = np.zeros((n, len(ys), len(xs), c))
    for i, sy in enumerate(ys):
        for j, sx in enumerate(xs):
            y0, x0 = int(np.floor(sy)), int(np.floor(sx))
            y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
            fy, fx = sy - y0, sx - x0
            out[:, i, j] = ((1 - fy) * (1 - fx) * x[:, y0, x0] + (1 - fy) * fx * x[:, y0, x1]
                            + fy * (1 - fx) * x[:, y1, x0] + fy * fx * x[:, y1, x1])
    return out


def _keys(d, a=-0.75):
    d = abs(d)
    if d <= 1:
        return (a + 2) * d**3 - (a + 3) * d**2 + 1
    if d < 2:
        return a * d**3 - 5 * a * d**2 + 8 * a * d - 4 * a
    return 0.0


def _cubic_ref_1d(x, scale, align):
    n = x.shape[1]
    src = _src(n, int(n * scale), scale, align)
    out = np.zeros((x.shape[0], len(src), x.shape[2]))
    for i, s in enumerate(src):
        base = int(np.floor(s))
        for k in range(base - 1, base + 3):
            out[:, i] += _keys(s - k) * x[:, min(max(k, 0), n - 1)]
    return out


@pytest.mark.parametrize("align", [False, True])
def test_upsample(align) -> None:
    x = rand64(2, 3, 4, 2)
    xs = np.asarray(x)
    nearest = np.asarray(nn.Upsample(2)(x))
    np.testing.assert_array_equal(nearest, xs.repeat(2, axis=1).repeat(2, axis=2))
    odd = np.asarray(nn.Upsample((1.5, 2.5))(x))
    # enlarging: the input nearest each output's centre, round((i + 0.5) * n / m - 0.5) with
    # ties to even (3 -> 4 rows, 4 -> 10 columns, ties at columns 2 and 7)
    rows, cols = [0, 1, 1, 2], [0, 0, 0, 1, 1, 2, 2, 2, 3, 3]
    np.testing.assert_array_equal(odd, xs[:, rows][:, :, cols])
    # shrinking: the first input of each output's span, floor(i * n / m) (3 -> 2, 4 -> 2)
    shrunk = np.asarray(nn.Upsample(0.7)(x))
    np.testing.assert_array_equal(shrunk, xs[:, [0, 1]][:, :, [0, 2]])
    for scales in [(2, 2), (1.5, 2.5), (2.5, 0.7)]:
        linear = nn.Upsample(scales, mode="linear", align_corners=align)
        np.testing.assert_allclose(np.asarray(linear(x)), _linear_ref(xs, scales, align),
                                   rtol=1e-10, atol=1e-12)
    check_layer_grads(linear, x)
    if not align:  # 3 -> 4 samples: spaced 2/3 apart, centred, so the ends land on the ends
        y = nn.Upsample(1.5, mode="linear")(mx.arange(3.0).reshape(1, 3, 1))
        np.testing.assert_allclose(np.asarray(y).reshape(-1), [0, 2 / 3, 4 / 3, 2], rtol=1e-6)
    x1 = rand64(2, 5, 3)
    cubic = nn.Upsample(2.5, mode="cubic", align_corners=align)
    np.testing.assert_allclose(np.asarray(cubic(x1)), _cubic_ref_1d(np.asarray(x1), 2.5, align),
                               rtol=1e-10, atol=1e-12)
    check_layer_grads(cubic, x1)
    with pytest.raises(ValueError, match="Upsample: got unsupported upsampling algorithm: "
                                         "'area'"):
        nn.Upsample(2, mode="area")
    with pytest.raises(ValueError, match=r"upsample_linear: got 1 scale factors for an input of "
                                         r"shape \(2, 3, 4, 2\)"):
        nn.upsample_linear(x, (2.0,))


def test_upsample_dtypes() -> None:
    # interpolating modes compute in x's dtype promoted with float32; nearest keeps x's dtype
    ints = mx.arange(4).reshape(1, 4, 1)
    y = nn.Upsample(2, mode="linear")(ints)
    assert y.dtype == mx.float32
    assert y.reshape(-1).tolist() == [0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3]
    expected = _cubic_ref_1d(np.arange(4.0).reshape(1, 4, 1), 2, False)
    for mode, antialias in [("cubic", False), ("linear", True), ("cubic", True)]:
        assert nn.Upsample(2, mode=mode, antialias=antialias)(ints).dtype == mx.float32
    np.testing.assert_allclose(np.asarray(nn.Upsample(2, mode="cubic")(ints)), expected,
                               rtol=1e-6, atol=1e-6)
    for dtype in (mx.float16, mx.bfloat16, mx.uint8, mx.bool_):
        assert nn.Upsample(2, mode="linear")(ints.astype(dtype)).dtype == mx.float32
        assert nn.Upsample(2)(ints.astype(dtype)).dtype == dtype
    assert nn.Upsample(1.5, mode="cubic")(ints.astype(mx.float64)).dtype == mx.float64


def test_antialiased_downsampling() -> None:
    x = rand64(1, 8, 3)
    xs = np.asarray(x)[0, :, 0]
    # halving with the triangle kernel widened to two samples: taps 1/8, 3/8, 3/8, 1/8 around
    # each output, the edge outputs renormalized over the taps inside the input
    y = np.asarray(nn.Upsample(0.5, mode="linear", antialias=True)(x))[0, :, 0]
    padded = np.concatenate([[0.0], xs, [0.0]])
    inner = [np.dot([1, 3, 3, 1], padded[2 * i:2 * i + 4]) / 8 for i in range(4)]
    edges = {0: np.dot([3, 3, 1], xs[:3]) / 7, 3: np.dot([1, 3, 3], xs[5:]) / 7}
    np.testing.assert_allclose(y, [edges.get(i, inner[i]) for i in range(4)], rtol=1e-12)
    # upsampling is unchanged by antialias for linear; cubic switches to a = -0.5
    up = nn.Upsample(2, mode="linear", antialias=True)
    np.testing.assert_allclose(np.asarray(up(x)), np.asarray(nn.Upsample(2, mode="linear")(x)),
                               rtol=1e-12)
    smooth = nn.Upsample(0.5, mode="cubic", antialias=True)
    assert smooth(x).shape == (1, 4, 3)
    check_layer_grads(smooth, x)
    for bad in ({"mode": "nearest"}, {"mode": "linear", "align_corners": True}):
        with pytest.raises(ValueError, match="^Upsample: antialias=True needs mode 'linear' or "
                                             "'cubic' and align_corners=False"):
            nn.Upsample(0.5, antialias=True, **bad)
    with pytest.raises(ValueError, match="^upsample_cubic: antialias=True with align_corners"):
        nn.upsample_cubic(x, (0.5,), align_corners=True, antialias=True)


@pytest.mark.parametrize("dtype", [mx.int32, mx.uint8, mx.bool_], ids=str)
def test_max_pool_pads_integers_with_their_lowest_value(dtype) -> None:
    x = mx.arange(6).reshape(1, 3, 2).astype(dtype)
    got = nn.MaxPool1d(kernel_size=2, stride=2, padding=1)(x)
    ref = np.asarray(x)[:, [0, 2]]  # windows [pad, x0] and [x1, x2]
    ref[:, 1] = np.maximum(np.asarray(x)[:, 1], np.asarray(x)[:, 2])
    assert got.dtype == dtype and np.array_equal(np.asarray(got), ref)
    square = mx.arange(16).reshape(1, 4, 4, 1).astype(dtype)
    assert nn.MaxPool2d(2, 2, 1)(square).shape == (1, 3, 3, 1)


def test_layer_modules_have_mlx_names() -> None:
    assert nn.activations.sigmoid is nn.sigmoid and nn.pooling.MaxPool2d is nn.MaxPool2d
    assert repr(nn.Upsample(scale_factor=2)) == (
        "Upsample(scale_factor=2.0, mode='nearest', align_corners=False)")
    assert repr(nn.Upsample(scale_factor=0.5, mode="linear", antialias=True)).endswith(
        "align_corners=False, antialias=True)")
