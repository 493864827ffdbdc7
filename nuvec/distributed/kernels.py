"""The CPU kernels of the collective primitives: NumPy buffers through the group's MPI
communicator. `register_cpu` (called by `init` for MPI) adds them to the NumPy backend's table.
Imported by the MPI backend only, so `import nuvec` never loads the NumPy backend early."""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.backends.numpy.registry import kernel, kernels
from nuvec.distributed.ops import AllGather, AllReduce, Recv, ReduceScatter, Send


def all_reduce(primitive: AllReduce, x: np.ndarray) -> np.ndarray:
    return primitive.group.communicator.all_reduce(primitive.operation, primitive.sequence, x)


def all_gather(primitive: AllGather, x: np.ndarray) -> np.ndarray:
    out = primitive.group.communicator.all_gather(primitive.sequence, x)
    shape = x.shape
    n = primitive.group.size()
    return out.reshape((n * shape[0], *shape[1:]) if shape else (n,))


def sum_scatter(primitive: ReduceScatter, x: np.ndarray) -> np.ndarray:
    return primitive.group.communicator.sum_scatter(primitive.sequence, x)


def send(primitive: Send, x: np.ndarray) -> np.ndarray:
    primitive.group.communicator.send(x, primitive.dst)
    return x


def recv(primitive: Recv) -> np.ndarray:
    return primitive.group.communicator.recv(primitive.shape, primitive.dtype.np, primitive.src)


KERNELS: dict[type, Any] = {
    AllReduce: all_reduce, AllGather: all_gather, ReduceScatter: sum_scatter, Send: send,
    Recv: recv,
}


def register_cpu() -> None:
    """Adds the kernels to the NumPy backend's table (once)."""
    for cls, fn in KERNELS.items():
        if cls not in kernels:
            kernel(cls)(fn)
