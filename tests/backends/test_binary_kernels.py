"""The CPU's binary kernels on their NumPy-only paths, bit for bit against the NumPy ufunc."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
from nuvec.backends.common import binary as bodies
from nuvec.backends.numpy import kernels
from nuvec.ops import binary as b

SPECIALS = np.array([-0.0, 0.0, np.nan, -np.nan, -1.0, 1.0, np.inf, -np.inf, 1e-45, -1e-45])


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.dtype(f"u{a.itemsize}"))


def _operand(shape, dtype, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3).astype(dtype) if dtype != np.bool_ else \
        rng.integers(0, 2, shape).astype(bool)
    flat = x.reshape(-1)
    if x.dtype.kind == "f":
        flat[: SPECIALS.size] = SPECIALS.astype(dtype)
        flat[-SPECIALS.size:] = SPECIALS.astype(dtype)
    return x


@pytest.mark.parametrize("cls, ufunc", [(b.Maximum, np.maximum), (b.Minimum, np.minimum)],
                         ids=["maximum", "minimum"])
@pytest.mark.parametrize("shape", [(256, 512), (3, 2 * bodies._RUN + 5), (1100,), (40,)],
                         ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_],
                         ids=lambda d: np.dtype(d).name)
def test_extremum_against_a_broadcast_constant_is_the_ufunc(cls, ufunc, shape, dtype):
    """A contiguous operand against a broadcast constant (either side, into `out` or not,
    constants of both zeros and NaN, a ragged last run): the ufunc's values bit for bit."""
    x = _operand(shape, dtype, 3)
    kernel = kernels[cls]
    for value in ([0.0, -0.0, np.nan, 1.5] if x.dtype.kind == "f" else [0, 1]):
        c = np.broadcast_to(np.asarray(value).astype(dtype), shape)
        for a, y in ((x, c), (c, x)):
            want = ufunc(a, y)
            got = kernel(None, a, y)
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_array_equal(_bits(got), _bits(want))
            out = np.empty(shape, dtype)
            assert kernel(None, a, y, out=out) is out
            np.testing.assert_array_equal(_bits(out), _bits(want))


def test_extremum_of_other_layouts_is_the_ufunc():
    """Operands the runs do not take (a strided input, a Fortran-ordered `out`, two broadcast
    operands) go to the ufunc as they are."""
    x = _operand((64, 300), np.float32, 4)
    zero = np.broadcast_to(np.float32(0), (300, 64))
    kernel = kernels[b.Maximum]
    np.testing.assert_array_equal(_bits(kernel(None, x.T, zero)), _bits(np.maximum(x.T, zero)))
    out = np.empty((64, 300), np.float32, order="F")
    zero = np.broadcast_to(np.float32(0), (64, 300))
    assert kernel(None, x, zero, out=out) is out
    np.testing.assert_array_equal(_bits(out), _bits(np.maximum(x, zero)))
    one = np.broadcast_to(np.float32(1), (64, 300))
    np.testing.assert_array_equal(kernel(None, zero, one), np.ones((64, 300), np.float32))


def test_relu_and_its_gradient_keep_their_values():
    x_np = _operand((256, 512), np.float32, 5)
    x = mx.array(x_np)
    y = mx.maximum(x, 0)
    np.testing.assert_array_equal(_bits(np.asarray(y)), _bits(np.maximum(x_np, np.float32(0))))
    g = mx.grad(lambda x: mx.sum(mx.maximum(x, 0.0)))(x)
    np.testing.assert_array_equal(np.asarray(g), (x_np > 0).astype(np.float32))
