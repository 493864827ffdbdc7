"""Two checkouts (or a checkout and NumPy) on the peer benchmark's workloads, taking turns.

Run: python benchmarks/bench_ab.py A B [--workloads NAME ...] [--rounds R] [--calls N]
[--processes P] [--cpu] [--compiled] [--env-a NAME=VALUE] [--env-b NAME=VALUE]

A and B are `LIB:PATH` (LIB one of `bench_peers.py`'s libraries, `nuvec` when left out; PATH
a checkout whose `benchmarks/bench_peers.py` builds the workloads, and whose `nuvec` is the one
measured), for example `python benchmarks/bench_ab.py ../before . --workloads mlp_step` or
`python benchmarks/bench_ab.py numpy:. . --cpu`. Each side is one worker process that builds
its workloads once; the workers then run `--calls` calls of each workload in turn, `--rounds`
times, the order of the two sides swapped every round (the side that runs second on a shared
two-core machine measured about 3 % slower), each worker idle 0.2 s before its turn so the
other's BLAS threads have stopped spinning. The rounds are shared out over `--processes` pairs
of workers started one pair after another (which side starts first alternates): one process
of a side measured up to 15 % faster than another of the same side for its whole life, so
the best over several processes is the figure. It prints each side's best call and B / A.
`--cpu` measures process CPU time on one thread (`OMP_NUM_THREADS`, `OPENBLAS_NUM_THREADS`
and `NUVEC_NUM_THREADS` set to 1), which the other core's load moves much less than two-thread
wall time: the figure for a change of a few per cent. `--compiled` builds nuvec's sides as
`bench_peers.py --compiled` does (the MLP step and the tanh gradient under `mx.compile`).
`--env-a NAME=VALUE` and `--env-b NAME=VALUE` (repeatable) set a variable for one side's
workers alone: one checkout against itself under two settings, for example `python
benchmarks/bench_ab.py . . --env-a NUVEC_MKL=0 --workloads matmul`.
Outputs are not checked here (`bench_peers.py` checks them).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

# The worker: builds the workloads of its checkout, then answers "NAME CALLS" lines with the
# best of CALLS calls in seconds.
WORKER = r"""
import os, sys, time
lib, _, root = sys.argv[1].rpartition(":")
sys.path[:0] = [root, os.path.join(root, "benchmarks")]
import bench_peers
clock = time.process_time if os.environ.get("BENCH_AB_CPU") else time.perf_counter
make = getattr(bench_peers, (lib or "nuvec") + "_workloads")
build = make(compiled=True) if os.environ.get("BENCH_AB_COMPILED") and not lib else make()
runs = {name: build[name](bench_peers.inputs(False, name))[0] for name in sys.argv[2:]}
for run in runs.values():
    run(); run()
print("ready", flush=True)
for line in sys.stdin:
    name, calls = line.split()
    run, best = runs[name], float("inf")
    time.sleep(0.2)
    for _ in range(int(calls)):
        start = clock(); run(); best = min(best, clock() - start)
    print(best, flush=True)
"""


def run_pair(sides: list[str], args: argparse.Namespace, envs: list[dict[str, str]],
             rounds: range, best: list[dict[str, float]]) -> None:
    """Starts one worker per side (in that order, each with its environment in `envs`), runs
    `rounds` rounds of every workload, the sides' order swapped each round, and lowers `best`
    (one dict a side) to their bests."""
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, side, *args.workloads],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                env=env) for side, env in zip(sides, envs)]
    for worker in workers:
        if worker.stdout.readline().strip() != "ready":
            sys.exit("bench_ab: a worker failed to build its workloads")
    for k in rounds:
        for name in args.workloads:
            for i in (0, 1) if k % 2 == 0 else (1, 0):
                workers[i].stdin.write(f"{name} {args.calls}\n")
                workers[i].stdin.flush()
                best[i][name] = min(best[i][name], float(workers[i].stdout.readline()))
    for worker in workers:
        worker.stdin.close()
        worker.wait()


def _setting(parser: argparse.ArgumentParser, text: str) -> tuple[str, str]:
    """`NAME=VALUE` as (NAME, VALUE); a parser error for anything else."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        parser.error(f"--env-a/--env-b take NAME=VALUE, got {text!r}")
    return name, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", help="LIB:PATH or PATH (nuvec)")
    parser.add_argument("b", help="LIB:PATH or PATH (nuvec)")
    parser.add_argument("--workloads", nargs="+", default=["mlp_step", "tanh_grad"])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=3, help="calls a turn")
    parser.add_argument("--processes", type=int, default=3, help="worker pairs, in turn")
    parser.add_argument("--cpu", action="store_true", help="CPU time on one thread")
    parser.add_argument("--compiled", action="store_true",
                        help="nuvec's MLP step and tanh gradient compiled (bench_peers.py's)")
    for side in "ab":
        parser.add_argument(f"--env-{side}", action="append", default=[], metavar="NAME=VALUE",
                            help=f"an environment variable of side {side.upper()}'s workers "
                                 "alone (repeatable)")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.compiled:
        env["BENCH_AB_COMPILED"] = "1"
    if args.cpu:
        env.update(BENCH_AB_CPU="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   NUVEC_NUM_THREADS="1")
    envs = [dict(env, **dict(_setting(parser, text) for text in settings))
            for settings in (args.env_a, args.env_b)]
    sides = []
    for spec in (args.a, args.b):
        lib, _, path = spec.rpartition(":")
        sides.append(f"{lib}:{os.path.abspath(path)}")
    best = [{name: float("inf") for name in args.workloads} for _ in sides]
    processes = max(1, min(args.processes, args.rounds))
    for p in range(processes):
        rounds = range(p * args.rounds // processes, (p + 1) * args.rounds // processes)
        turn = slice(None) if p % 2 == 0 else slice(None, None, -1)
        run_pair(sides[turn], args, envs[turn], rounds, best[turn])
    unit = "CPU ms, one thread" if args.cpu else "ms"
    named = [f"{spec} {' '.join(settings)}".rstrip()
             for spec, settings in ((args.a, args.env_a), (args.b, args.env_b))]
    print(f"A = {named[0]}, B = {named[1]}; best of {args.rounds * args.calls} calls ({unit})")
    for name in args.workloads:
        a, b = best[0][name] * 1e3, best[1][name] * 1e3
        print(f"{name:14s} A {a:9.3f}  B {b:9.3f}  B/A {b / a:.3f}")


if __name__ == "__main__":
    main()
