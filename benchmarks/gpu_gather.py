"""GPU timings of the gathered-matmul kernels (`gather_mm.cu`) against PyTorch.

Run: python benchmarks/gpu_gather.py [--quick] [--repeats N]

- gather_mm with sorted rows (the grouped GEMM, `offsets`): 128 experts, top 8, H = 2048,
  F = 768, 32768 tokens (4096 with --quick), bfloat16, each token's row routed to 8 random
  experts and the rows sorted by expert. TFLOP/s = 2 · rows · H · F / time, against
  `torch._grouped_mm` on the same (already gathered) rows where PyTorch has it, else against
  one dense bfloat16 matmul of the same FLOPs.
- gather_qmm, 4 bits, group 64 (x · wᵀ, weights [128, F, H]) with 1, 4 and 16 tokens per
  expert, against bfloat16 gather_mm on the same rows and experts (the speed-up is the time
  ratio).

Timings as in `gpu_kernels.py` (CUDA events, L2 flushed before each call, median of at least
10). Prints a note and exits without a GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gpu_kernels import Bench, Timer, copy_bandwidth, standalone

from nuvec.backends.cuda.launchers import gather as launcher
from nuvec.fast.gather import GatherMm, GatherQmm

EXPERTS, TOP, HIDDEN, FFN = 128, 8, 2048, 768


def _routing(rows_per_expert: int | None, tokens: int, seed: int = 0):
    """Each row's token (uint32), the sorted expert indices (uint32), the offsets (int32) and
    the rows per expert, on the host."""
    rng = np.random.default_rng(seed)
    if rows_per_expert is None:  # top-k routing of every token
        experts = np.argsort(rng.random((tokens, EXPERTS)), axis=1)[:, :TOP].reshape(-1)
    else:
        experts = np.repeat(np.arange(EXPERTS), rows_per_expert)
    order = np.argsort(experts, kind="stable")
    rhs = experts[order].astype(np.uint32)
    lhs = (order // (TOP if rows_per_expert is None else 1)).astype(np.uint32)
    counts = np.bincount(rhs, minlength=EXPERTS)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32)
    return lhs, rhs, offsets, counts


def _tflops(name: str, flops: float, t: float, peer: str, tp: float | None) -> None:
    line = f"{name:<52} {t * 1e3:9.3f} ms {flops / t / 1e12:7.1f} TFLOP/s"
    if tp is not None:
        line += f" | {peer} {tp * 1e3:9.3f} ms {flops / tp / 1e12:7.1f} TFLOP/s ({t / tp:5.2f}x)"
    print(line, flush=True)


def _torch_peer(b: Bench, x: Any, w: Any, lhs: Any, counts: np.ndarray):
    """`torch._grouped_mm` on the gathered rows, else a dense matmul of the same FLOPs."""
    torch = b.torch
    if torch is None:
        return None, "torch"
    rows = b.as_torch(x, "bfloat16")[:, 0][torch.from_numpy(lhs.astype(np.int64)).cuda()]
    wt = b.as_torch(w, "bfloat16")
    if hasattr(torch, "_grouped_mm"):
        ends = torch.tensor(np.cumsum(counts), dtype=torch.int32, device=rows.device)
        # mat_b [E, K, N] in the column-major layout the grouped kernels want
        mat_b = wt.transpose(-2, -1).contiguous().transpose(-2, -1)
        try:
            torch._grouped_mm(rows, mat_b, offs=ends)
            return (lambda: torch._grouped_mm(rows, mat_b, offs=ends)), "torch._grouped_mm"
        except RuntimeError as exc:
            print(f"torch._grouped_mm unavailable here ({exc}); dense matmul instead")
    dense = wt[0]
    return (lambda: rows @ dense), "torch dense matmul"


def _gather_mm(b: Bench, quick: bool) -> None:
    tokens = 4096 if quick else 32768
    host_lhs, rhs, offsets, counts = _routing(None, tokens)
    lhs, rhs, offsets = (b.cp.asarray(a) for a in (host_lhs, rhs, offsets))
    x = b.data((tokens, 1, HIDDEN), "bfloat16")
    w = b.data((EXPERTS, HIDDEN, FFN), "bfloat16")
    flops = 2.0 * rhs.size * HIDDEN * FFN
    t = b.timer(lambda: launcher.gather_mm(b.runner, GatherMm(), x, w, lhs, rhs, offsets))
    peer, name = _torch_peer(b, x, w, host_lhs, counts)
    tp = b.timer(peer) if peer else None
    _tflops(f"gather_mm E={EXPERTS} top{TOP} {tokens} tokens H={HIDDEN} F={FFN}", flops, t,
            name, tp)


def _gather_qmm(b: Bench, quick: bool) -> None:
    bits, group = 4, 64
    cp = b.cp
    words = HIDDEN * bits // 32
    codes = np.random.default_rng(1).integers(0, 2**32, (EXPERTS, FFN, words), dtype=np.uint32)
    w_q = cp.asarray(codes)
    scales = b.data((EXPERTS, FFN, HIDDEN // group), "bfloat16")
    biases = b.data((EXPERTS, FFN, HIDDEN // group), "bfloat16")
    w = b.data((EXPERTS, HIDDEN, FFN), "bfloat16")
    op = GatherQmm(group, bits, True)
    for per in (1, 4, 16):
        lhs, rhs, offsets = (cp.asarray(a) for a in _routing(per, 0)[:3])
        x = b.data((EXPERTS * per, 1, HIDDEN), "bfloat16")
        t = b.timer(lambda: launcher.gather_qmm(b.runner, op, x, w_q, scales, biases, lhs, rhs,
                                                offsets))
        tb = b.timer(lambda: launcher.gather_mm(b.runner, GatherMm(), x, w, lhs, rhs, offsets))
        weights = EXPERTS * FFN * (words * 4 + 2 * 2 * HIDDEN // group)
        print(f"{f'gather_qmm 4-bit g64 {per} tokens/expert':<52} {t * 1e3:9.3f} ms "
              f"{weights / t / 1e9:8.1f} GB/s weights | bf16 gather_mm {tb * 1e3:9.3f} ms "
              f"({tb / t:5.2f}x faster)", flush=True)


def section_gather(ctx: Any) -> None:
    """The GPU check's section: `ctx` as `gpu_kernels.section_kernels` takes it."""
    timer = Timer(ctx.cupy, ctx.repeats)
    bandwidth = ctx.copy_bandwidth or copy_bandwidth(ctx.cupy, timer, ctx.quick)
    bench = Bench(ctx.cupy, ctx.torch, timer, bandwidth)
    _gather_mm(bench, ctx.quick)
    _gather_qmm(bench, ctx.quick)


SECTIONS = [section_gather]


def main(argv: list[str] | None = None) -> int:
    return standalone(section_gather, "gpu_gather", argv)


if __name__ == "__main__":
    raise SystemExit(main())
