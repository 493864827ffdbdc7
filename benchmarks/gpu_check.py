"""The GPU check: every GPU-marked test, then nuvec on the GPU against CuPy and PyTorch CUDA.

Run: python benchmarks/gpu_check.py [--quick] [--no-tests] [--sections a,b] [--list]

One command, under 5 minutes on one H200. It runs `pytest -m gpu` (the op, transform and
fused-op tests on the GPU), then prints, per section, nuvec on the GPU, CuPy called directly
and PyTorch CUDA eager (each skipped with a note when absent), measured in the same run:
per-op dispatch, `exp(x) * w + b`, a compiled 8-op chain (one fused kernel, against
uncompiled and `torch.compile`), sums over each axis, softmax, float32 and bfloat16 matmuls,
and the device copy bandwidth that the elementwise and reduction figures are compared with.

To add a timing (a fused kernel, say), write `def section_name(ctx) -> None` printing rows
with `ctx.row(...)` and append it to `SECTIONS`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's nuvec, wherever the command is run from

import nuvec as mx  # noqa: E402
import gpu_attention  # noqa: E402  (beside this script)
import gpu_gather  # noqa: E402  (beside this script)
import gpu_gated_delta  # noqa: E402  (beside this script)
import gpu_kernels  # noqa: E402  (beside this script)
import gpu_packed_attention  # noqa: E402  (beside this script)


@dataclass
class Context:
    """What the sections share: the libraries found, sizes, repeats and the copy bandwidth."""

    cupy: Any
    torch: Any
    quick: bool
    repeats: int
    copy_bandwidth: float = 0.0  # bytes/s, measured by `section_copy`
    notes: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return 2048 if self.quick else 8192

    def row(self, name: str, times: dict[str, float | None], work: float = 0.0,
            unit: str = "") -> None:
        """One line: each peer's time, and `work / time` in `unit` (GB/s, TFLOP/s) if given."""
        parts = []
        ours = times.get("nuvec")
        for peer, t in times.items():
            if t is None:
                parts.append(f"{peer} n/a")
                continue
            text = f"{peer} {t * 1e3:9.3f} ms"
            if work:
                text += f" {work / t / (1e12 if unit == 'TFLOP/s' else 1e9):7.1f} {unit}"
            if peer != "nuvec" and ours:
                text += f" (nuvec/{peer} {ours / t:5.2f})"
            parts.append(text)
        print(f"{name:34s} " + "  ".join(parts))


def timed(fn: Callable[[], Any], sync: Callable[[], None], repeats: int) -> float:
    """The fastest of `repeats` runs of `fn` (after a warm-up), each ended by `sync`."""
    fn()
    sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


def _peers(ctx: Context) -> tuple[Callable[[], None], Callable[[], None]]:
    cupy_sync = (lambda: ctx.cupy.cuda.Device().synchronize()) if ctx.cupy else (lambda: None)
    torch_sync = (lambda: ctx.torch.cuda.synchronize()) if ctx.torch else (lambda: None)
    return cupy_sync, torch_sync


def _nothing() -> None:
    return None


def section_dispatch(ctx: Context) -> None:
    """256 chained `x * 1.0001 + 0.5` on [16]: per-op overhead in µs."""
    ops, chain = 256, 128
    x_np = np.linspace(0.1, 1.0, 16, dtype=np.float32)
    x = mx.array(x_np)
    cupy_sync, torch_sync = _peers(ctx)

    def nuvec_chain() -> None:
        y = x
        for _ in range(chain):
            y = y * 1.0001 + 0.5
        mx.eval(y)

    times: dict[str, float | None] = {"nuvec": timed(nuvec_chain, _nothing, ctx.repeats) / ops}
    times["cupy"] = times["torch"] = None
    if ctx.cupy:
        xc = ctx.cupy.asarray(x_np)

        def cupy_chain() -> None:
            y = xc
            for _ in range(chain):
                y = y * 1.0001 + 0.5

        times["cupy"] = timed(cupy_chain, cupy_sync, ctx.repeats) / ops
    if ctx.torch:
        xt = ctx.torch.from_numpy(x_np).cuda()

        def torch_chain() -> None:
            y = xt
            for _ in range(chain):
                y = y * 1.0001 + 0.5

        times["torch"] = timed(torch_chain, torch_sync, ctx.repeats) / ops
    parts = [f"{k} {v * 1e6:6.2f} us/op" if v else f"{k} n/a" for k, v in times.items()]
    print(f"{'dispatch: 256 chained ops on [16]':34s} " + "  ".join(parts))


def section_copy(ctx: Context) -> None:
    """The device copy bandwidth (read + write bytes per second) of a large float32 copy."""
    if not ctx.cupy:
        print("copy bandwidth: needs CuPy")
        return
    cp = ctx.cupy
    n = ctx.n * ctx.n
    src, dst = cp.ones(n, cp.float32), cp.empty(n, cp.float32)
    cupy_sync, torch_sync = _peers(ctx)
    t = timed(lambda: cp.copyto(dst, src), cupy_sync, ctx.repeats)
    ctx.copy_bandwidth = 2 * src.nbytes / t
    x = mx.array(np.ones(n, np.float32))
    ours = timed(lambda: mx.eval(mx.multiply(x, 1.0)), _nothing, ctx.repeats)
    ctx.row(f"copy {n * 4 >> 20} MiB (x * 1 for nuvec)",
            {"nuvec": ours, "cupy": t}, 2 * src.nbytes, "GB/s")
    print(f"{'':34s} device copy bandwidth {ctx.copy_bandwidth / 1e12:5.2f} TB/s")


def _fraction(ctx: Context, nbytes: float, t: float | None) -> None:
    if ctx.copy_bandwidth and t:
        print(f"{'':34s} nuvec at {nbytes / t / ctx.copy_bandwidth:4.2f} of copy bandwidth")


def section_elementwise(ctx: Context) -> None:
    """`exp(x) * w + b` on [n, n] float32."""
    n = ctx.n
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((n, n), dtype=np.float32)
    w_np = rng.standard_normal((n, n), dtype=np.float32)
    b_np = rng.standard_normal((n,), dtype=np.float32)
    x, w, b = mx.array(x_np), mx.array(w_np), mx.array(b_np)
    cupy_sync, torch_sync = _peers(ctx)
    times: dict[str, float | None] = {
        "nuvec": timed(lambda: mx.eval(mx.exp(x) * w + b), _nothing, ctx.repeats)}
    times["cupy"] = times["torch"] = None
    if ctx.cupy:
        xc, wc, bc = (ctx.cupy.asarray(a) for a in (x_np, w_np, b_np))
        times["cupy"] = timed(lambda: ctx.cupy.exp(xc) * wc + bc, cupy_sync, ctx.repeats)
    if ctx.torch:
        xt, wt, bt = (ctx.torch.from_numpy(a).cuda() for a in (x_np, w_np, b_np))
        times["torch"] = timed(lambda: ctx.torch.exp(xt) * wt + bt, torch_sync, ctx.repeats)
    nbytes = 3 * x_np.nbytes  # the least traffic: read x and w, write the result
    ctx.row(f"exp(x) * w + b [{n}, {n}]", times, nbytes, "GB/s")
    _fraction(ctx, nbytes, times["nuvec"])


def _chain8(lib: Any, x: Any, w: Any, b: Any) -> Any:
    return lib.tanh(lib.exp(x) * w + b) * 0.5 + lib.sin(x) - 1


def _torch_compiled(ctx: Context, fn: Callable[..., Any]) -> Callable[..., Any] | None:
    """`torch.compile(fn)`, or None (with a note) where it cannot compile here."""
    try:
        return ctx.torch.compile(fn)
    except Exception as exc:  # a missing Triton or compiler: a note, not a failure
        print(f"{'':34s} torch.compile unavailable: {type(exc).__name__}: {exc}")
        return None


def section_fused_chain(ctx: Context) -> None:
    """The 8-op chain `tanh(exp(x) * w + b) * 0.5 + sin(x) - 1` on [n, n] float32: compiled
    (one generated CUDA kernel) against the same ops uncompiled, PyTorch eager and
    `torch.compile`."""
    n = ctx.n
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((n, n), dtype=np.float32) * 0.5
    w_np, b_np = (rng.standard_normal((n,), dtype=np.float32) for _ in range(2))
    x, w, b = mx.array(x_np), mx.array(w_np), mx.array(b_np)
    compiled = mx.compile(lambda *a: _chain8(mx, *a))
    out = compiled(x, w, b)
    if out.primitive is None or out.primitive.name != "FusedElementwise":
        print(f"{'':34s} fused chain: compile recorded {out.primitive!r}, not one fused node")
    rows = slice(0, 64)
    np.testing.assert_allclose(np.array(out)[rows], _chain8(np, x_np[rows], w_np, b_np),
                               rtol=1e-4, atol=1e-4)
    _, torch_sync = _peers(ctx)
    times: dict[str, float | None] = {
        "nuvec": timed(lambda: mx.eval(compiled(x, w, b)), _nothing, ctx.repeats),
        "uncompiled": timed(lambda: mx.eval(_chain8(mx, x, w, b)), _nothing, ctx.repeats),
        "torch": None, "torch.compile": None}
    if ctx.torch:
        xt, wt, bt = (ctx.torch.from_numpy(a).cuda() for a in (x_np, w_np, b_np))
        times["torch"] = timed(lambda: _chain8(ctx.torch, xt, wt, bt), torch_sync, ctx.repeats)
        fused = _torch_compiled(ctx, lambda *a: _chain8(ctx.torch, *a))
        if fused is not None:
            try:
                times["torch.compile"] = timed(lambda: fused(xt, wt, bt), torch_sync,
                                               ctx.repeats)
            except Exception as exc:  # compilation happens at the first call
                print(f"{'':34s} torch.compile failed: {type(exc).__name__}: {exc}")
    nbytes = 2 * x_np.nbytes  # the least traffic: read x, write the result
    ctx.row(f"8-op chain, compiled [{n}, {n}]", times, nbytes, "GB/s")
    _fraction(ctx, nbytes, times["nuvec"])


def section_reductions(ctx: Context) -> None:
    """`sum` over axis 0 and axis 1 of [n, n] float32."""
    n = ctx.n
    x_np = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
    x = mx.array(x_np)
    cupy_sync, torch_sync = _peers(ctx)
    xc = ctx.cupy.asarray(x_np) if ctx.cupy else None
    xt = ctx.torch.from_numpy(x_np).cuda() if ctx.torch else None
    for axis in (0, 1):
        times: dict[str, float | None] = {
            "nuvec": timed(lambda: mx.eval(mx.sum(x, axis=axis)), _nothing, ctx.repeats)}
        times["cupy"] = (timed(lambda: xc.sum(axis=axis), cupy_sync, ctx.repeats)
                         if xc is not None else None)
        times["torch"] = (timed(lambda: xt.sum(dim=axis), torch_sync, ctx.repeats)
                          if xt is not None else None)
        ctx.row(f"sum axis {axis} [{n}, {n}]", times, x_np.nbytes, "GB/s")
        _fraction(ctx, x_np.nbytes, times["nuvec"])


def section_softmax(ctx: Context) -> None:
    """softmax over the last axis of [n, n] float32."""
    n = ctx.n
    x_np = np.random.default_rng(2).standard_normal((n, n), dtype=np.float32)
    x = mx.array(x_np)
    cupy_sync, torch_sync = _peers(ctx)
    times: dict[str, float | None] = {
        "nuvec": timed(lambda: mx.eval(mx.softmax(x, axis=-1)), _nothing, ctx.repeats)}
    times["cupy"] = times["torch"] = None
    if ctx.cupy:
        cp = ctx.cupy
        xc = cp.asarray(x_np)

        def cupy_softmax() -> Any:
            e = cp.exp(xc - xc.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)

        times["cupy"] = timed(cupy_softmax, cupy_sync, ctx.repeats)
    if ctx.torch:
        xt = ctx.torch.from_numpy(x_np).cuda()
        times["torch"] = timed(lambda: ctx.torch.softmax(xt, dim=-1), torch_sync, ctx.repeats)
    ctx.row(f"softmax [{n}, {n}]", times, 2 * x_np.nbytes, "GB/s")
    _fraction(ctx, 2 * x_np.nbytes, times["nuvec"])


def section_matmul(ctx: Context) -> None:
    """[n]^3 matmul in float32 and bfloat16 (CuPy has no bfloat16)."""
    n = ctx.n
    rng = np.random.default_rng(3)
    a_np = rng.standard_normal((n, n), dtype=np.float32) / np.sqrt(n)
    b_np = rng.standard_normal((n, n), dtype=np.float32) / np.sqrt(n)
    cupy_sync, torch_sync = _peers(ctx)
    flops = 2.0 * n**3
    for name in ("float32", "bfloat16"):
        dtype = getattr(mx, name)
        a, b = mx.array(a_np, dtype), mx.array(b_np, dtype)
        times: dict[str, float | None] = {
            "nuvec": timed(lambda: mx.eval(a @ b), _nothing, ctx.repeats)}
        times["cupy"] = times["torch"] = None
        if ctx.cupy and name == "float32":
            ac, bc = ctx.cupy.asarray(a_np), ctx.cupy.asarray(b_np)
            times["cupy"] = timed(lambda: ac @ bc, cupy_sync, ctx.repeats)
        if ctx.torch:
            td = getattr(ctx.torch, name)
            at = ctx.torch.from_numpy(a_np).cuda().to(td)
            bt = ctx.torch.from_numpy(b_np).cuda().to(td)
            times["torch"] = timed(lambda: at @ bt, torch_sync, ctx.repeats)
        ctx.row(f"matmul [{n}]^3 {name}", times, flops, "TFLOP/s")


def section_packed_attention(ctx: Context) -> None:
    """Packed attention's tuned kernels against PyTorch SDPA (`gpu_packed_attention.py`)."""
    gpu_packed_attention.run(iters=ctx.repeats)


# The timings, in order (copy first: the others compare with its bandwidth).
SECTIONS: list[Callable[[Context], None]] = [
    section_dispatch,
    section_copy,
    section_elementwise,
    section_fused_chain,
    section_reductions,
    section_softmax,
    section_matmul,
    *gpu_kernels.SECTIONS,  # each fused op's CUDA kernel against the copy and PyTorch
    *gpu_attention.SECTIONS,  # the planner's decode kernels against PyTorch SDPA
    *gpu_gated_delta.SECTIONS,  # gated delta decode against the copy bandwidth
    section_packed_attention,
    *gpu_gather.SECTIONS,  # gather_mm's grouped GEMM and gather_qmm against PyTorch
]


def run_gpu_tests(timeout: int) -> int:
    """Runs every GPU-marked test; returns pytest's exit status."""
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider",
               "--maxfail=50", "--no-header"]
    print("$ " + " ".join(command[1:]), flush=True)
    try:
        return subprocess.run(command, cwd=ROOT, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        print(f"GPU tests: stopped after {timeout} s")
        return 124


def _optional(name: str, check: Callable[[Any], bool], missing: str) -> Any:
    try:
        module = __import__(name)
    except ImportError:
        print(f"{name}: not installed ({missing})")
        return None
    try:
        usable = check(module)
    except Exception as exc:  # e.g. CuPy's CUDARuntimeError without a driver
        usable, missing = False, f"{exc}; {missing}"
    if not usable:
        print(f"{name}: installed but sees no CUDA device ({missing})")
        return None
    return module


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--no-tests", action="store_true", help="skip the GPU-marked tests")
    parser.add_argument("--test-timeout", type=int, default=180, help="seconds for the tests")
    parser.add_argument("--sections", default="",
                        help="comma-separated section names (default: all); see --list")
    parser.add_argument("--list", action="store_true", help="print the section names and exit")
    return parser.parse_args(argv)


def chosen_sections(spec: str) -> list[Callable[[Context], None]]:
    """The sections named in `spec` (`dispatch,matmul`), or all of them.

    Raises:
        SystemExit: if a name is not a section.
    """
    by_name = {fn.__name__.removeprefix("section_"): fn for fn in SECTIONS}
    if not spec:
        return list(SECTIONS)
    unknown = [name for name in spec.split(",") if name not in by_name]
    if unknown:
        raise SystemExit(f"gpu_check: unknown sections {unknown}; known: {sorted(by_name)}")
    return [by_name[name] for name in spec.split(",")]


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    sections = chosen_sections(args.sections)
    if args.list:
        for fn in SECTIONS:
            print(f"{fn.__name__.removeprefix('section_'):12s} {fn.__doc__.splitlines()[0]}")
        return 0
    if not mx.is_available(mx.gpu):
        try:
            mx.default_stream(mx.gpu).backend
        except RuntimeError as exc:
            print(f"gpu_check: {exc}")
        return 2
    status = 0 if args.no_tests else run_gpu_tests(args.test_timeout)
    cupy = _optional("cupy", lambda m: m.cuda.runtime.getDeviceCount() > 0, "CuPy columns n/a")
    torch = _optional("torch", lambda m: m.cuda.is_available(), "PyTorch columns n/a")
    info = mx.device_info(mx.gpu)
    print(f"\n{info['name']} ({info['architecture']}, {info['memory_size'] / 2**30:.0f} GiB); "
          f"times are the best of several runs, ratios nuvec/peer (lower is better)")
    ctx = Context(cupy, torch, args.quick, 3 if args.quick else 10)
    mx.set_default_device(mx.gpu)
    for section in sections:
        try:
            section(ctx)
        except Exception as exc:  # a failing section must not hide the others
            print(f"{section.__name__}: failed: {type(exc).__name__}: {exc}")
            status = status or 1
    return status


if __name__ == "__main__":
    sys.exit(main())
