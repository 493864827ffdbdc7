"""The attention planner: a table pinning its choices on GPU targets (no GPU needed) and the
CPU kernel's tiles under `max_score_bytes`."""

from __future__ import annotations

import pytest

import nuvec as mx
from nuvec.fast.attention import attention_key, plan_attention
from nuvec.fast.planner import (
    CPU_SCORE_BYTES,
    AttentionOptions,
    Composed,
    ComposedBlocks,
    CpuTiles,
    Target,
    Tiled,
    Vector,
    plan,
)

GPU, LARGE, SMALL, CPU = Target("gpu"), Target("gpu", "d"), Target("gpu", "s"), Target("cpu")
F16, F32 = mx.float16, mx.float32
NO_KERNEL = ("a GPU kernel: the CPU runs CpuTiles",) * 2

# (q shape, k shape, dtype, target, options, kernel, reasons the kernels were not chosen)
TABLE = {
    "decode_two_pass_gqa8": ((1, 32, 1, 128), (1, 4, 4096, 128), F16, GPU, {},
                             Vector(2, 64, 1), ()),
    "short_keys_one_pass": ((1, 8, 4, 64), (1, 8, 256, 64), F16, GPU, {}, Vector(1, 1, 1), ()),
    "eight_queries_two_pass": ((1, 16, 8, 64), (1, 4, 2048, 64), F32, GPU, {},
                               Vector(2, 64, 1), ()),
    "gqa32_rows_split": ((1, 32, 2, 64), (1, 1, 2048, 64), F16, GPU, {}, Vector(2, 64, 2), ()),
    "gqa64_one_pass": ((1, 64, 2, 64), (1, 1, 2048, 64), F16, GPU, {}, Vector(1, 1, 2), ()),
    "blind_rows_group": ((1, 8, 4, 64), (1, 8, 2, 64), F16, GPU, dict(mask="causal"),
                         Vector(1, 1, 2), ()),
    "large_class_blocks": ((1, 8, 1, 128), (1, 8, 40000, 128), F16, LARGE, {},
                           Vector(2, 256, 1), ()),
    "small_class_blocks": ((1, 8, 1, 128), (1, 8, 40000, 128), F16, SMALL, {},
                           Vector(2, 64, 1), ()),
    "prefill_tiled": ((1, 8, 512, 128), (1, 8, 512, 128), F16, GPU, dict(mask="causal"), Tiled(),
                      ("512 queries, the vector kernels take at most 8",)),
    "head_96_composed": ((1, 8, 512, 96), (1, 8, 512, 96), F16, GPU, {}, Composed(),
                         ("512 queries, the vector kernels take at most 8",
                          "head sizes (96, 96) not supported by the tiled kernel")),
    "head_512_two_queries": ((1, 8, 2, 512), (1, 8, 64, 512), F16, GPU, {}, Composed(),
                             ("head size 512 takes one query",
                              "head sizes (512, 512) not supported by the tiled kernel")),
    "window_one_pass": ((1, 8, 4, 64), (1, 8, 64, 64), F16, GPU,
                        dict(mask="causal", window=8), Vector(1, 1, 1), ()),
    "short_window_long_keys_one_pass": ((1, 32, 1, 128), (1, 4, 4096, 128), F16, GPU,
                                        dict(mask="causal", window=512), Vector(1, 1, 1), ()),
    "long_window_two_pass": ((1, 32, 1, 128), (1, 4, 40000, 128), F16, SMALL,
                             dict(mask="causal", window=2048), Vector(2, 128, 1), ()),
    "window_prefill_tiled": ((1, 8, 512, 128), (1, 8, 512, 128), F16, GPU,
                             dict(mask="causal", window=64), Tiled(),
                             ("512 queries, the vector kernels take at most 8",)),
    "window_prefill_head_96_composed": ((1, 8, 512, 96), (1, 8, 512, 96), F16, GPU,
                                        dict(mask="causal", window=64), Composed(),
                                        ("512 queries, the vector kernels take at most 8",
                                         "head sizes (96, 96) not supported by the tiled "
                                         "kernel")),
    "causal_more_queries_tiled": ((1, 1, 16, 64), (1, 1, 8, 64), F16, GPU, dict(mask="causal"),
                                  Composed(), ("16 queries, the vector kernels take at most 8",
                                               "causal with more queries (16) than keys (8)")),
    "empty_queries": ((1, 8, 0, 64), (1, 8, 16, 64), F16, GPU, {}, Composed(),
                      ("empty sequences",) * 2),
    "float64_on_gpu_is_cpu": ((1, 8, 1, 128), (1, 8, 64, 128), mx.float64, GPU, {},
                              CpuTiles(1, 64, 8), NO_KERNEL),
    # 256 rows of 512 float32 scores: 512 KiB a tile, 8 tiles in 4 MiB.
    "cpu_causal_tiles": ((1, 8, 1024, 64), (1, 8, 1024, 64), F32, CPU, dict(mask="causal"),
                         CpuTiles(256, 512, 8), NO_KERNEL),
    # Two tiles of half the cap each: fewer rows, 128-key chunks.
    "cpu_capped": ((1, 8, 1024, 64), (1, 8, 1024, 64), F32, CPU,
                   dict(mask="causal", max_score_bytes=1 << 16), CpuTiles(64, 128, 2), NO_KERNEL),
    "cpu_small_whole": ((1, 8, 16, 64), (1, 8, 16, 64), F32, CPU, {}, CpuTiles(16, 16, 8),
                        NO_KERNEL),
    # Four query heads per key head stacked: 64 rows of each make a tile's 256 rows.
    "cpu_gqa_stacks_heads": ((1, 32, 512, 64), (1, 8, 512, 64), F32, CPU, dict(mask="causal"),
                             CpuTiles(64, 512, 8), NO_KERNEL),
    "cpu_window_keys": ((1, 8, 1024, 64), (1, 8, 1024, 64), F32, CPU,
                        dict(mask="causal", window=100), CpuTiles(256, 355, 11), NO_KERNEL),
    # Long keys: chunks of 32768 keys (512 KiB of scores for 4 rows), an online softmax.
    "cpu_long_keys": ((1, 8, 4, 64), (1, 8, 100000, 64), F32, CPU, {}, CpuTiles(4, 32768, 8),
                      NO_KERNEL),
    "gpu_capped_composition": ((1, 8, 512, 96), (1, 8, 512, 96), F16, GPU,
                               dict(max_score_bytes=1 << 20), ComposedBlocks(64),
                               ("512 queries, the vector kernels take at most 8",
                                "head sizes (96, 96) not supported by the tiled kernel")),
}


@pytest.mark.parametrize("case", list(TABLE), ids=str)
def test_table(case):
    qs, ks, dtype, target, options, kernel, reasons = TABLE[case]
    p = plan_attention(qs, ks, ks, dtype, stream=target, **options)
    assert p.kernel == kernel
    assert tuple(r for _, r in p.rejected) == reasons
    cap = options.get("max_score_bytes")
    if isinstance(kernel, (Composed, ComposedBlocks, CpuTiles)):
        assert p.scratch_bytes == 0
        assert p.capped == (cap is not None)
        if isinstance(kernel, CpuTiles) or cap is not None:
            assert p.max_intermediate_bytes <= (cap or CPU_SCORE_BYTES)
    if isinstance(kernel, Vector) and kernel.passes == 2:
        assert p.scratch_bytes == p.max_intermediate_bytes > 0


def _route(qs, ks, dtype, target, **options):
    key = attention_key(qs, ks, ks, dtype, AttentionOptions(**options), target)
    return plan(key).route


@pytest.mark.parametrize("qs,ks,dtype,gqa_kernel,tk1", [
    ((1, 32, 1, 128), (1, 4, 4096, 128), F16, True, False),  # gqa 8, head 128
    ((1, 16, 1, 64), (1, 2, 4096, 64), F32, True, False),  # gqa 8, head 64
    ((1, 12, 1, 128), (1, 1, 4096, 128), F16, True, False),  # gqa 12
    ((1, 12, 1, 64), (1, 1, 4096, 64), F16, False, False),  # gqa 12 needs head 128
    ((1, 8, 2, 128), (1, 1, 4096, 128), F16, False, False),  # two queries
    ((1, 2, 1, 128), (1, 2, 1024, 128), F16, False, True),  # few keys per block
    ((1, 2, 1, 128), (1, 2, 1024, 128), F32, False, False),  # no tk1 variant for float32
], ids=range(7))
def test_decode_kernels(qs, ks, dtype, gqa_kernel, tk1):
    (g,) = _route(qs, ks, dtype, GPU).groups
    assert (g.kind.passes, g.kind.gqa_kernel, g.kind.tk1) == (2, gqa_kernel, tk1)


def test_masks_and_sinks_disable_the_gqa_kernel():
    qs, ks = (1, 32, 1, 128), (1, 4, 4096, 128)
    sinks = mx.zeros((32,), F16)
    (g,) = _route(qs, ks, F16, GPU, sinks=sinks).groups
    assert not g.kind.gqa_kernel
    (g,) = _route(qs, ks, F16, GPU, mask=mx.zeros((4096,), mx.bool_)).groups
    assert not g.kind.gqa_kernel


def test_groups_follow_the_causal_rows():
    r = _route((1, 8, 4, 64), (1, 8, 2, 64), F16, GPU, mask="causal")
    blind, vec = r.groups
    assert (blind.start, blind.end, blind.kind) == (0, 2, None)
    assert (vec.start, vec.end, vec.keys) == (2, 4, 2)
    r = _route((1, 32, 3, 64), (1, 1, 2048, 64), F16, GPU, mask="causal")
    assert [(g.start, g.end, g.keys) for g in r.groups] == [(0, 1, 2046), (1, 2, 2047),
                                                             (2, 3, 2048)]


def test_cap_smaller_than_one_row_takes_one_row_and_few_keys():
    p = plan_attention((1, 1, 4, 8), (1, 1, 10, 8), (1, 1, 10, 8), F32, max_score_bytes=8,
                       stream=CPU)
    assert p.kernel == CpuTiles(1, 1, 2) and p.capped and p.max_intermediate_bytes == 8


def test_cap_smaller_than_the_stacked_heads_takes_one_key():
    """A tile stacks every query head of a key head: a cap below one score of each is
    exceeded by that one column, and the plan says so."""
    p = plan_attention((1, 8, 4, 8), (1, 1, 10, 8), (1, 1, 10, 8), F32, max_score_bytes=16,
                       stream=CPU)
    assert p.kernel == CpuTiles(1, 1, 1) and p.max_intermediate_bytes == 32


@pytest.mark.parametrize("cap", [None, 1 << 12, 1 << 16, 1 << 20, 1 << 30])
def test_cpu_tiles_fit_the_budget(cap):
    """Live tiles times a tile's scores stay under the cap (and 4 MiB); a cap at or above
    the default budget changes nothing."""
    qs, ks = (2, 16, 700, 64), (2, 4, 900, 64)
    p = plan_attention(qs, ks, ks, F32, mask="causal", max_score_bytes=cap, stream=CPU)
    t = p.kernel
    assert p.max_intermediate_bytes == t.live * 4 * t.rows * t.keys * 4
    assert p.max_intermediate_bytes <= min(cap or CPU_SCORE_BYTES, CPU_SCORE_BYTES)
    assert p.capped == (cap is not None and cap < CPU_SCORE_BYTES)


def test_default_stream_is_the_cpu():
    p = plan_attention((1, 1, 4, 8), (1, 1, 4, 8), (1, 1, 4, 8), "float32")
    assert p.kernel == CpuTiles(4, 4, 1) and p.rejected[0] == ("vector", NO_KERNEL[0])


def test_rejects_unknown_targets():
    with pytest.raises(ValueError, match="^plan_attention: unknown target"):
        Target("tpu")
