"""Packed attention on a GPU (the device check of issue 11): nuvec's tuned kernels in bfloat16
against PyTorch on the same data: `scaled_dot_product_attention` over the whole pack with a
block-diagonal mask plus a separate RoPE, and per-sequence SDPA calls plus RoPE.

Shapes: the seed's bench shape (32 sequences of 64-191 tokens, 12 heads, D = 64) and a long
pack (8 × 2048 tokens, 16 heads, D = 128); windows None and 64; forward and forward + backward.
Run: python benchmarks/gpu_packed_attention.py [--iters N]   (or `run()` from gpu_check.py)
Needs CuPy and a CUDA device; PyTorch with CUDA for the peers (skipped without). Times are
means over N launches after a warm-up (the first call tunes and caches the tiles); TFLOP/s
count 4·D FLOPs per (query, key) pair in reach forward and 2.5 times that for forward +
backward (the forward's two products plus the backward's five, less the recomputed one).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

SHAPES = {"seed": ([64 + (i * 37) % 128 for i in range(32)], 12, 64),
          "long": ([2048] * 8, 16, 128)}


def pairs(lengths, window) -> int:
    """(query, key) pairs in reach: each token sees its sequence, cut to |i − j| ≤ window."""
    total = 0
    for n in lengths:
        if window is None or window >= n - 1:
            total += n * n
        else:
            i = np.arange(n)
            total += int(np.sum(np.minimum(i + window, n - 1) - np.maximum(i - window, 0) + 1))
    return total


def tables(p: int, d: int):
    theta = np.arange(p)[:, None] / 10000.0 ** (2.0 * np.arange(d // 2)[None, :] / d)
    return np.cos(theta), np.sin(theta)


def timed(sync, fn, iters: int) -> float:
    """Mean ms of `fn()` after a warm-up call (the warm-up tunes on the first shape)."""
    fn()
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    return (time.perf_counter() - start) * 1e3 / iters


def nuvec_case(cupy, lengths, heads, d, window, qkv_host, dout_host):
    """nuvec's forward and forward + backward closures on CuPy bfloat16 buffers."""
    import ml_dtypes

    from nuvec.backends.cuda.launchers import packed_attention as launcher
    from nuvec.backends.cuda.runner import CupyRunner
    from nuvec.fast.packed_attention import PackedAttention

    runner = CupyRunner()
    as_bf16 = lambda a: cupy.asarray(a.astype(ml_dtypes.bfloat16).view(np.uint16))  # noqa: E731
    cos, sin = tables(max(lengths), d)
    qkv, c, s, dout = (as_bf16(a) for a in (qkv_host, cos, sin, dout_host))
    p = PackedAttention(heads, lengths, d ** -0.5, window)

    def forward():
        return launcher.forward_node(runner, p, qkv, c, s)

    def forward_backward():
        out, lse = launcher.forward_node(runner, p, qkv, c, s)
        return launcher.backward_node(runner, p, qkv, c, s, out, lse, dout)

    return forward, forward_backward


def torch_cases(torch, lengths, heads, d, window, qkv_host, dout_host):
    """PyTorch's closures: dense SDPA with a block-diagonal mask, and SDPA per sequence, each
    after a separate RoPE; (forward, forward + backward) for each."""
    dev = torch.device("cuda")
    t = sum(lengths)
    qkv = torch.tensor(qkv_host, dtype=torch.bfloat16, device=dev, requires_grad=True)
    dout = torch.tensor(dout_host, dtype=torch.bfloat16, device=dev)
    cos, sin = (torch.tensor(a, dtype=torch.bfloat16, device=dev) for a in tables(max(lengths), d))
    pos = torch.tensor(np.concatenate([np.arange(n) for n in lengths]), device=dev)
    seq = torch.repeat_interleave(torch.arange(len(lengths), device=dev),
                                  torch.tensor(lengths, device=dev))
    ii = pos[:, None] - pos[None, :]
    mask = seq[:, None] == seq[None, :]
    if window is not None:
        mask = mask & (ii.abs() <= window)
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def rope(x, c, s):
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1)

    def heads_first():
        x = qkv.view(t, 3, heads, d).permute(1, 2, 0, 3)
        c, s = cos[pos], sin[pos]
        return rope(x[0], c, s), rope(x[1], c, s), x[2]

    def dense():
        q, k, v = heads_first()
        return sdpa(q[None], k[None], v[None], attn_mask=mask)[0]

    local = {}
    for n in set(lengths):
        if window is not None and window < n - 1:
            i = torch.arange(n, device=dev)
            local[n] = (i[:, None] - i[None, :]).abs() <= window
        else:
            local[n] = None

    def per_sequence():
        q, k, v = heads_first()
        outs, at = [], 0
        for n in lengths:
            outs.append(sdpa(q[None, :, at:at + n], k[None, :, at:at + n],
                             v[None, :, at:at + n], attn_mask=local[n])[0])
            at += n
        return torch.cat(outs, dim=1)

    def with_backward(f):
        def run():
            out = f().permute(1, 0, 2).reshape(t, heads * d)
            out.backward(dout)
            qkv.grad = None
        return run

    def no_grad(f):
        def run():
            with torch.no_grad():
                f()
        return run

    return {"sdpa block-diagonal mask": (no_grad(dense), with_backward(dense)),
            "sdpa per sequence": (no_grad(per_sequence), with_backward(per_sequence))}


def run(iters: int = 20) -> list[str]:
    """Prints (and returns) one line per (shape, window, pass, implementation)."""
    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no CuPy or no device: nothing to measure
        say(f"packed attention: no CUDA device through CuPy ({type(exc).__name__}: {exc})")
        return lines
    try:
        import torch
        torch = torch if torch.cuda.is_available() else None
    except ImportError:
        torch = None
    sync = cupy.cuda.Device().synchronize
    for shape, (lengths, heads, d) in SHAPES.items():
        rng = np.random.default_rng(0)
        t = sum(lengths)
        qkv_host = rng.uniform(-1, 1, (t, 3 * heads * d)).astype(np.float32)
        dout_host = rng.uniform(-1, 1, (t, heads * d)).astype(np.float32)
        for window in (None, 64):
            flops = 4 * d * heads * pairs(lengths, window)
            cases = {"nuvec tuned": nuvec_case(cupy, lengths, heads, d, window, qkv_host,
                                               dout_host)}
            if torch is not None:
                cases.update(torch_cases(torch, lengths, heads, d, window, qkv_host,
                                         dout_host))

            def both_sync():
                sync()
                if torch is not None:
                    torch.cuda.synchronize()

            for label, (fwd, fwd_bwd) in cases.items():
                for name, fn, work in (("forward", fwd, flops),
                                       ("forward + backward", fwd_bwd, 2.5 * flops)):
                    ms = timed(both_sync, fn, iters)
                    say(f"{shape:4s} T={t:6d} H={heads:2d} D={d:3d} window={str(window):4s} "
                        f"{name:18s} {label:24s} {ms:9.3f} ms {work / ms / 1e9:7.1f} TFLOP/s")
    return lines


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=20)
    run(parser.parse_args().iters)
