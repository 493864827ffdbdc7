"""The norm kernels in the emulator against their fallback graphs."""

import numpy as np
import pytest
from kernel_checks import DTYPES, check, random

from nuvec.fast.norms import AddRmsNorm, LayerNorm, LayerNormVjp, RmsNorm, RmsNormVjp

# (rows, d): one row, ragged tails (d not a multiple of the vector width), non-powers of two,
# a row long enough for the largest block (1024 threads).
SHAPES = [(1, 64), (3, 37), (5, 200), (2, 4100)]
DT = list(DTYPES)


def params(d, dtype, weight, seed=1):
    return random((d,), dtype, seed) if weight else np.array(1.0, DTYPES[dtype])


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("weight", [True, False])
def test_rms_norm(dtype, shape, weight):
    x = random(shape, dtype)
    check(RmsNorm(1e-5), x, params(shape[1], dtype, weight))
    if weight:
        check(AddRmsNorm(1e-5), x, random(shape, dtype, 2), params(shape[1], dtype, True))


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("shape", SHAPES)
def test_rms_norm_vjp(dtype, shape):
    x, g = random(shape, dtype), random(shape, dtype, 3)
    check(RmsNormVjp(1e-5), x, params(shape[1], dtype, True), g)


def test_rms_norm_vjp_without_weight_and_many_rows():
    x, g = random((300, 48), "float32"), random((300, 48), "float32", 3)
    check(RmsNormVjp(1e-5), x, params(48, "float32", False), g)
    check(RmsNormVjp(1e-5), x, params(48, "float32", True), g)  # rows > the VJP's blocks


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("weight,bias", [(True, True), (False, False), (True, False),
                                         (False, True)])
def test_layer_norm(dtype, shape, weight, bias):
    x = random(shape, dtype, scale=3.0) + DTYPES[dtype](2.0)
    w, b = params(shape[1], dtype, weight), params(shape[1], dtype, bias, seed=4)
    if not bias:
        b = np.array(0.0, DTYPES[dtype])
    check(LayerNorm(1e-5), x, w, b)
    check(LayerNormVjp(1e-5), x, w, b, random(shape, dtype, 5))
