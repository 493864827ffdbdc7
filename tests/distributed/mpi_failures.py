"""A job that fails on purpose (`mpiexec -n 2 python tests/distributed/mpi_failures.py MODE`).

- `skip`: rank 1 leaves without joining the all_sum rank 0 calls; rank 0 must raise within
  its timeout, naming the operation, the missing rank and the shape, and the job must end.
- `dead`: rank 1 dies (exits without finalising MPI) before the all_sum; the job must end.
"""

from __future__ import annotations

import os
import sys

import nuvec as mx

mode = sys.argv[1]
world = mx.distributed.init(strict=True, backend="mpi", timeout=2.0)
x = mx.ones((4,))
mx.eval(mx.distributed.all_sum(x))  # every rank is up
if world.rank() == 1:
    if mode == "dead":
        os._exit(3)
    sys.exit(0)  # leaves the job normally, never joining the next collective
mx.eval(mx.distributed.all_sum(x))
print("rank 0 finished an all_sum that rank 1 never joined")  # must not happen
