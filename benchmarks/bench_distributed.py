"""`nuvec.distributed.all_sum` against mpi4py's `Allreduce` and torch.distributed (gloo), and
data-parallel training on 2 processes against 1.

    python benchmarks/bench_distributed.py            # 1 KiB .. 256 MiB on 2 and 4 processes
    python benchmarks/bench_distributed.py --quick    # 1 KiB .. 16 MiB, fewer repetitions

The script launches itself with `mpiexec -n N` (N = 2, 4). Every rank times, for each size,
`mx.eval(all_sum(x))` (recording, header check, the MPI call, the output buffer) and
`comm.Allreduce(a, b)` on the same NumPy buffer, interleaved so load changes hit both; with
torch installed, also `torch.distributed.all_reduce` with gloo. Rank 0 prints medians and the
ratio nuvec / mpi4py (lower is better; 1.0 means no overhead), and the minima, which a loaded
machine disturbs less.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SIZES = [1 << 10, 16 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20]


def repetitions(nbytes: int, quick: bool) -> int:
    reps = max(5, min(200, (64 << 20) // max(nbytes, 1 << 16)))
    return max(3, reps // 4) if quick else reps


def torch_group(rank: int, size: int):
    """torch.distributed with gloo over loopback, or None without torch."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        return None
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{os.environ['BENCH_PORT']}",
                            rank=rank, world_size=size)
    return torch, dist


def worker(quick: bool) -> None:
    import nuvec as mx
    from mpi4py import MPI

    world = mx.distributed.init(strict=True, backend="mpi")
    comm = MPI.COMM_WORLD
    rank, size = world.rank(), world.size()
    peer = torch_group(rank, size)
    sizes = [s for s in SIZES if not quick or s <= 16 << 20]
    for nbytes in sizes:
        a = np.full(nbytes // 4, rank + 1, np.float32)
        b = np.empty_like(a)
        x = mx.array(a)
        t = peer[0].from_numpy(a.copy()) if peer else None
        times: dict[str, list[float]] = {"mpi4py": [], "nuvec": [], "gloo": []}
        for rep in range(repetitions(nbytes, quick) + 2):
            comm.Barrier()
            start = time.perf_counter()
            comm.Allreduce(a, b)
            middle = time.perf_counter()
            out = mx.distributed.all_sum(x)
            mx.eval(out)
            end = time.perf_counter()
            if rep >= 2:  # the first two warm up
                times["mpi4py"].append(middle - start)
                times["nuvec"].append(end - middle)
            if peer:
                comm.Barrier()
                start = time.perf_counter()
                peer[1].all_reduce(t)
                if rep >= 2:
                    times["gloo"].append(time.perf_counter() - start)
        assert float(np.asarray(out)[0]) == size * (size + 1) / 2
        if rank == 0:
            report(size, nbytes, times)
        del a, b, x, t, out


def report(size: int, nbytes: int, times: dict[str, list[float]]) -> None:
    """One line: medians, and minima (less sensitive to a loaded machine), in microseconds."""
    med = {k: float(np.median(v)) * 1e6 for k, v in times.items() if v}
    low = {k: float(np.min(v)) * 1e6 for k, v in times.items() if v}
    line = (f"n={size} {nbytes / 1024:7.0f} KiB  median: mpi4py {med['mpi4py']:9.0f} us  "
            f"nuvec {med['nuvec']:9.0f} us  ratio {med['nuvec'] / med['mpi4py']:4.2f}")
    if "gloo" in med:
        line += f"  gloo {med['gloo']:9.0f} us  nuvec/gloo {med['nuvec'] / med['gloo']:4.2f}"
    line += (f"  | min: mpi4py {low['mpi4py']:9.0f}  nuvec {low['nuvec']:9.0f}  ratio "
             f"{low['nuvec'] / low['mpi4py']:4.2f}")
    print(line, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(n: int, args: list[str], script: Path) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH",
                                                                                   "")]),
               BENCH_PORT=str(free_port()))
    mpiexec = Path(sys.executable).parent / "mpiexec"
    command = [str(mpiexec) if mpiexec.exists() else "mpiexec", "-n", str(n), sys.executable,
               str(script), *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False,
                          timeout=1800)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def data_parallel(quick: bool) -> None:
    """Samples per second of examples/data_parallel.py on 1 and 2 processes."""
    example = ROOT / "examples" / "data_parallel.py"
    args = ["--steps", "10" if quick else "40", "--global-batch", "768", "--hidden", "512"]
    rates = {}
    for n in (1, 2):
        if n == 1:
            env = dict(os.environ, PYTHONPATH=str(ROOT))
            out = subprocess.run([sys.executable, str(example), *args], env=env, check=True,
                                 capture_output=True, text=True).stdout
        else:
            out = launch(n, args, example)
        rates[n] = float(re.search(r"(\d+) samples/s", out).group(1))
        print(f"data parallel, {n} process(es): {rates[n]:.0f} samples/s")
    print(f"data parallel speed-up, 2 processes / 1: {rates[2] / rates[1]:.2f}x "
          f"(on {os.cpu_count()} cores)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--processes", type=int, nargs="*", default=[2, 4])
    args = parser.parse_args()
    if args.worker:
        worker(args.quick)
        return
    for n in args.processes:
        print(launch(n, ["--worker"] + (["--quick"] if args.quick else []), Path(__file__)),
              end="", flush=True)
    data_parallel(args.quick)


if __name__ == "__main__":
    main()
