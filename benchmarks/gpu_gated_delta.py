"""GPU timings of the gated delta kernels for decode, against the device copy bandwidth.

Run: python benchmarks/gpu_gated_delta.py [--quick] [--repeats N]

Decode (T = 1) with B in {64, 256}, Hk = 16, Hv = 32, Dk = Dv = 128 in bfloat16 (q, k, v and
the state; g and beta float32, as mlx-lm computes them), one `gated_delta` node run by its
launcher (`nuvec.backends.cuda.launchers.gated_delta`) on CuPy arrays; also a float32 state and
`gated_delta_slots` over a pool of B entries (whose copy the op returns). Timings as in
`gpu_kernels.py` (CUDA events, L2 flushed before each call, median of at least 10). "bytes" is
the state read and written once (and the pool copied, for the slots row), reported as GB/s and
as a fraction of the device copy bandwidth measured in the same run; the target for
`gated_delta` is 0.84 of it. PyTorch eager (the rule's step written with torch ops, float32)
runs on the same buffers when installed with CUDA. Prints a note and exits without a GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gpu_kernels import Bench, Timer, copy_bandwidth, standalone

from nuvec.backends.cuda.launchers import gated_delta as launcher
from nuvec.fast.gated_delta import GatedDelta, GatedDeltaSlots

TARGET = 0.84  # of the copy bandwidth over the state read and written


def _torch_step(torch: Any, q, k, v, g, beta, state) -> Any:
    """One decode step of the rule with torch ops (float32), y and the new state."""
    hv, hk = v.shape[2], q.shape[2]
    qf, kf = (x.float().repeat_interleave(hv // hk, dim=2)[:, 0] for x in (q, k))
    s = state.float() * g[:, 0, :, None, None]
    mem = (s * kf[:, :, None, :]).sum(-1)
    delta = (v[:, 0].float() - mem) * beta[:, 0, :, None]
    s = s + kf[:, :, None, :] * delta[..., None]
    y = (s * qf[:, :, None, :]).sum(-1)
    return y.to(q.dtype), s.to(state.dtype)


def _decode(b: Bench, quick: bool) -> None:
    hk, hv, d, dtype = 16, 32, 128, "bfloat16"
    cases = [(64, dtype)] + ([] if quick else [(256, dtype), (64, "float32")])
    for batch, sdtype in cases:
        q, k = b.data((batch, 1, hk, d), dtype), b.data((batch, 1, hk, d), dtype)
        v = b.data((batch, 1, hv, d), dtype)
        g = b.cp.asarray(np.random.default_rng(0).uniform(0.5, 1.0, (batch, 1, hv)), np.float32)
        beta = b.cp.asarray(np.random.default_rng(1).uniform(0.1, 0.9, (batch, 1, hv)),
                            np.float32)
        state = b.data((batch, hv, d, d), sdtype)
        op = GatedDelta(False)
        peer = None
        if b.torch:
            tq, tk, tv, ts = (b.as_torch(a, t) for a, t in
                              ((q, dtype), (k, dtype), (v, dtype), (state, sdtype)))
            tg, tb = b.torch.from_dlpack(g), b.torch.from_dlpack(beta)
            peer = (lambda: _torch_step(b.torch, tq, tk, tv, tg, tb, ts))
        name = f"gated_delta B={batch} Hv={hv} D={d} T=1 state {sdtype}"
        t = b.report(name, 2 * state.nbytes,
                     lambda: launcher.gated_delta(b.runner, op, q, k, v, g, beta, state), peer)
        print(f"{'':44} target {TARGET:.2f} of copy: "
              f"{'met' if 2 * state.nbytes / t / b.bandwidth >= TARGET else 'not met'}")
    batch = 64
    q, k = b.data((batch, 1, hk, d), dtype), b.data((batch, 1, hk, d), dtype)
    v = b.data((batch, 1, hv, d), dtype)
    g = beta = b.cp.full((batch, 1, hv), 0.9, np.float32)
    pool = b.data((batch, hv, d, d), dtype)
    slots = b.cp.asarray(np.random.default_rng(2).permutation(batch), np.int32)
    b.report(f"gated_delta_slots B={batch} pool {batch} (copied)", 4 * pool.nbytes,
             lambda: launcher.gated_delta_slots(b.runner, GatedDeltaSlots(), q, k, v, g, beta,
                                                pool, slots), None)


def section_gated_delta(ctx: Any) -> None:
    """Gated delta decode (B 64/256, Hv 32, D 128, bfloat16) against the copy bandwidth.

    `ctx` as `gpu_kernels.section_kernels` takes it."""
    timer = Timer(ctx.cupy, ctx.repeats)
    bandwidth = ctx.copy_bandwidth or copy_bandwidth(ctx.cupy, timer, ctx.quick)
    print(f"device copy: {bandwidth / 1e9:.0f} GB/s")
    _decode(Bench(ctx.cupy, ctx.torch, timer, bandwidth), ctx.quick)


SECTIONS = [section_gated_delta]


def main(argv: list[str] | None = None) -> int:
    return standalone(section_gated_delta, "gpu_gated_delta", argv)


if __name__ == "__main__":
    raise SystemExit(main())
