"""Quantized matmul benchmark: 4-bit `[512, 4096] x [4096, 4096]^T` against NumPy.

Run: python benchmarks/bench_quantized.py [--quick]
The NumPy peer is the direct way: unpack the uint32 words with shifts and masks, scale and
shift per group, then one `x @ w.T`. Ratios are nuvec / NumPy in the same run (lower is better).
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_engine import best_of

import nuvec as mx


def numpy_quantized_matmul(x, w_q, scales, biases, group_size: int, bits: int):
    """Dequantize with NumPy (power-of-2 bits: codes never straddle words), then matmul."""
    n = w_q.shape[0]
    shifts = np.arange(0, 32, bits, dtype=np.uint32)
    codes = (w_q[:, :, None] >> shifts) & np.uint32((1 << bits) - 1)
    w = codes.reshape(n, -1, group_size).astype(np.float32)
    w = w * scales[:, :, None] + biases[:, :, None]
    return x @ w.reshape(n, -1).T


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller shapes, fewer repeats")
    args = parser.parse_args()
    m, k, n = (64, 1024, 1024) if args.quick else (512, 4096, 4096)
    repeats = 3 if args.quick else 7
    group_size, bits = 64, 4
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((m, k)).astype(np.float32)
    w_q, scales, biases = mx.quantize(mx.array(rng.standard_normal((n, k)).astype(np.float32)),
                                      group_size, bits)
    mx.eval(w_q, scales, biases)
    x = mx.array(x_np)
    wq_np, s_np, b_np = np.asarray(w_q), np.asarray(scales), np.asarray(biases)

    def ours():
        mx.eval(mx.quantized_matmul(x, w_q, scales, biases, True, group_size, bits))

    def peer():
        numpy_quantized_matmul(x_np, wq_np, s_np, b_np, group_size, bits)

    reference = numpy_quantized_matmul(x_np, wq_np, s_np, b_np, group_size, bits)
    got = np.asarray(mx.quantized_matmul(x, w_q, scales, biases, True, group_size, bits))
    np.testing.assert_allclose(got, reference, rtol=1e-3, atol=1e-2)
    # Alternate the two so that load from other processes hits both alike.
    pairs = [(best_of(ours, 1), best_of(peer, 1)) for _ in range(repeats)]
    t_ours, t_peer = min(p[0] for p in pairs), min(p[1] for p in pairs)
    median = float(np.median([a / b for a, b in pairs]))
    print(f"quantized_matmul {bits}-bit [{m}, {k}] x [{n}, {k}]^T (group {group_size}): "
          f"nuvec {t_ours * 1e3:8.1f} ms  numpy {t_peer * 1e3:8.1f} ms  "
          f"(ratio of bests {t_ours / t_peer:4.2f}, median pairwise ratio {median:4.2f})")


if __name__ == "__main__":
    main()
