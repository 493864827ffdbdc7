"""A job that fails on purpose (`mpiexec -n 2 python tests/distributed/mpi_failures.py MODE`).

- `skip`: rank 1 leaves without joining the all_sum rank 0 calls; rank 0 must raise within
  its timeout, naming the operation, the missing rank and the shape, and the job must end.
- `dead`: rank 1 dies (exits without finalising MPI) before the all_sum; the job must end.
- `hang`: rank 1 freezes (SIGSTOP) after the header exchange, inside the data transfer; rank
  0's watchdog must abort the job within the timeout, naming the operation and the shape.
"""

from __future__ import annotations

import os
import signal
import sys

import nuvec as mx

from mpi4py import MPI  # noqa: E402

mode = sys.argv[1]
MPI.COMM_WORLD.Barrier()  # every rank is up (imports may take longer than the timeout)
world = mx.distributed.init(strict=True, backend="mpi", timeout=2.0)
x = mx.ones((4,))
mx.eval(mx.distributed.all_sum(x))
if world.rank() == 1:
    if mode == "dead":
        os._exit(3)
    if mode == "hang":
        real = world.communicator.comm

        class Frozen:  # stops this process where the data would move
            def __getattr__(self, name):
                if name == "Allreduce":
                    os.kill(os.getpid(), signal.SIGSTOP)
                return getattr(real, name)

        world.communicator.comm = Frozen()
        mx.eval(mx.distributed.all_sum(x))
    sys.exit(0)  # leaves the job normally, never joining the next collective
mx.eval(mx.distributed.all_sum(x))
print("rank 0 finished an all_sum that rank 1 never joined")  # must not happen
