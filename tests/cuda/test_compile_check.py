"""Every kernel variant compiles with NVRTC (pip wheel, no GPU) for sm_80 and sm_90, within
its register, stack and shared-memory bounds and without spills."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from nuvec.backends.cuda import loader, nvrtc
from nuvec.backends.cuda.launchers import KERNEL_FILES

pytestmark = pytest.mark.skipif(not nvrtc.available(), reason="NVRTC wheel missing")

ARCHS = ("sm_80", "sm_90")
# kernel -> (most registers per thread, most static shared bytes, most stack bytes). The
# stack of the RoPE kernels is sinf/cosf's slow range reduction (not spills).
BOUNDS = {
    "rms_norm": (40, 256, 0), "add_rms_norm": (40, 256, 0), "rms_norm_vjp": (64, 256, 0),
    "layer_norm": (40, 256, 0), "layer_norm_vjp": (64, 256, 0), "column_sum": (32, 0, 0),
    "softmax": (40, 256, 0), "logsumexp": (32, 256, 0), "row_stats": (32, 256, 0),
    "softmax_finish": (40, 256, 0), "logsumexp_finish": (32, 256, 0),
    "cross_entropy": (32, 256, 0), "cross_entropy_vjp": (40, 0, 0),
    "rope": (40, 0, 32), "norm_rope": (40, 4352, 32),
    "depthwise_conv1d": (40, 0, 0), "paged_write": (24, 0, 0),
    "sdpa_vector": (72, 0, 0), "sdpa_vector_2pass_1": (72, 512, 0),
    "sdpa_vector_2pass_2": (64, 0, 0), "sdpa_gqa_decode_1": (48, 0, 0),
    "paged_attention": (72, 0, 0),
    # packed attention: tiles in dynamic shared memory; the mma backward holds Sᵀ, dPᵀ, dK
    # and dV in registers (its sm_80 build keeps part of the score block on the stack)
    "attend": (64, 0, 0), "attend_mma": (176, 0, 0), "delta": (32, 0, 0),
    "attend_back": (80, 0, 0), "attend_back_mma": (255, 0, 256), "rotate_back": (24, 0, 0),
    # the tiled attention kernel: the FMA forward keeps its rows' outputs on the stack, the
    # mma backward part of its score block (as attend_back_mma)
    "flash_attend": (128, 0, 96), "flash_attend_mma": (224, 0, 0), "flash_delta": (32, 0, 0),
    "flash_attend_back": (48, 0, 0), "flash_attend_back_mma": (240, 0, 256),
    "flash_dq": (16, 0, 0),
    # gathered matmuls: tiles in dynamic shared memory (at most 17.7 KB), 32 float
    # accumulators per thread for tiles of 64 rows; launch bounds of 4 blocks per SM
    "gather_segments": (112, 0, 0), "gather_batched": (112, 0, 0),
    # gated delta: ROWS x N float state registers per lane (N = 8 for Dk up to 256), no shared
    "gated_delta": (88, 0, 0), "gated_delta_steps": (88, 0, 0), "gated_delta_slots": (88, 0, 0),
}


@pytest.fixture(scope="module")
def modules():
    jobs = [(kf, arch) for kf in KERNEL_FILES for arch in ARCHS]
    with ThreadPoolExecutor(2) as pool:  # NVRTC releases the GIL
        built = list(pool.map(lambda j: loader.load(j[0].name, j[0].variants, j[1]), jobs))
    return dict(zip([(kf.name, arch) for kf, arch in jobs], built))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("kf", KERNEL_FILES, ids=lambda kf: kf.name)
def test_every_variant_compiles_within_bounds(modules, kf, arch):
    m = modules[(kf.name, arch)]
    assert set(m.resources) == set(kf.variants), "ptxas reported every variant"
    for variant, r in m.resources.items():
        regs, shared, stack = BOUNDS[variant.split("<")[0]]
        assert r.spill_stores == 0 and r.spill_loads == 0, (variant, r)
        assert r.registers <= regs, (variant, arch, r)
        assert r.shared <= shared and r.stack <= stack, (variant, arch, r)


def test_every_launcher_kernel_has_bounds():
    names = {v.split("<")[0] for kf in KERNEL_FILES for v in kf.variants}
    assert names == set(BOUNDS)


# Opt-in dynamic shared memory per block: sm_80 163 KiB, sm_90 227 KiB.
SHARED_OPT_IN = {"sm_80": 163 * 1024, "sm_90": 227 * 1024}


@pytest.mark.parametrize("arch", ARCHS)
def test_tiled_attention_dynamic_shared_memory_fits(arch):
    from nuvec.backends.cuda.launchers import attention_tiled as tiled
    from nuvec.backends.cuda.launchers.rows import CTYPES, ITEMSIZE

    for variant in tiled.TILED.variants:
        name, args = variant.split("<")
        if name not in tiled.ROWS:
            continue  # flash_delta, flash_dq: no shared memory
        ctype, d = args.rstrip(">").split(", ")
        dtype = next(k for k, c in CTYPES.items() if c == ctype)
        assert tiled.shared_bytes(name, int(d), ITEMSIZE[dtype]) <= SHARED_OPT_IN[arch], variant
