"""Causal attention on the CPU: `mx.fast.scaled_dot_product_attention` against the direct NumPy
formula and PyTorch eager (when importable; never a dependency of nuvec), and its peak memory
with and without `max_score_bytes`. nuvec runs as planned (its tiles on the thread pool), on
one thread (`set_num_threads(1)`), and under a cap small enough for the online softmax over key
chunks; then the gradients of `sum(attention(q, k, v) * w)` with respect to q, k and v (the
call and its backward: `mx.grad`, the formula's backward in NumPy, PyTorch's autograd).

Run: python benchmarks/bench_attention.py [--repeats N] [--shape B H L D]
Times are medians of N runs (recording and evaluation included; nuvec and NumPy interleaved,
PyTorch after them), float32; ratios are nuvec / NumPy and nuvec / PyTorch (lower is better;
the target is <= 1 for NumPy).
"""

from __future__ import annotations

import argparse
import tracemalloc

import numpy as np
from bench_fast import medians  # benchmarks/ is the script's directory

import nuvec as mx

try:
    import torch
except ImportError:  # PyTorch is an optional peer
    torch = None


def numpy_attention(q, k, v, scale):
    """The direct formula: every score, a causal mask, softmax, values."""
    s = q @ np.swapaxes(k, -1, -2) * scale
    lq, lk = s.shape[-2:]
    s = np.where(np.arange(lq)[:, None] + lk - lq >= np.arange(lk)[None, :], s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


def numpy_attention_grads(q, k, v, w, scale):
    """The direct formula's value and its gradients of `sum(out * w)` for q, k and v."""
    s = q @ np.swapaxes(k, -1, -2) * scale
    lq, lk = s.shape[-2:]
    s = np.where(np.arange(lq)[:, None] + lk - lq >= np.arange(lk)[None, :], s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dp = w @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True)) * scale
    return ds @ k, np.swapaxes(ds, -1, -2) @ q, np.swapaxes(p, -1, -2) @ w


def peaks(fn) -> tuple[int, int]:
    """Peak bytes while `fn` runs (inputs evaluated beforehand): nuvec's own count of array
    buffers, and tracemalloc's, which also sees the temporaries inside kernels (NumPy reports
    its buffers to tracemalloc)."""
    mx.reset_peak_memory()
    tracemalloc.start()
    fn()
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return mx.get_peak_memory(), traced


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--shape", type=int, nargs=4, default=[1, 8, 1024, 64])
    args = parser.parse_args()
    b, h, n, d = args.shape
    scale = d ** -0.5
    rng = np.random.default_rng(0)
    q_np, k_np, v_np = (rng.standard_normal((b, h, n, d)).astype(np.float32) for _ in range(3))
    q, k, v = mx.array(q_np), mx.array(k_np), mx.array(v_np)
    mx.eval(q, k, v)

    def ours(cap=None, threads=None):
        def run():
            before = mx.get_num_threads()
            mx.set_num_threads(threads or before)
            try:
                mx.eval(mx.fast.scaled_dot_product_attention(
                    q, k, v, scale=scale, mask="causal", max_score_bytes=cap))
            finally:
                mx.set_num_threads(before)
        return run

    want = numpy_attention(q_np, k_np, v_np, scale)
    got = np.asarray(mx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask="causal"))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)

    torch_fn = None
    if torch is not None:
        qt, kt, vt = (torch.from_numpy(a) for a in (q_np, k_np, v_np))
        sdpa = torch.nn.functional.scaled_dot_product_attention

        def torch_fn():
            with torch.no_grad():
                sdpa(qt, kt, vt, is_causal=True, scale=scale)

    cap = 1 << 18
    t_ours, t_one, t_capped, t_np = medians(
        [ours(), ours(threads=1), ours(cap), lambda: numpy_attention(q_np, k_np, v_np, scale)],
        args.repeats)
    # PyTorch runs last, on its own: its OpenMP threads keep spinning after each call and
    # would slow down the NumPy (OpenBLAS) work interleaved with it on a small machine.
    (t_torch,) = medians([torch_fn], args.repeats)
    name = f"causal attention [{b}, {h}, {n}, {d}] float32"
    for label, t in ((name, t_ours), (f"{name}, one thread", t_one),
                     (f"{name}, max_score_bytes={cap}", t_capped)):
        line = f"{label:58s} nuvec {t * 1e3:8.2f} ms   numpy {t_np * 1e3:8.2f} ms " \
               f"(ratio {t / t_np:5.2f})"
        if t_torch is not None:
            line += f"   torch {t_torch * 1e3:7.2f} ms (ratio {t / t_torch:5.2f})"
        print(line)
    w_np = rng.standard_normal(q_np.shape).astype(np.float32)
    w = mx.array(w_np)
    grads = mx.grad(lambda q, k, v: mx.sum(mx.fast.scaled_dot_product_attention(
        q, k, v, scale=scale, mask="causal") * w), argnums=(0, 1, 2))
    for got, ref in zip(grads(q, k, v), numpy_attention_grads(q_np, k_np, v_np, w_np, scale)):
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-3, atol=1e-4)
    # each on its own, as PyTorch above: OpenBLAS's threads spinning after the formula's
    # products would hold the second core during nuvec's calls
    (t_grad,) = medians([lambda: mx.eval(grads(q, k, v))], args.repeats)
    (t_np_grad,) = medians([lambda: numpy_attention_grads(q_np, k_np, v_np, w_np, scale)],
                           args.repeats)
    line = f"{name}, gradients   nuvec {t_grad * 1e3:8.2f} ms   numpy {t_np_grad * 1e3:8.2f} " \
           f"ms (ratio {t_grad / t_np_grad:5.2f})"
    if torch is not None:
        qg, kg, vg = (t.clone().requires_grad_() for t in (qt, kt, vt))
        wt = torch.from_numpy(w_np)

        def torch_grads():
            out = sdpa(qg, kg, vg, is_causal=True, scale=scale)
            torch.autograd.grad((out * wt).sum(), [qg, kg, vg])

        (t_torch_grad,) = medians([torch_grads], args.repeats)
        line += f"   torch {t_torch_grad * 1e3:7.2f} ms (ratio {t_grad / t_torch_grad:5.2f})"
    print(line)
    full_scores = b * h * n * n * 4
    mib = 2**20
    print(f"scores of the direct formula: {full_scores / mib:.1f} MiB; inputs "
          f"{3 * q_np.nbytes / mib:.1f} MiB")
    mx.reset_peak_memory()
    tracemalloc.start()
    numpy_attention(q_np, k_np, v_np, scale)
    print(f"NumPy formula: peak {tracemalloc.get_traced_memory()[1] / mib:.2f} MiB (tracemalloc)")
    tracemalloc.stop()
    for c in (None, 1 << 20, cap):
        p = mx.fast.plan_attention(q.shape, k.shape, v.shape, mx.float32, mask="causal",
                                   max_score_bytes=c)
        own, traced = peaks(ours(c))
        print(f"max_score_bytes={str(c):8s} plan {p.kernel}, scores live at most "
              f"{p.max_intermediate_bytes / mib:.2f} MiB; peak get_peak_memory "
              f"{own / mib:.2f} MiB, tracemalloc {traced / mib:.2f} MiB")


if __name__ == "__main__":
    main()
