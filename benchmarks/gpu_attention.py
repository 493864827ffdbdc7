"""GPU timings of the planner's attention kernels (decode, and the tiled kernel's causal
prefill forward and fused backward) against PyTorch SDPA.

Run: python benchmarks/gpu_attention.py [--quick] [--repeats N]

Decode in bfloat16 with Hq = 64, Hkv = 8, D = 128 over 8192 and 32768 keys at batch 1 and
32 (one query; four causal queries at batch 1), each node being the planner's choice for a
GPU (`nuvec.fast.planner.plan`) run by its launcher (`nuvec.backends.cuda.launchers.attention`)
on CuPy arrays. Timings as in `gpu_kernels.py` (CUDA events, L2 flushed before each call,
median of at least 10); "bytes" is the keys and values read once, reported as GB/s and as a
fraction of the device copy bandwidth measured in the same run; PyTorch's
`scaled_dot_product_attention` (`enable_gqa=True`) runs on the same buffers when installed
with CUDA. Prefill: causal, B = 2, Hq = 64, Hkv = 8, D = 128, S = 4096 and 8192 (4096 only
with `--quick`), bfloat16, the tiled node (`launchers/attention_tiled.py`) forward (saving
its lse) and its backward (`AttentionVjp`), in TFLOP/s with the forward's FLOPs
4·S²·D·Hq·B halved for causal and the backward's 2.5 times that (FlashAttention-2's count).
Prints a note and exits without a GPU.
"""

from __future__ import annotations

import argparse
from typing import Any

from gpu_kernels import Bench, Timer, copy_bandwidth

from nuvec.backends.cuda.launchers import attention as launcher
from nuvec.backends.cuda.launchers import attention_tiled as tiled
from nuvec.fast.attention import Attention, attention_key
from nuvec.fast.attention_grad import AttentionVjp
from nuvec.fast.planner import AttentionOptions, Target, plan
from nuvec.graph import dtypes as dt


def planned_op(q_shape, k_shape, causal: bool) -> Attention:
    """The `Attention` node the planner records for a GPU call of these shapes (bfloat16)."""
    options = AttentionOptions(mask="causal" if causal else None)
    key = attention_key(q_shape, k_shape, k_shape, dt.bfloat16, options, Target("gpu"))
    (group,) = plan(key).route.groups
    g = group.kind
    return Attention(q_shape[3] ** -0.5, causal, False, False, g.passes, g.blocks,
                     g.gqa_kernel, g.tk1)


def _decode(b: Bench, quick: bool) -> None:
    hq, hkv, d, dtype = 64, 8, 128, "bfloat16"
    torch = b.torch
    cases = [(1, 1, 8192), (32, 1, 8192), (1, 4, 8192)]
    if not quick:
        cases += [(1, 1, 32768), (32, 1, 32768)]
    for batch, lq, lk in cases:
        q = b.data((batch, hq, lq, d), dtype)
        k, v = b.data((batch, hkv, lk, d), dtype), b.data((batch, hkv, lk, d), dtype)
        op = planned_op(q.shape, k.shape, lq > 1)
        names = "+".join(launcher.kernel_names(op)) + ("[tk1]" if op.tk1 else "")
        peer = None
        if torch:
            tq, tk, tv = (b.as_torch(a, dtype) for a in (q, k, v))
            F = torch.nn.functional
            peer = (lambda: F.scaled_dot_product_attention(tq, tk, tv, is_causal=lq > 1,
                                                           enable_gqa=True))
        b.report(f"decode B={batch} Lq={lq} Lk={lk} {names}", 2 * k.nbytes,
                 lambda: launcher.attention(b.runner, op, q, k, v), peer)


def _tflops(b: Bench, name: str, flops: float, ours: Any, peer: Any) -> None:
    t = b.timer(ours)
    line = f"{name:<44} {t * 1e3:9.3f} ms {flops / t / 1e12:7.1f} TFLOP/s"
    if peer is not None:
        tp = b.timer(peer)
        line += f" | torch {tp * 1e3:9.3f} ms {flops / tp / 1e12:7.1f} TFLOP/s ({t / tp:5.2f}x)"
    print(line, flush=True)


def _prefill(b: Bench, quick: bool) -> None:
    batch, hq, hkv, d, dtype = 2, 64, 8, 128, "bfloat16"
    torch = b.torch
    for s in (4096,) if quick else (4096, 8192):
        q = b.data((batch, hq, s, d), dtype)
        k, v = b.data((batch, hkv, s, d), dtype), b.data((batch, hkv, s, d), dtype)
        key = attention_key(q.shape, k.shape, v.shape, dt.bfloat16,
                            AttentionOptions(mask="causal"), Target("gpu"))
        assert plan(key).route.kind == "tiled"
        op = Attention(d ** -0.5, True, False, False, 0, lse=True)
        back = AttentionVjp(op.scale, True, False)
        out, lse = launcher.attention(b.runner, op, q, k, v)
        dout = b.data(out.shape, dtype)
        flops = 4 * s * s * d * hq * batch / 2
        peer_fwd = peer_back = None
        if torch:
            tq, tk, tv = (b.as_torch(a, dtype).requires_grad_() for a in (q, k, v))
            F = torch.nn.functional
            tout = F.scaled_dot_product_attention(tq, tk, tv, is_causal=True, enable_gqa=True)
            tdout = b.as_torch(dout, dtype)

            def peer_fwd():
                with torch.no_grad():
                    F.scaled_dot_product_attention(tq, tk, tv, is_causal=True, enable_gqa=True)

            def peer_back():
                torch.autograd.grad(tout, (tq, tk, tv), tdout, retain_graph=True)

        names = "+".join(tiled.kernel_names(dtype))
        _tflops(b, f"prefill S={s} fwd {names}", flops,
                lambda: launcher.attention(b.runner, op, q, k, v), peer_fwd)
        names = "+".join(tiled.kernel_names(dtype, backward=True))
        _tflops(b, f"prefill S={s} bwd {names}", 2.5 * flops,
                lambda: tiled.attend_back(b.runner, back, q, k, v, out, lse, dout), peer_back)


def section_attention(ctx: Any) -> None:
    """The GPU check's section: `ctx` as `gpu_kernels.section_kernels` takes it."""
    timer = Timer(ctx.cupy, ctx.repeats)
    bandwidth = ctx.copy_bandwidth or copy_bandwidth(ctx.cupy, timer, ctx.quick)
    print(f"device copy: {bandwidth / 1e9:.0f} GB/s")
    bench = Bench(ctx.cupy, ctx.torch, timer, bandwidth)
    _decode(bench, ctx.quick)
    _prefill(bench, ctx.quick)


SECTIONS = [section_attention]


def _torch() -> Any:
    """PyTorch when it is installed with CUDA, else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _cupy() -> Any:
    """CuPy when a CUDA device answers, else None (with a note)."""
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception as e:  # no CuPy or no device: nothing to time
        print(f"gpu_attention: no GPU available ({type(e).__name__}: {e})")
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    cupy = _cupy()
    if cupy is not None:
        section_attention(argparse.Namespace(cupy=cupy, torch=_torch(), quick=args.quick,
                                             repeats=args.repeats, copy_bandwidth=0.0))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
