"""Starting MPI jobs from tests: finds `mpiexec` (the mpich wheel puts it beside the Python
executable) and runs a script on N local processes with this checkout's nuvec."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def mpiexec() -> str | None:
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def run_job(n: int, script: Path, *args: str, timeout: float = 120,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Runs `mpiexec -n n python script args` on loopback; returns the finished process."""
    launcher = mpiexec()
    assert launcher, "mpiexec not found (pip install mpich)"
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")]), **(env or {}))
    return subprocess.run([launcher, "-n", str(n), sys.executable, str(script), *args],
                          cwd=ROOT, env=environment, capture_output=True, text=True,
                          timeout=timeout, check=False)
