"""Packed attention with RoPE inside on the CPU: `mx.fast.packed_attention` against the direct
NumPy formula (a loop over sequences) and PyTorch's per-sequence SDPA with a separate RoPE
(when importable; never a dependency of nuvec), forward and forward + backward, and peak
memory against the dense-mask formula (one T × T score matrix per head, block-diagonal mask).

Run: python benchmarks/bench_packed_attention.py [--repeats N] [--heads H] [--quick]
The shape is the seed's bench shape: 32 sequences of 64 to 191 tokens (T = 4000), 12 heads,
D = 64, float32. Times are medians of N runs (recording and evaluation included) after 8
untimed runs of every contender: a training loop's steady state (glibc's malloc raises its mmap
threshold over the first steps, so early steps page-fault their fresh buffers: nuvec's forward +
backward takes 115-145 ms in its first 7 steps and 65-75 ms after). Ratios are nuvec / peer
(lower is better; the target is <= 1 against NumPy).
"""

from __future__ import annotations

import argparse
import tracemalloc

import numpy as np
from bench_fast import medians  # benchmarks/ is the script's directory

import nuvec as mx
from nuvec.fast.packed_attention import PackedAttention

WARMUP = 8  # untimed runs of each contender first (see the module docstring)

try:
    import torch
except ImportError:  # PyTorch is an optional peer
    torch = None


def bench_lengths() -> list[int]:
    return [64 + (i * 37) % 128 for i in range(32)]


def rope_tables(p: int, d: int):
    theta = np.arange(p)[:, None] / 10000.0 ** (2.0 * np.arange(d // 2)[None, :] / d)
    return np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)


def rotate(x, c, s):
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1)


def rotate_back(y, c, s):
    h = y.shape[-1] // 2
    y1, y2 = y[..., :h], y[..., h:]
    return np.concatenate([y1 * c + y2 * s, y2 * c - y1 * s], axis=-1)


def keep(n, window):
    i = np.arange(n)
    return None if window is None else np.abs(i[:, None] - i[None, :]) <= window


def numpy_forward(qkv, lengths, cos, sin, heads, scale, window, backward_of=None):
    """The direct formula, sequence by sequence (heads batched); with `backward_of` (the
    output's cotangent) also the gradient of qkv."""
    t, width = qkv.shape
    d = width // (3 * heads)
    x = qkv.reshape(t, 3, heads, d).transpose(1, 2, 0, 3)  # [3, H, T, D]
    out = np.empty((heads, t, d), np.float32)
    grad = None if backward_of is None else np.empty((t, 3, heads, d), np.float32)
    at = 0
    for n in lengths:
        rows = slice(at, at + n)
        at += n
        c, s = cos[:n], sin[:n]
        q, k, v = rotate(x[0][:, rows], c, s) * scale, rotate(x[1][:, rows], c, s), x[2][:, rows]
        sc = q @ np.swapaxes(k, -1, -2)
        m = keep(n, window)
        if m is not None:
            sc = np.where(m, sc, -np.inf)
        e = np.exp(sc - sc.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
        o = p @ v
        out[:, rows] = o
        if grad is not None:
            do = backward_of.reshape(t, heads, d).transpose(1, 0, 2)[:, rows]
            dp = do @ np.swapaxes(v, -1, -2)
            ds = p * (dp - np.sum(do * o, -1, keepdims=True))
            grad[rows, 0] = (rotate_back(ds @ k, c, s) * scale).transpose(1, 0, 2)
            grad[rows, 1] = rotate_back(np.swapaxes(ds, -1, -2) @ q, c, s).transpose(1, 0, 2)
            grad[rows, 2] = (np.swapaxes(p, -1, -2) @ do).transpose(1, 0, 2)
    out = out.transpose(1, 0, 2).reshape(t, heads * d)
    return out if grad is None else (out, grad.reshape(t, width))


def dense_forward(qkv, lengths, cos, sin, heads, scale):
    """The dense-mask formula: every T × T score, a block-diagonal mask (positions within
    each sequence for the rotation)."""
    t, width = qkv.shape
    d = width // (3 * heads)
    x = qkv.reshape(t, 3, heads, d).transpose(1, 2, 0, 3)
    pos = np.concatenate([np.arange(n) for n in lengths])
    seq = np.repeat(np.arange(len(lengths)), lengths)
    c, s = cos[pos], sin[pos]
    q, k, v = rotate(x[0], c, s) * scale, rotate(x[1], c, s), x[2]
    sc = q @ np.swapaxes(k, -1, -2)
    sc = np.where(seq[:, None] == seq[None, :], sc, -np.inf)
    e = np.exp(sc - sc.max(-1, keepdims=True))
    return ((e / e.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(t, heads * d)


def torch_peer(qkv_np, lengths, cos_np, sin_np, heads, scale, window, backward):
    """PyTorch eager: a separate RoPE per sequence, then SDPA per sequence."""
    t, width = qkv_np.shape
    d = width // (3 * heads)
    qkv = torch.from_numpy(qkv_np.copy()).requires_grad_(backward)
    cos, sin = torch.from_numpy(cos_np), torch.from_numpy(sin_np)
    masks = {n: (None if keep(n, window) is None else torch.from_numpy(keep(n, window)))
             for n in set(lengths)}
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def rot(y, c, s):
        y1, y2 = y[..., : d // 2], y[..., d // 2:]
        return torch.cat([y1 * c - y2 * s, y1 * s + y2 * c], dim=-1)

    def run():
        with torch.set_grad_enabled(backward):
            x = qkv.view(t, 3, heads, d).permute(1, 2, 0, 3)
            outs, at = [], 0
            for n in lengths:
                c, s = cos[:n], sin[:n]
                q = rot(x[0][:, at:at + n], c, s)
                k = rot(x[1][:, at:at + n], c, s)
                outs.append(sdpa(q[None], k[None], x[2][None, :, at:at + n],
                                 attn_mask=masks[n], scale=scale)[0])
                at += n
            out = torch.cat(outs, dim=1).permute(1, 0, 2).reshape(t, heads * d)
            if backward:
                out.backward(torch.ones_like(out))
                qkv.grad = None

    return run


def peak(fn) -> int:
    tracemalloc.start()
    fn()
    top = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return top


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--memory-heads", type=int, default=2,
                        help="heads of the peak-memory comparison (the dense formula holds "
                             "heads · T² scores)")
    parser.add_argument("--quick", action="store_true", help="8 sequences, 2 repeats")
    args = parser.parse_args()
    lengths = bench_lengths()[: 8 if args.quick else 32]
    repeats = 2 if args.quick else args.repeats
    heads, d = args.heads, 64
    t = sum(lengths)
    scale = d ** -0.5
    rng = np.random.default_rng(0)
    qkv_np = rng.uniform(-1, 1, (t, 3 * heads * d)).astype(np.float32)
    cos_np, sin_np = rope_tables(256, d)
    qkv, cos, sin = mx.array(qkv_np), mx.array(cos_np), mx.array(sin_np)
    ones = np.ones((t, heads * d), np.float32)
    mx.eval(qkv, cos, sin)
    print(f"packed attention: {len(lengths)} sequences, T = {t}, {heads} heads, D = {d}, "
          f"float32")

    for window in (None, 64):
        def fwd():
            mx.eval(mx.fast.packed_attention(qkv, lengths, cos, sin, heads=heads,
                                             window=window))

        def fwd_bwd():
            mx.eval(mx.value_and_grad(lambda x: mx.sum(mx.fast.packed_attention(
                x, lengths, cos, sin, heads=heads, window=window)))(qkv))

        def graph():
            op = PackedAttention(heads, lengths, scale, window)
            mx.eval(op.fallback([qkv, cos, sin])[0])

        want = numpy_forward(qkv_np, lengths, cos_np, sin_np, heads, scale, window)
        np.testing.assert_allclose(np.asarray(mx.fast.packed_attention(
            qkv, lengths, cos, sin, heads=heads, window=window)), want, rtol=1e-4, atol=1e-5)
        times = medians([
            fwd, graph, lambda: numpy_forward(qkv_np, lengths, cos_np, sin_np, heads, scale,
                                              window),
            fwd_bwd, lambda: numpy_forward(qkv_np, lengths, cos_np, sin_np, heads, scale,
                                           window, ones)], repeats, WARMUP)
        t_fwd, t_graph, t_np, t_fb, t_np_fb = times
        peers = [None, None]
        if torch is not None:
            # PyTorch runs after the others: its OpenMP threads keep spinning after each call.
            peers = medians([torch_peer(qkv_np, lengths, cos_np, sin_np, heads, scale, window,
                                        b) for b in (False, True)], repeats, WARMUP)
        for label, ours, np_t, torch_t in (("forward", t_fwd, t_np, peers[0]),
                                           ("forward + backward", t_fb, t_np_fb, peers[1])):
            line = (f"window {str(window):4s} {label:18s} nuvec {ours * 1e3:8.1f} ms   numpy "
                    f"{np_t * 1e3:8.1f} ms (ratio {ours / np_t:5.2f})")
            if torch_t is not None:
                line += f"   torch {torch_t * 1e3:8.1f} ms (ratio {ours / torch_t:5.2f})"
            print(line, flush=True)
        print(f"window {str(window):4s} forward, fallback graph of ordinary ops: "
              f"{t_graph * 1e3:.1f} ms (ratio to numpy {t_graph / t_np:5.2f})", flush=True)

    h = args.memory_heads
    small = qkv_np.reshape(t, 3, heads, d)[:, :, :h].reshape(t, 3 * h * d).copy()
    small_mx = mx.array(small)
    mx.eval(small_mx)
    mib = 2 ** 20
    ours = peak(lambda: mx.eval(mx.fast.packed_attention(small_mx, lengths, cos, sin, heads=h)))
    direct = peak(lambda: numpy_forward(small, lengths, cos_np, sin_np, h, scale, None))
    dense = peak(lambda: dense_forward(small, lengths, cos_np, sin_np, h, scale))
    print(f"peak memory at {h} heads (tracemalloc): nuvec {ours / mib:.1f} MiB, per-sequence "
          f"numpy {direct / mib:.1f} MiB, dense-mask formula {dense / mib:.1f} MiB "
          f"(ratio {ours / dense:.3f}); inputs {small.nbytes / mib:.1f} MiB")


if __name__ == "__main__":
    main()
