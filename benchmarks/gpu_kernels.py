"""Kernel timings of the fused ops on a GPU: bytes moved / kernel time, against the measured
device copy bandwidth and against PyTorch on the same data.

Run: python benchmarks/gpu_kernels.py [--quick] [--repeats N]

Each kernel runs through its launcher (`nuvec.backends.cuda.launchers`) on CuPy arrays. A
timing is the median of `--repeats` (at least 10) CUDA-event-timed calls after two warm-up
calls, with the L2 cache flushed (a 512 MiB buffer written) before each call. "bytes" is what
the op must read and write once; the fraction is bytes / time / copy bandwidth, where the copy
bandwidth is 2 * size / time of a 4 GiB device-to-device copy measured in the same run.
PyTorch (`torch.nn.functional.rms_norm`, `layer_norm`, `softmax`, `cross_entropy`,
`torch.logsumexp`, RoPE written with torch ops) runs on the same buffers when installed with
CUDA. The GPU check (`benchmarks/gpu_check.py`) imports `SECTIONS` from here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's nuvec

from nuvec.backends.cuda.launchers import elementwise, norms, rope, softmax
from nuvec.fast.cross_entropy import CrossEntropy
from nuvec.fast.norms import AddRmsNorm, LayerNorm, LayerNormVjp, RmsNorm, RmsNormVjp
from nuvec.fast.paged import PagedWrite
from nuvec.fast.rope import NormRope, Rope
from nuvec.fast.softmax import LogSumExp, Softmax


class Timer:
    """CUDA-event timings with an L2 flush before each call."""

    def __init__(self, cupy: Any, repeats: int):
        self.cp, self.repeats = cupy, max(10, repeats)
        self.flush = cupy.empty(512 * 2**20, cupy.uint8)

    def __call__(self, fn: Callable[[], Any]) -> float:
        cp = self.cp
        for _ in range(2):
            fn()
        times = []
        for _ in range(self.repeats):
            self.flush.fill(1)
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, end) * 1e-3)
        return float(np.median(times))


def copy_bandwidth(cp: Any, timer: Timer, quick: bool) -> float:
    """Bytes/s of a device-to-device copy (read + write)."""
    a = cp.ones((2**28 if quick else 2**30,), cp.float32)
    b = cp.empty_like(a)
    t = timer(lambda: b.__setitem__(Ellipsis, a))
    return 2 * a.nbytes / t


class Bench:
    """Random device data, the CuPy runner, the torch peer and the report lines."""

    def __init__(self, cp: Any, torch: Any, timer: Timer, bandwidth: float):
        from nuvec.backends.cuda.runner import CupyRunner

        self.cp, self.torch, self.timer, self.bandwidth = cp, torch, timer, bandwidth
        self.runner = CupyRunner()
        self.rng = cp.random.default_rng(0)

    def data(self, shape, dtype: str) -> Any:
        x = self.rng.standard_normal(shape, dtype=self.cp.float32)
        if dtype == "bfloat16":  # round to nearest even into the upper 16 bits
            bits = x.view(self.cp.uint32)
            return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(self.cp.uint16)
        return x.astype(dtype)

    def as_torch(self, a: Any, dtype: str) -> Any:
        t = self.torch.from_dlpack(a)
        return t.view(self.torch.bfloat16) if dtype == "bfloat16" else t

    def report(self, name: str, nbytes: float, ours: Callable[[], Any],
               peer: Callable[[], Any] | None) -> float:
        t = self.timer(ours)
        line = (f"{name:<44} {t * 1e3:9.3f} ms {nbytes / t / 1e9:8.1f} GB/s "
                f"{nbytes / t / self.bandwidth:6.2f} of copy")
        if peer is not None:
            tp = self.timer(peer)
            line += f" | torch {tp * 1e3:9.3f} ms ({t / tp:5.2f}x torch time)"
        print(line, flush=True)
        return t


def _norms(b: Bench, quick: bool) -> None:
    F = b.torch.nn.functional if b.torch else None
    for d in (4096,) if quick else (4096, 8192):
        rows, dt = 2048 if quick else 16384, "bfloat16"
        x, r, g, w, bias = (b.data((rows, d), dt), b.data((rows, d), dt), b.data((rows, d), dt),
                            b.data((d,), dt), b.data((d,), dt))
        size = rows * d * 2
        tx, tw, tb = b.as_torch(x, dt), b.as_torch(w, dt), b.as_torch(bias, dt)
        shape = f"[{rows}, {d}] {dt}"
        b.report(f"rms_norm {shape}", 2 * size, lambda: norms.rms_norm(b.runner, RmsNorm(1e-5),
                                                                     x, w),
                 (lambda: F.rms_norm(tx, (d,), tw, 1e-5)) if F else None)
        b.report(f"add_rms_norm {shape}", 4 * size,
                 lambda: norms.add_rms_norm(b.runner, AddRmsNorm(1e-5), x, r, w), None)
        b.report(f"rms_norm_vjp {shape}", 3 * size,
                 lambda: norms.rms_norm_vjp(b.runner, RmsNormVjp(1e-5), x, w, g), None)
        b.report(f"layer_norm {shape}", 2 * size,
                 lambda: norms.layer_norm(b.runner, LayerNorm(1e-5), x, w, bias),
                 (lambda: F.layer_norm(tx, (d,), tw, tb, 1e-5)) if F else None)
        b.report(f"layer_norm_vjp {shape}", 3 * size,
                 lambda: norms.layer_norm_vjp(b.runner, LayerNormVjp(1e-5), x, w, bias, g),
                 None)


def _softmax(b: Bench, quick: bool) -> None:
    torch = b.torch
    rows = 1024 if quick else 16384
    for d in (8192, 131072):
        for dt in ("float32", "bfloat16"):
            x = b.data((rows, d), dt)
            size = x.nbytes
            tx = b.as_torch(x, dt) if torch else None
            b.report(f"softmax [{rows}, {d}] {dt}", 2 * size,
                     lambda: softmax.softmax(b.runner, Softmax(), x),
                     (lambda: torch.softmax(tx, -1)) if torch else None)
            b.report(f"logsumexp [{rows}, {d}] {dt}", size,
                     lambda: softmax.logsumexp(b.runner, LogSumExp(), x),
                     (lambda: torch.logsumexp(tx, -1)) if torch else None)
    x = b.data((rows, 131072), "bfloat16")
    targets = b.cp.asarray(np.random.default_rng(0).integers(0, 131072, rows), np.int32)
    tx = b.as_torch(x, "bfloat16") if torch else None
    tt = torch.from_dlpack(targets).long() if torch else None
    b.report(f"cross_entropy [{rows}, 131072] bfloat16", x.nbytes,
             lambda: softmax.cross_entropy(b.runner, CrossEntropy(), x, targets),
             (lambda: torch.nn.functional.cross_entropy(tx.float(), tt, reduction="none"))
             if torch else None)


def _torch_rope(torch: Any, x: Any, base: float, offset: int) -> Any:
    t, d = x.shape[-2], x.shape[-1]
    inv = torch.exp(-torch.arange(d // 2, device=x.device) * (np.log(base) / (d // 2)))
    theta = (torch.arange(t, device=x.device) + offset)[:, None] * inv
    c, s = torch.cos(theta).to(x.dtype), torch.sin(theta).to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], -1)


def _rope(b: Bench, quick: bool) -> None:
    t, d, dt = (2048 if quick else 16384), 128, "bfloat16"
    offset = b.cp.asarray(np.array(0, np.int32))
    for heads in (32, 8):
        x = b.data((1, heads, t, d), dt)
        tx = b.as_torch(x, dt) if b.torch else None
        b.report(f"rope [1, {heads}, {t}, {d}] {dt}", 2 * x.nbytes,
                 lambda: rope.rope(b.runner, Rope(d, False, 10000.0, 1.0), x, offset),
                 (lambda: _torch_rope(b.torch, tx, 10000.0, 0)) if b.torch else None)
    x, w = b.data((1, 8, t, d), dt), b.data((d,), dt)
    cache = b.data((1, 8, t, d), dt)
    # The cache given up (`out=`, as the evaluator donates it): written in place.
    b.report(f"norm_rope into cache [1, 8, {t}, {d}] {dt}", 2 * x.nbytes,
             lambda: rope.norm_rope(b.runner, NormRope(1e-5, d, False, 10000.0, 1.0, 0, True),
                                    cache, x, w, out=cache), None)
    blocks, bs = t // 16, 16
    cache = b.data((blocks, 8, bs, d), dt)
    new = b.data((t, 8, d), dt)
    slots = b.cp.asarray(np.random.default_rng(1).permutation(blocks * bs)[:t], np.int32)
    b.report(f"paged_write {t} tokens [.., 8, 16, {d}] {dt}", 2 * new.nbytes,
             lambda: elementwise.paged_write(b.runner, PagedWrite(), cache, new, slots,
                                             out=cache), None)


def section_kernels(ctx: Any) -> None:
    """The GPU check's section: `ctx` has `cupy`, `torch`, `quick`, `repeats` and
    `copy_bandwidth` (bytes/s, 0 when not measured yet)."""
    timer = Timer(ctx.cupy, ctx.repeats)
    bandwidth = ctx.copy_bandwidth or copy_bandwidth(ctx.cupy, timer, ctx.quick)
    print(f"device copy: {bandwidth / 1e9:.0f} GB/s")
    bench = Bench(ctx.cupy, ctx.torch, timer, bandwidth)
    for part in (_norms, _softmax, _rope):
        part(bench, ctx.quick)


SECTIONS = [section_kernels]


def standalone(section: Callable[[Any], None], name: str, argv: list[str] | None) -> int:
    """Runs one section as its own script (`--quick`, `--repeats N`), with CuPy and, when it
    has CUDA, PyTorch; prints a note and returns 0 without a GPU."""
    parser = argparse.ArgumentParser(prog=name)
    parser.add_argument("--quick", action="store_true", help="small shapes")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no CuPy or no device: nothing to time
        print(f"{name}: no GPU available ({type(e).__name__}: {e})")
        return 0
    try:
        import torch
    except ImportError:
        torch = None
    torch = torch if torch is not None and torch.cuda.is_available() else None
    section(argparse.Namespace(cupy=cupy, torch=torch, quick=args.quick, repeats=args.repeats,
                               copy_bandwidth=0.0))
    return 0


def main(argv: list[str] | None = None) -> int:
    return standalone(section_kernels, "gpu_kernels", argv)


if __name__ == "__main__":
    raise SystemExit(main())
