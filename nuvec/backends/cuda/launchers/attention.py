"""Launchers of `attention.cu` (the planner's vector kernels for an `Attention` node) and
`paged_attention.cu`.

A node's recorded choice is what runs (`kernel_names`): `passes == 1` is `sdpa_vector`;
`passes == 2` is `sdpa_vector_2pass_1` (its `tk1` variant when the node says so) or, for the
grouped-query decode node, `sdpa_gqa_decode_1`, each followed by `sdpa_vector_2pass_2`. The
tiled choice (`passes == 0`) runs `attention_tiled.cu` (`launchers/attention_tiled.py`).
A causal node's sliding `window` is a kernel argument: each row scans only its window's keys,
and the two-pass kernels split the keys from the first query's window start.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.backends.cuda.launchers import attention_tiled as tiled
from nuvec.backends.cuda.launchers.rows import CTYPES
from nuvec.backends.cuda.runner import KernelFile, Runner

__all__ = ["ATTENTION", "PAGED_ATTENTION", "attention", "kernel_names", "paged_attention",
           "takes"]

HEADS = (64, 96, 128, 256, 512)
# (gqa, head size) of the grouped-query decode kernel (the planner's `gqa_decode`).
GQA_HEADS = ((8, 64), (8, 128), (12, 128), (16, 128))
# Head sizes of the one-key-per-lane variant (16-bit types, the planner's `tk1_variant`).
TK1_HEADS = (64, 128)
WARPS = 8


def _variants() -> tuple[str, ...]:
    out = []
    for dtype, c in CTYPES.items():
        for d in HEADS:
            out += [f"sdpa_vector<{c}, {d}>", f"sdpa_vector_2pass_1<{c}, {d}, 0>",
                    f"sdpa_vector_2pass_2<{c}, {d}>"]
            if dtype != "float32" and d in TK1_HEADS:
                out.append(f"sdpa_vector_2pass_1<{c}, {d}, 1>")
        out += [f"sdpa_gqa_decode_1<{c}, {d}, {g}>" for g, d in GQA_HEADS]
    return tuple(out)


ATTENTION = KernelFile("attention", _variants())
PAGED_HEADS = (64, 128, 256)
PAGED_ATTENTION = KernelFile("paged_attention", tuple(
    f"paged_attention<{c}, {d}>" for c in CTYPES.values() for d in PAGED_HEADS))


def takes(p: Any, inputs) -> bool:
    """Whether a kernel runs the node (other head sizes take the fallback)."""
    if p.passes == 0:
        return tiled.takes(inputs)
    d = inputs[0].shape[3]
    gqa = inputs[0].shape[1] // inputs[1].shape[1]
    if p.passes not in (1, 2) or d not in HEADS or inputs[2].shape[3] != d:
        return False
    if p.gqa_kernel and (gqa, d) not in GQA_HEADS:
        return False
    return not p.tk1 or (d in TK1_HEADS and str(inputs[0].dtype) != "float32")


def kernel_names(p: Any) -> tuple[str, ...]:
    """The kernels a vector `Attention` node launches, in order (for a tiled one see
    `attention_tiled.kernel_names`)."""
    if p.passes == 1:
        return ("sdpa_vector",)
    first = "sdpa_gqa_decode_1" if p.gqa_kernel else "sdpa_vector_2pass_1"
    return (first, "sdpa_vector_2pass_2")


def _mask_kind(runner: Runner, p: Any, inputs) -> tuple[Any, int]:
    if not p.mask:
        return runner.empty((1,), "uint8"), 0
    m = runner.contiguous(inputs[3])
    return m, 1 if runner.dtype_of(m) == "bool" else 2


def attention(runner: Runner, p: Any, *inputs: Any) -> Any:
    """`Attention(scale, causal, mask, sinks, passes, blocks, gqa_kernel, tk1, window)` of
    `(q, k, v[, mask][, sinks])` with `passes` 1 or 2; the tiled kernel's outputs for
    `passes` 0."""
    if p.passes == 0:
        return tiled.attend(runner, p, *inputs)
    q, k, v = (runner.contiguous(a) for a in inputs[:3])
    dtype = runner.dtype_of(q)
    c = CTYPES[dtype]
    b, hq, lq, d = q.shape
    hkv, lk = k.shape[1], k.shape[2]
    mask, kind = _mask_kind(runner, p, inputs)
    sinks = runner.contiguous(inputs[-1]) if p.sinks else runner.empty((1,), dtype)
    out = runner.empty((b, hq, lq, d), dtype)
    scale = np.float32(p.scale)
    window = np.int32(p.window or 0)
    if p.passes == 1:
        runner.launch(ATTENTION, f"sdpa_vector<{c}, {d}>", (lq, hq, b), (WARPS * 32,),
                      WARPS * (d + 2) * 4,
                      [q, k, v, mask, sinks, out, scale, np.uint32(hq), np.uint32(hkv),
                       np.uint32(lq), np.uint32(lk), np.int32(kind), np.int32(p.causal),
                       np.int32(p.sinks), window])
        return out
    blocks = max(1, min(int(p.blocks), lk))
    part = runner.empty((b * hq * lq * blocks * (d + 2),), "float32")
    if p.gqa_kernel:
        gqa = hq // hkv
        runner.launch(ATTENTION, f"sdpa_gqa_decode_1<{c}, {d}, {gqa}>", (blocks, hkv, b),
                      (gqa * 32,), 2 * 32 * d * q.itemsize,
                      [q, k, v, part, scale, np.uint32(hkv), np.uint32(lk), np.uint32(blocks),
                       np.uint32(max(lk - window, 0) if window else 0)])
    else:
        runner.launch(ATTENTION, f"sdpa_vector_2pass_1<{c}, {d}, {int(p.tk1)}>",
                      (blocks, lq, b * hq), (32,), 0,
                      [q, k, v, mask, part, scale, np.uint32(hq), np.uint32(hkv),
                       np.uint32(lq), np.uint32(lk), np.uint32(blocks), np.int32(kind),
                       np.int32(p.causal), window])
    runner.launch(ATTENTION, f"sdpa_vector_2pass_2<{c}, {d}>", (lq, hq, b), (32,), 0,
                  [part, sinks, out, np.uint32(hq), np.uint32(lq), np.uint32(blocks),
                   np.int32(p.sinks)])
    return out


def paged_attention(runner: Runner, p: Any, q: Any, k_cache: Any, v_cache: Any, tables: Any,
                    lengths: Any) -> Any:
    """`PagedAttention(scale)`: one block per query row, warps striding the positions read
    through the block table."""
    q, k_cache, v_cache, tables, lengths = (
        runner.contiguous(a) for a in (q, k_cache, v_cache, tables, lengths))
    dtype = runner.dtype_of(q)
    b, hq, lq, d = q.shape
    blocks, hkv, bs, _ = k_cache.shape
    out = runner.empty(q.shape, dtype)
    runner.launch(PAGED_ATTENTION, f"paged_attention<{CTYPES[dtype]}, {d}>", (lq, hq, b),
                  (WARPS * 32,), WARPS * (d + 2) * 4,
                  [q, k_cache, v_cache, tables, lengths, out, np.float32(p.scale),
                   np.uint32(hq), np.uint32(hkv), np.uint32(lq), np.uint32(blocks),
                   np.uint32(bs.bit_length() - 1), np.uint32(tables.shape[1])])
    return out
