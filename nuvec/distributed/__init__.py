"""Communication between processes, as MLX's `mlx.core.distributed`: groups, collectives as
graph primitives, MPI (mpi4py) and NCCL (CuPy) backends. See docs/distributed.md.

Importing this package imports neither mpi4py nor CuPy; `init` does.
"""

from nuvec.distributed.errors import DistributedError
from nuvec.distributed.group import Group, init, is_available
from nuvec.distributed.ops import (
    all_gather,
    all_max,
    all_min,
    all_sum,
    recv,
    recv_like,
    send,
    sum_scatter,
)

__all__ = [
    "DistributedError", "Group", "init", "is_available", "all_sum", "all_max", "all_min",
    "all_gather", "sum_scatter", "send", "recv", "recv_like",
]
