"""Real MPI jobs on this machine (2 and 4 processes on loopback): every collective against
NumPy, split groups, rings, gradients against finite differences, average_gradients, and the
errors of mismatched calls, a rank that leaves and a rank that dies."""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest

from launch import run_job

pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install -e '.[distributed]')")

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("n", [2, 4])
def test_mpi_checks_pass(n: int) -> None:
    job = run_job(n, HERE / "mpi_checks.py", env={"NUVEC_DISTRIBUTED_TIMEOUT": "60"})
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    for rank in range(n):
        assert f"rank {rank} of {n}: all checks passed" in job.stdout


def test_rank_that_skips_a_collective_ends_the_job_naming_it() -> None:
    start = time.monotonic()
    job = run_job(2, HERE / "mpi_failures.py", "skip", timeout=60)
    elapsed = time.monotonic() - start
    output = job.stdout + job.stderr
    assert job.returncode != 0, output
    assert "rank 0 finished" not in output
    assert "all_sum: rank 0 of 2 waited 2 s for rank(s) [1]" in output, output[-3000:]
    assert "(4,) float32" in output
    assert elapsed < 40, elapsed


def test_rank_that_dies_ends_the_job() -> None:
    start = time.monotonic()
    job = run_job(2, HERE / "mpi_failures.py", "dead", timeout=60)
    output = job.stdout + job.stderr
    assert job.returncode != 0, output
    assert "rank 0 finished" not in output
    assert time.monotonic() - start < 40


@pytest.mark.parametrize("n", [2, 4])
def test_data_parallel_example_matches_one_process(n: int, tmp_path, monkeypatch) -> None:
    examples = HERE.parents[1] / "examples"
    out = tmp_path / "run.npz"
    job = run_job(n, examples / "data_parallel.py", "--steps", "12", "--hidden", "16",
                  "--out", str(out))
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    # lines of different ranks may interleave
    prints = dict(re.findall(r"rank (\d+) parameters ([0-9a-f]{16})", job.stdout))
    assert len(prints) == n and len(set(prints.values())) == 1, job.stdout  # identical
    monkeypatch.syspath_prepend(str(examples))
    import data_parallel

    losses, model = data_parallel.train(steps=12, hidden=16, verbose=False)
    saved = np.load(out)
    np.testing.assert_allclose(saved["losses"], losses, rtol=1e-5, atol=1e-6)
    assert losses[-1] < losses[0]
    for name, value in data_parallel.flat_parameters(model).items():
        np.testing.assert_allclose(saved[name], value, rtol=1e-5, atol=1e-6, err_msg=name)


def test_rank_that_hangs_inside_a_transfer_is_aborted_by_the_watchdog() -> None:
    start = time.monotonic()
    job = run_job(2, HERE / "mpi_failures.py", "hang", timeout=60)
    output = job.stdout + job.stderr
    assert job.returncode != 0, output
    assert "rank 0 finished" not in output
    assert ("nuvec.distributed: rank 0 of 2: all_sum #1 of (4,) float32 did not finish within "
            "2 s; aborting the job") in output, output[-3000:]
    assert time.monotonic() - start < 40
