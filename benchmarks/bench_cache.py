"""The CPU's buffer cache on and off, in one process: the peer benchmark's workloads.

Run: python benchmarks/bench_cache.py [--workloads NAME ...] [--rounds R]

Each round runs every workload with the cache at its default limit and at 0 (`set_cache_limit`,
which on the CPU sets glibc's allocator; `clear_cache` between), the order swapped every round,
after two warm-up calls; it prints the best call of each and on / off. In one process the two
settings see the same machine: across processes this machine's times moved by up to 15 %.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_peers  # noqa: E402

import nuvec as mx  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", default=[
        "exp(x)*w+b", "rms_norm", "layer_norm", "softmax", "attention", "logsumexp",
        "cross_entropy", "mlp_step", "tanh_grad"])
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    build = bench_peers.nuvec_workloads()
    runs = {name: build[name](bench_peers.inputs(False, name))[0] for name in args.workloads}
    default = mx.set_cache_limit(0)
    mx.set_cache_limit(default)
    limits = {"on": default, "off": 0}
    best = {(name, side): float("inf") for name in runs for side in limits}
    for k in range(args.rounds):
        for name, run in runs.items():
            for side in ("on", "off") if k % 2 == 0 else ("off", "on"):
                mx.set_cache_limit(limits[side])
                mx.clear_cache()
                run(); run()
                for _ in range(3):
                    start = time.perf_counter()
                    run()
                    best[name, side] = min(best[name, side], time.perf_counter() - start)
    mx.set_cache_limit(default)
    print(f"best of {3 * args.rounds} calls (ms), cache limit {default} bytes against 0")
    for name in runs:
        on, off = best[name, "on"] * 1e3, best[name, "off"] * 1e3
        print(f"{name:14s} on {on:9.3f}  off {off:9.3f}  on/off {on / off:.3f}")


if __name__ == "__main__":
    main()
