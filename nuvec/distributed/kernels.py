"""The kernels of the collective primitives: on the CPU, NumPy buffers through the group's MPI
communicator (`register_cpu`, called by `init` for MPI, adds them to the NumPy backend's
table); on the GPU, CuPy buffers through its NCCL communicator (`GPU_KERNELS`, added to the
GPU backend's table by `init` for NCCL). Imported by the backends only, so `import nuvec`
never loads the NumPy backend early."""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.backends.numpy.registry import kernel, kernels
from nuvec.distributed.ops import AllGather, AllReduce, Recv, ReduceScatter, Send


def all_reduce(primitive: AllReduce, x: np.ndarray) -> np.ndarray:
    return primitive.group.communicator.all_reduce(primitive.operation, primitive.sequence, x)


def all_gather(primitive: AllGather, x: np.ndarray) -> np.ndarray:
    out = primitive.group.communicator.all_gather(primitive.sequence, x)
    return out.reshape(_gathered_shape(primitive, x.shape))


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


def _gathered_shape(primitive: AllGather, shape: tuple[int, ...]) -> tuple[int, ...]:
    n = primitive.group.size()
    return (n * shape[0], *shape[1:]) if shape else (n,)


def gpu_all_reduce(primitive: AllReduce, x: Any) -> Any:
    return primitive.group.communicator.all_reduce(primitive.operation, primitive.sequence, x,
                                                   primitive.dtype.name)


def gpu_all_gather(primitive: AllGather, x: Any) -> Any:
    out = primitive.group.communicator.all_gather(primitive.sequence, x, primitive.dtype.name)
    return out.reshape(_gathered_shape(primitive, x.shape))


def gpu_sum_scatter(primitive: ReduceScatter, x: Any) -> Any:
    return primitive.group.communicator.sum_scatter(primitive.sequence, x, primitive.dtype.name)


def gpu_recv(primitive: Recv) -> Any:
    dtype = np.uint16 if primitive.dtype.name == "bfloat16" else primitive.dtype.np
    return primitive.group.communicator.recv(primitive.shape, dtype, primitive.src)


GPU_KERNELS: dict[type, Any] = {
    AllReduce: gpu_all_reduce, AllGather: gpu_all_gather, ReduceScatter: gpu_sum_scatter,
    Send: send, Recv: gpu_recv,
}


def register_cpu() -> None:
    """Adds the kernels to the NumPy backend's table (once)."""
    for cls, fn in KERNELS.items():
        if cls not in kernels:
            kernel(cls)(fn)
