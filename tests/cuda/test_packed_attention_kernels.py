"""The packed-attention CUDA kernels in the emulator against the float64 formulas
(`tests/fast/packed_refs.py`) on the seed's cases, forward and backward, scalar and mma
schedules, and end to end through a stand-in GPU (`test_wiring.emulated_gpu`). Every variant
compiles with NVRTC for sm_80 and sm_90 in `test_compile_check.py`."""

from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from nuvec.backends.cuda.launchers import packed_attention as launcher
from nuvec.backends.cuda.runner import EmulatorRunner
from nuvec.fast.packed_attention import PackedAttention

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fast"))
from packed_refs import (  # noqa: E402
    SEED_LENGTHS,
    arbitrary_tables,
    reference,
    reference_grad,
    rel,
)
from test_wiring import emulated_gpu  # noqa: E402,F401  (the stand-in GPU fixture)

NUMPY = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
BOUNDS = {"float32": (1e-5, 1e-5, 1e-5), "float16": (2e-2, 1e-2, 3e-2),
          "bfloat16": (2e-2, 1e-2, 3e-2)}


def data(lengths, heads, d, dtype, seed=0):
    rng = np.random.default_rng(seed)
    t = sum(lengths)
    cast = NUMPY[dtype]
    qkv = rng.uniform(-1, 1, (t, 3 * heads * d)).astype(cast)
    cos, sin = (a.astype(cast) for a in arbitrary_tables(rng, max(lengths), d))
    dout = rng.uniform(-1, 1, (t, heads * d)).astype(cast)
    dlse = rng.uniform(-1, 1, (heads, t)).astype(np.float32)
    return qkv, cos, sin, dout, dlse


def run_case(lengths, heads, d, dtype, window, tile=None, back=None):
    qkv, cos, sin, dout, dlse = data(lengths, heads, d, dtype)
    x64, c64, s64, do64 = (a.astype(np.float64) for a in (qkv, cos, sin, dout))
    p = PackedAttention(heads, lengths, d ** -0.5, window)
    want, want_lse = reference(x64, lengths, c64, s64, heads, p.scale, window)
    runner = EmulatorRunner(seed=3)
    bound = BOUNDS[dtype]
    if tile is not None:
        out, lse = launcher.attend(runner, p, qkv, cos, sin, launcher.TILES[tile])
        assert out.dtype == NUMPY[dtype] and lse.dtype == np.float32
        assert rel(out.astype(np.float64), want) <= bound[0]
        assert rel(lse, want_lse) <= bound[1]
    if back is not None:
        out = want.astype(NUMPY[dtype])
        lse = want_lse.astype(np.float32)
        g = launcher.attend_back(runner, p, qkv, cos, sin, out, lse, dout, dlse,
                                 launcher.BACKS[back])
        want_g = reference_grad(x64, lengths, c64, s64, heads, p.scale, window, do64,
                                dlse.astype(np.float64))
        assert rel(g.astype(np.float64), want_g) <= bound[2]


@pytest.mark.parametrize("window", [None, 8, 64], ids=str)
def test_scalar_float32_seed_cases(window):
    run_case(SEED_LENGTHS, 2, 64, "float32", window, tile="r16_c16", back="c16")


@pytest.mark.parametrize("tile,back,window", [
    ("r32_c64", "c32", None), ("r64_c32", "c64", 8), ("r64_c64", "c32", 64),
], ids=str)
def test_scalar_bfloat16_schedules(tile, back, window):
    run_case(SEED_LENGTHS, 2, 64, "bfloat16", window, tile=tile, back=back)


@pytest.mark.parametrize("dtype,tile,back,window", [
    ("bfloat16", "m64_c32", "m32", 8), ("float16", "m64_c64", "m64", None),
    ("bfloat16", "m128_c64", "m32", 64),
], ids=str)
def test_mma_schedules(dtype, tile, back, window):
    run_case(SEED_LENGTHS[:4], 2, 64, dtype, window, tile=tile, back=back)


@pytest.mark.parametrize("lengths,window", [
    ([37], None), ([1, 1, 1], None), ([6, 9, 3], 0), ([6, 9, 3], 1000),
], ids=["one", "length_1", "window_0", "wide_window"])
def test_edge_cases(lengths, window):
    run_case(lengths, 2, 64, "float32", window, tile="r16_c16", back="c16")


def test_head_dimension_128():
    run_case([5, 40], 1, 128, "float32", 8, tile="r32_c32", back="c32")
    run_case([5, 40], 1, 128, "bfloat16", None, tile="m64_c32", back="m32")


def test_layout():
    cu, tiles = launcher.layout([5, 0, 40], 16)
    assert cu.tolist() == [0, 5, 5, 45]
    assert tiles.tolist() == [[0, 0], [2, 0], [2, 16], [2, 32]]


def test_usable_schedules_fit_the_shared_memory():
    small = launcher.usable_tiles("bfloat16", 128, 48 * 1024)
    assert all(launcher.attend_shared(t, 128, 2) <= 48 * 1024 for t in small.values())
    assert "r64_c64" not in small and "m64_c32" in small
    assert not any(t.mma for t in launcher.usable_tiles("float32", 64, 1 << 20).values())
    assert not any(t.mma for t in launcher.usable_tiles("bfloat16", 64, 1 << 20,
                                                        mma=False).values())
    assert set(launcher.usable_backs("float32", 128, 110 * 1024)) == {"c16", "c32"}
    assert set(launcher.usable_backs("bfloat16", 128, 110 * 1024)) == {"c16", "c32", "m32",
                                                                        "m64"}


def test_nodes_through_the_emulator_at_the_default_schedules():
    """What a GPU backend runs for the nodes, in the emulator (no tuning there)."""
    lengths, heads, d = [5, 40, 1], 2, 64
    qkv, cos, sin, dout, dlse = data(lengths, heads, d, "bfloat16")
    x64, c64, s64, do64 = (a.astype(np.float64) for a in (qkv, cos, sin, dout))
    p = PackedAttention(heads, lengths, d ** -0.5, 8)
    runner = EmulatorRunner(seed=5)
    out, lse = launcher.forward_node(runner, p, qkv, cos, sin)
    want, want_lse = reference(x64, lengths, c64, s64, heads, p.scale, 8)
    assert rel(out.astype(np.float64), want) <= 2e-2 and rel(lse, want_lse) <= 1e-2
    g = launcher.backward_node(runner, p, qkv, cos, sin, out, lse, dout)
    want_g = reference_grad(x64, lengths, c64, s64, heads, p.scale, 8, do64)
    assert rel(g.astype(np.float64), want_g) <= 3e-2


def test_gpu_stream_launches_the_kernels(emulated_gpu):  # noqa: F811  (the imported fixture)
    import nuvec as mx

    lengths, heads, d = [5, 20], 2, 64
    qkv, cos, sin, dout, _ = data(lengths, heads, d, "float32")
    x64, c64, s64, do64 = (a.astype(np.float64) for a in (qkv, cos, sin, dout))
    scale = float(np.float32(d ** -0.5))
    with mx.stream(mx.gpu):
        x, c, s = mx.array(qkv), mx.array(cos), mx.array(sin)
        out, vjps = mx.vjp(lambda a: mx.fast.packed_attention(a, lengths, c, s, heads=heads,
                                                              window=4), [x], [mx.array(dout)])
        got, g = np.asarray(out[0]), np.asarray(vjps[0])
    assert any(e.startswith("attend<float, 64") for e in emulated_gpu.launched)
    assert any(e.startswith("attend_back<float, 64") for e in emulated_gpu.launched)
    want, _ = reference(x64, lengths, c64, s64, heads, scale, 4)
    assert rel(got, want) <= 1e-5
    assert rel(g, reference_grad(x64, lengths, c64, s64, heads, scale, 4, do64)) <= 1e-5
