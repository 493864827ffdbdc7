"""RoPE and norm_rope kernels in the emulator against their fallback graphs."""

import numpy as np
import pytest
from kernel_checks import DTYPES, RUNNER, check, random
from nuvec.backends.cuda.launchers import rope
from nuvec.fast.base import run_on_cpu

from nuvec.fast.rope import NormRope, Rope

DT = list(DTYPES)


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("traditional", [False, True])
@pytest.mark.parametrize("forward", [True, False])
def test_rope_base(dtype, traditional, forward):
    # dims < d: the last features are copied; d odd.
    x = random((2, 3, 5, 13), dtype)
    check(Rope(10, traditional, 10000.0, 0.5, forward), x, np.array(3, np.int32))


@pytest.mark.parametrize("dtype", DT)
def test_rope_freqs_and_per_batch_offsets(dtype):
    x = random((3, 2, 4, 16), dtype)
    freqs = np.linspace(1.0, 50.0, 8).astype(np.float32)
    offsets = np.array([0, 7, 100], np.int32)
    check(Rope(16, False, 1.0, 1.0), x, offsets, freqs)
    check(Rope(16, True, 1.0, 1.0, False), x, offsets.astype(np.uint32), freqs)


def test_rope_one_row_and_large_block():
    check(Rope(512, False, 10000.0, 1.0), random((1, 1, 600), "float32"), np.array(5, np.int32))


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("cache", [False, True])
@pytest.mark.parametrize("eps", [1e-5, None])
def test_norm_rope(dtype, cache, eps):
    b, h, length, d = 2, 3, 4, 24
    x = random((b, h, length, d), dtype)
    w = random((d,), dtype, 2) if eps is not None else np.array(1.0, DTYPES[dtype])
    inputs = [x, w]
    if cache:
        inputs.insert(0, random((b, h, 9, d), dtype, 3))
    check(NormRope(eps, 20, False, 10000.0, 1.0, 5 if cache else 2, cache), *inputs)


@pytest.mark.parametrize("traditional", [False, True])
def test_norm_rope_freqs_and_widest_rows(traditional):
    x = random((1, 2, 3, 1024), "bfloat16")
    freqs = np.linspace(1.0, 9.0, 512).astype(np.float32)
    w = random((1024,), "bfloat16", 2)
    check(NormRope(1e-6, 1024, traditional, 1.0, 1.0, 0, False), x, w, freqs)


@pytest.mark.parametrize("cache", [False, True])
def test_norm_rope_into_a_given_up_buffer(cache):
    x, w = random((1, 2, 3, 8), "float32"), random((8,), "float32", 2)
    p = NormRope(1e-5, 8, False, 10000.0, 1.0, 4 if cache else 0, cache)
    inputs = [random((1, 2, 9, 8), "float32", 3), x, w] if cache else [x, w]
    want = run_on_cpu(inputs, p.fallback)[0]
    given = inputs[0].copy()
    inputs[0] = given
    got = rope.norm_rope(RUNNER, p, *inputs, out=given)
    assert got is given
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
