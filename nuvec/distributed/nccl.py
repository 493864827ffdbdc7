"""The NCCL backend: collectives on GPU arrays through `cupy.cuda.nccl`, one communicator per
group, enqueued on the CUDA stream current when the evaluator runs the node (the node's).

Several processes bootstrap over MPI (`mpiexec`): MPI broadcasts the NCCL id, and its
communicator carries the header checks of `mpi.py` before each collective, so a mismatched
call raises instead of hanging the GPU. A single process makes a communicator of one GPU.
Imported by `init(backend="nccl")` only: it imports CuPy.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from nuvec.distributed.group import LAUNCHER_VARIABLES
from nuvec.distributed.kernels import GPU_KERNELS
from nuvec.graph.device import DeviceType, backend_for

try:
    import cupy
    from cupy.cuda import nccl
except ImportError as exc:  # reported by `init(backend="nccl", strict=True)`
    raise ImportError(
        f"CuPy with NCCL is not installed ({exc}); pip install cupy-cuda13x"
    ) from None

# dtypes NCCL reduces natively; the others travel as a wider or reinterpreted type
_NCCL_TYPES = {
    "int8": nccl.NCCL_INT8, "uint8": nccl.NCCL_UINT8, "int32": nccl.NCCL_INT32,
    "uint32": nccl.NCCL_UINT32, "int64": nccl.NCCL_INT64, "uint64": nccl.NCCL_UINT64,
    "float16": nccl.NCCL_FLOAT16, "float32": nccl.NCCL_FLOAT32, "float64": nccl.NCCL_FLOAT64,
}
_OPS = {"all_sum": nccl.NCCL_SUM, "all_max": nccl.NCCL_MAX, "all_min": nccl.NCCL_MIN}
_WIDER = {"int16": "int32", "uint16": "uint32"}  # sums wrap modulo 2**16 either way


def _stream() -> int:
    return cupy.cuda.get_current_stream().ptr


def bfloat16_to_float32(x: Any) -> Any:
    """bfloat16 bits (a uint16 buffer) as float32, exactly."""
    return (x.view(cupy.uint16).astype(cupy.uint32) << 16).view(cupy.float32)


def float32_to_bfloat16(x: Any) -> Any:
    """float32 rounded to the nearest bfloat16 (ties to even) as uint16 bits; NaN stays NaN."""
    bits = x.view(cupy.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = cupy.isnan(x)
    return cupy.where(nan, (bits >> 16) | 0x40, rounded).astype(cupy.uint16)


class Communicator:
    """One NCCL communicator, with the MPI communicator of the same processes (or None)."""

    def __init__(self, comm: Any, rank: int, size: int, checks: Any):
        self.comm = comm
        self.rank = rank
        self.size = size
        self.checks = checks  # an mpi.Communicator for headers and timeouts, None for one GPU
        self.sequence = 0

    def next_sequence(self) -> int:
        self.sequence += 1
        return self.sequence - 1

    def _check(self, operation: str, sequence: int, x: Any, dtype_name: str) -> None:
        if self.checks is None:
            return
        # several processes: mpi4py is there (it bootstrapped this communicator)
        from nuvec.distributed.mpi import describe, header

        mine = header(operation, sequence, tuple(x.shape), dtype_name)
        self.checks.exchange_headers(mine, describe(mine))

    def all_reduce(self, operation: str, sequence: int, x: Any, dtype_name: str) -> Any:
        """`all_sum`, `all_max` or `all_min` of `x` (of nuvec dtype `dtype_name`)."""
        self._check(operation, sequence, x, dtype_name)
        x = cupy.ascontiguousarray(x)  # the views below reinterpret its bytes
        if dtype_name == "complex64":
            if operation == "all_sum":
                return self._reduce(x.view(cupy.float32), "float32", nccl.NCCL_SUM).view(x.dtype)
            gathered = cupy.asnumpy(self.all_gather(-1, x, dtype_name, check=False))
            reduce = np.max if operation == "all_max" else np.min
            return cupy.asarray(reduce(gathered.reshape(self.size, *x.shape), axis=0))
        if dtype_name == "bfloat16":
            wide = self._reduce(bfloat16_to_float32(x), "float32", _OPS[operation])
            return float32_to_bfloat16(wide).view(x.dtype)
        if dtype_name == "bool":
            op = nccl.NCCL_MIN if operation == "all_min" else nccl.NCCL_MAX
            return self._reduce(x.view(cupy.uint8), "uint8", op).view(x.dtype)
        if dtype_name in _WIDER:
            wide = self._reduce(x.astype(_WIDER[dtype_name]), _WIDER[dtype_name], _OPS[operation])
            return wide.astype(x.dtype)
        return self._reduce(x, dtype_name, _OPS[operation])

    def _reduce(self, x: Any, kind: str, op: int) -> Any:
        send = cupy.ascontiguousarray(x)
        out = cupy.empty_like(send)
        self.comm.allReduce(send.data.ptr, out.data.ptr, send.size, _NCCL_TYPES[kind], op,
                            _stream())
        return out

    def all_gather(self, sequence: int, x: Any, dtype_name: str, check: bool = True) -> Any:
        """Every rank's `x`, flattened and concatenated in rank order."""
        if check:
            self._check("all_gather", sequence, x, dtype_name)
        send = cupy.ascontiguousarray(x).reshape(-1).view(cupy.uint8)
        out = cupy.empty((self.size * send.size,), cupy.uint8)
        self.comm.allGather(send.data.ptr, out.data.ptr, send.size, nccl.NCCL_UINT8, _stream())
        return out.view(x.dtype)

    def sum_scatter(self, sequence: int, x: Any, dtype_name: str) -> Any:
        """This rank's block of the sum of `x` over the group."""
        self._check("sum_scatter", sequence, x, dtype_name)
        if dtype_name in ("bfloat16", "complex64", "bool") or dtype_name in _WIDER:
            total = self._unchecked_sum(x, dtype_name)  # the header was checked above
            block = x.shape[0] // self.size
            return total[self.rank * block:(self.rank + 1) * block].copy()
        send = cupy.ascontiguousarray(x)
        out = cupy.empty((x.shape[0] // self.size, *x.shape[1:]), x.dtype)
        self.comm.reduceScatter(send.data.ptr, out.data.ptr, out.size, _NCCL_TYPES[dtype_name],
                                nccl.NCCL_SUM, _stream())
        return out

    def _unchecked_sum(self, x: Any, dtype_name: str) -> Any:
        checks, self.checks = self.checks, None
        try:
            return self.all_reduce("all_sum", -1, x, dtype_name)
        finally:
            self.checks = checks

    def send(self, x: Any, dst: int) -> None:
        data = cupy.ascontiguousarray(x).reshape(-1).view(cupy.uint8)
        self.comm.send(data.data.ptr, data.size, nccl.NCCL_UINT8, dst, _stream())

    def recv(self, shape: tuple[int, ...], dtype: Any, src: int) -> Any:
        out = cupy.empty(shape, dtype)
        data = out.reshape(-1).view(cupy.uint8)
        self.comm.recv(data.data.ptr, data.size, nccl.NCCL_UINT8, src, _stream())
        return out

    def split(self, color: int, key: int) -> Communicator | None:
        if self.checks is None:
            return None if color < 0 else Communicator(self.comm, 0, 1, None)
        sub = self.checks.split(color, key)
        if sub is None:
            return None
        return _make(sub)


def _make(checks: Any) -> Communicator:
    """An NCCL communicator over the processes of the MPI communicator `checks`."""
    uid = nccl.get_unique_id() if checks.rank == 0 else None
    uid = checks.comm.bcast(uid, root=0)
    return Communicator(nccl.NcclCommunicator(checks.size, uid, checks.rank), checks.rank,
                        checks.size, checks if checks.size > 1 else None)


def world(timeout: float) -> Communicator:
    """The communicator of all launched processes (one GPU each), or of this process alone."""
    table = backend_for(DeviceType.gpu).kernels  # raises RuntimeError without a GPU backend
    try:
        if any(name in os.environ for name in LAUNCHER_VARIABLES):
            # here only: one GPU without a launcher needs no mpi4py
            from nuvec.distributed import mpi

            checks = mpi.world(timeout)
            local = int(os.environ.get("MPI_LOCALRANKID", checks.rank))
            cupy.cuda.Device(local % cupy.cuda.runtime.getDeviceCount()).use()
            communicator = _make(checks)
        else:
            communicator = Communicator(nccl.NcclCommunicator(1, nccl.get_unique_id(), 0), 0, 1,
                                        None)
    except (nccl.NcclError, cupy.cuda.runtime.CUDARuntimeError) as exc:
        raise RuntimeError(f"NCCL did not initialise: {exc}") from None
    for cls, fn in GPU_KERNELS.items():
        if cls not in table:
            if hasattr(table, "add"):  # a kernel-table object
                table.add(cls, fn)
            else:  # a plain dict
                table[cls] = fn
    return communicator

