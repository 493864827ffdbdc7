"""logsumexp and cross_entropy on the CPU bodies' two paths: inputs of one block (the rows at
once) and inputs split into cache-sized blocks of rows (with a ragged last block)."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as mx
import fast_refs as ref
from fast_refs import sample
from nuvec.backends.common import fast as bodies
from nuvec.testing import assert_allclose


@pytest.fixture(params=["one block", "blocks"])
def path(request, monkeypatch):
    if request.param == "blocks":
        monkeypatch.setattr(bodies, "_BLOCK", 64)  # [37, 9]: 7 rows a block, 2 in the last
    return request.param


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64, mx.float16], ids=lambda d: d.name)
def test_logsumexp_and_cross_entropy_on_both_paths(path, dtype):
    rng = np.random.default_rng(11)
    x, xr = sample(rng, (37, 9), dtype, scale=3.0)
    data = np.asarray(x).copy()
    data[3], data[5, 2], data[6, 4] = -np.inf, np.inf, -np.inf  # a -inf row, a +inf maximum
    x, xr = mx.array(data, dtype), data.astype(np.float64)
    t_np = rng.integers(-9, 9, 37).astype(np.int32)
    assert_allclose(mx.fast.logsumexp(x), ref.logsumexp(xr), dtype=dtype)
    with np.errstate(invalid="ignore"):
        want = ref.cross_entropy(xr, t_np)
    tol = 2e-3 if dtype is mx.float16 else 1e-5  # (the loss is float32 for every dtype)
    assert_allclose(mx.fast.cross_entropy(x, mx.array(t_np)), want, dtype=mx.float32,
                    rtol=tol, atol=tol)
