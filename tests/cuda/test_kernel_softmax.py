"""Softmax, log-sum-exp and cross-entropy kernels in the emulator against their fallbacks."""

import numpy as np
import pytest
from kernel_checks import DTYPES, check, random

from nuvec.backends.cuda.launchers import softmax as launcher
from nuvec.fast.cross_entropy import CrossEntropy, CrossEntropyVjp
from nuvec.fast.softmax import LogSumExp, Softmax

SHAPES = [(1, 64), (3, 37), (4, 200), (2, 8200)]
DT = list(DTYPES)


@pytest.fixture
def short_rows(monkeypatch):
    """Rows of more than 96 elements go through the chunked (two-launch) path."""
    monkeypatch.setattr(launcher, "LONG_ROW", 96)


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("shape", SHAPES)
def test_softmax_and_logsumexp(dtype, shape):
    x = random(shape, dtype, scale=4.0)
    check(Softmax(), x)
    check(LogSumExp(), x)


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("shape", [(3, 37), (2, 200), (5, 1000)])
def test_long_rows_across_blocks(short_rows, dtype, shape):
    x = random(shape, dtype, scale=4.0)
    check(Softmax(), x)
    check(LogSumExp(), x)


def test_infinities():
    x = np.array([[-np.inf] * 5, [np.inf, 1, 2, 3, 4], [0, -np.inf, 1, 2, 3]], np.float32)
    check(LogSumExp(), x)
    got, _ = check(Softmax(), x[2:])
    assert got[0][0, 1] == 0


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("shape", SHAPES)
def test_cross_entropy(dtype, shape):
    rows, d = shape
    x = random(shape, dtype, scale=3.0)
    rng = np.random.default_rng(7)
    # Negative targets count from the end; some stay out of range (a NaN row).
    targets = rng.integers(-d, d, rows).astype(np.int32)
    if rows > 2:
        targets[1] = -d - 3
    (loss,), _ = check(CrossEntropy(), x, targets)
    g = rng.standard_normal(rows).astype(np.float32)
    check(CrossEntropyVjp(), x, targets, loss, g)
