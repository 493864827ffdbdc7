"""The MPI backend: collectives on NumPy buffers through mpi4py, checked and bounded in time.

Before each collective the ranks exchange a small header (operation, sequence number, dtype,
shape) with nonblocking sends polled against a deadline, so a mismatched call or a missing rank
raises `DistributedError` naming them instead of hanging or summing the wrong buffers. The data
then moves with MPI's blocking collective (its fastest algorithms) under a watchdog that aborts
the job if it does not finish in time. Imported by `init` only: it imports mpi4py.
"""

from __future__ import annotations

import atexit
import itertools
import os
import sys
import threading
import time
import zlib
from typing import Any

import ml_dtypes
import numpy as np

from nuvec.distributed import kernels
from nuvec.distributed.buffers import BufferPool
from nuvec.distributed.errors import DistributedError

try:
    from mpi4py import MPI
except ImportError as exc:  # reported by `init(backend="mpi", strict=True)`
    raise ImportError(f"mpi4py is not installed ({exc}); pip install mpi4py mpich") from None

OPERATIONS = ("all_sum", "all_max", "all_min", "all_gather", "sum_scatter", "send")
DTYPE_NAMES = ("bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
               "float16", "float32", "float64", "bfloat16", "complex64")
HEADER_DIMS = 12  # dimensions stored in a header; longer shapes also store a checksum
HEADER = 4 + HEADER_DIMS  # operation, sequence, dtype, ndim, dims
TAG_HEADER, TAG_P2P_HEADER, TAG_P2P_DATA = 71, 72, 73
_MPI_TYPES = {
    "bool": MPI.C_BOOL, "uint8": MPI.UINT8_T, "uint16": MPI.UINT16_T, "uint32": MPI.UINT32_T,
    "uint64": MPI.UINT64_T, "int8": MPI.INT8_T, "int16": MPI.INT16_T, "int32": MPI.INT32_T,
    "int64": MPI.INT64_T, "float32": MPI.FLOAT, "float64": MPI.DOUBLE,
    "complex64": MPI.C_FLOAT_COMPLEX,
}
_REDUCTIONS = {"all_sum": MPI.SUM, "all_max": MPI.MAX, "all_min": MPI.MIN}
_BOOL_REDUCTIONS = {"all_sum": MPI.LOR, "all_max": MPI.LOR, "all_min": MPI.LAND}
_NUMPY_REDUCTIONS = {"all_sum": np.sum, "all_max": np.max, "all_min": np.min}


def header(operation: str, sequence: int, array_shape: tuple[int, ...], dtype: str) -> Any:
    """The int64 header describing one call (`dtype` is the nuvec dtype's name)."""
    out = np.zeros(HEADER, np.int64)
    out[0] = OPERATIONS.index(operation)
    out[1] = sequence
    out[2] = DTYPE_NAMES.index(dtype)
    out[3] = len(array_shape)
    dims = list(array_shape[:HEADER_DIMS])
    if len(array_shape) > HEADER_DIMS:
        dims[-1] = zlib.crc32(repr(array_shape).encode())
    out[4:4 + len(dims)] = dims
    return out


def array_text(row: Any) -> str:
    """The shape and dtype of a header: `(4, 2) float32`."""
    ndim = int(row[3])
    dims = [int(d) for d in row[4:4 + min(ndim, HEADER_DIMS)]]
    shape = "(" + ", ".join(map(str, dims)) + ("," if ndim == 1 else "") + (
        ", ...)" if ndim > HEADER_DIMS else ")")
    return f"{shape} {DTYPE_NAMES[int(row[2])]}"


def describe(row: Any) -> str:
    """A collective's header as text: `all_sum #3 of (4, 2) float32`."""
    return f"{OPERATIONS[int(row[0])]} #{int(row[1])} of {array_text(row)}"


YIELD_SECONDS = 0.02  # a wait first yields the CPU between polls (ranks may share a core)


def wait(requests: list[Any], deadline: float) -> bool:
    """Polls `requests` until all complete (True) or `deadline` passes (False).

    Yields the CPU between polls for the first 20 ms (spinning without yielding measured
    slower with several ranks per core), then sleeps 1 ms between polls, so a rank waiting
    long for a slower one costs little.
    """
    if MPI.Request.Testall(requests):
        return True
    start = time.monotonic()
    while not MPI.Request.Testall(requests):
        now = time.monotonic()
        if now - start < YIELD_SECONDS:
            os.sched_yield()
            continue
        if now > deadline:
            return False
        time.sleep(1e-3)
    return True


class Watchdog:
    """Aborts the job when a blocking MPI call has not returned by its deadline."""

    def __init__(self) -> None:
        self.armed: dict[int, tuple[float, str]] = {}
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    def arm(self, deadline: float, message: str) -> int:
        if self.thread is None:
            with self.lock:
                if self.thread is None:
                    self.thread = threading.Thread(target=self.run, daemon=True,
                                                   name="nuvec-distributed-watchdog")
                    self.thread.start()
        token = threading.get_ident()
        self.armed[token] = (deadline, message)
        return token

    def disarm(self, token: int) -> None:
        self.armed.pop(token, None)

    def run(self) -> None:
        while True:
            time.sleep(0.1)
            now = time.monotonic()
            for deadline, message in list(self.armed.values()):
                if now > deadline:
                    sys.stderr.write(f"nuvec.distributed: {message}; aborting the job\n")
                    abort_job()


watchdog = Watchdog()


def abort_job() -> None:
    """Ends every rank, after flushing what this one printed."""
    sys.stderr.flush()
    sys.stdout.flush()
    time.sleep(0.5)  # the abort stops the launcher forwarding output at once: let it catch up
    MPI.COMM_WORLD.Abort(1)


class Communicator:
    """One MPI communicator: rank, size, timeout and the checked collectives."""

    def __init__(self, comm: Any, timeout: float):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = timeout
        self.lock = threading.Lock()  # one operation at a time on this communicator
        self.failed: str | None = None
        self.peers = [p for p in range(self.size) if p != self.rank]
        self.pending_sends: list[tuple[float, str, list[Any], tuple[Any, ...]]] = []
        self.pool = BufferPool()
        self.recorded = itertools.count()  # collectives recorded on this group, in order

    def next_sequence(self) -> int:
        """The number of the next collective recorded (each rank records them in order)."""
        return next(self.recorded)

    # -- checks ----------------------------------------------------------------------------
    def _usable(self, operation: str) -> None:
        if self.failed is not None:
            raise DistributedError(f"{operation}: the group failed earlier ({self.failed})")
        self._reap(operation)

    def _fail(self, message: str) -> DistributedError:
        self.failed = message
        return DistributedError(message)

    def exchange_headers(self, mine: Any, description: str) -> None:
        """Sends this rank's header to every peer and checks theirs against it."""
        operation = describe(mine).split()[0]
        rows = np.empty((self.size, HEADER), np.int64)
        rows[self.rank] = mine
        receives = [self.comm.Irecv(rows[p], source=p, tag=TAG_HEADER) for p in self.peers]
        sends = [self.comm.Isend(mine, dest=p, tag=TAG_HEADER) for p in self.peers]
        if not wait(receives + sends, time.monotonic() + self.timeout):
            missing = [p for p, r in zip(self.peers, receives) if not r.Test()]
            for request in receives:
                request.Cancel()
            raise self._fail(
                f"{operation}: rank {self.rank} of {self.size} waited {self.timeout:g} s for "
                f"rank(s) {missing} to join {description}; a rank may have died or skipped "
                f"the operation (timeout: init(timeout=...) or NUVEC_DISTRIBUTED_TIMEOUT)")
        if not (rows == mine).all():
            calls = ", ".join(f"rank {p}: {describe(rows[p])}" for p in range(self.size))
            raise DistributedError(
                f"{operation}: the ranks disagree on the call (seen from rank {self.rank}): "
                f"{calls}")

    def _blocking(self, description: str, call: Any) -> None:
        token = watchdog.arm(time.monotonic() + self.timeout,
                             f"rank {self.rank} of {self.size}: {description} did not finish "
                             f"within {self.timeout:g} s")
        try:
            call()
        finally:
            watchdog.disarm(token)

    def _begin(self, operation: str, sequence: int, x: np.ndarray) -> str:
        self._usable(operation)
        mine = header(operation, sequence, x.shape, x.dtype.name)
        description = describe(mine)
        self.exchange_headers(mine, description)
        return description

    # -- collectives -----------------------------------------------------------------------
    def all_reduce(self, operation: str, sequence: int, x: np.ndarray) -> np.ndarray:
        """`all_sum`, `all_max` or `all_min` of `x` over the group."""
        with self.lock:
            description = self._begin(operation, sequence, x)
            name = x.dtype.name
            if name == "complex64" and operation != "all_sum":  # MPI orders no complex numbers
                gathered = self._gather(description, x)
                return _NUMPY_REDUCTIONS[operation](gathered.reshape(self.size, *x.shape), axis=0)
            wide = name in ("float16", "bfloat16")  # reduced exactly in float32, rounded once
            kind = "float32" if wide else name
            out = self.pool.take(x.shape, np.float32 if wide else x.dtype)
            if wide or not (x.flags.c_contiguous and self.pool.known(x)):
                np.copyto(out, x, casting="unsafe")  # then reduced in place
                send: Any = MPI.IN_PLACE
            else:
                send = [x, _MPI_TYPES[kind]]
            op = (_BOOL_REDUCTIONS if kind == "bool" else _REDUCTIONS)[operation]
            self._blocking(description, lambda: self.comm.Allreduce(
                send, [out, _MPI_TYPES[kind]], op=op))
            return out.astype(x.dtype) if wide else out

    def all_gather(self, sequence: int, x: np.ndarray) -> np.ndarray:
        """Every rank's `x` concatenated along a new leading block axis, in rank order."""
        with self.lock:
            description = self._begin("all_gather", sequence, x)
            return self._gather(description, x)

    def _gather(self, description: str, x: np.ndarray) -> np.ndarray:
        send = np.ascontiguousarray(x)
        out = self.pool.take((self.size * send.size,), x.dtype)
        self._blocking(description, lambda: self.comm.Allgather(
            [send.view(np.uint8), MPI.BYTE], [out.view(np.uint8), MPI.BYTE]))
        return out

    def sum_scatter(self, sequence: int, x: np.ndarray) -> np.ndarray:
        """The sum over the group of `x`, this rank's block of its first axis."""
        with self.lock:
            description = self._begin("sum_scatter", sequence, x)
            name = x.dtype.name
            wide = name in ("float16", "bfloat16")
            kind = "float32" if wide else name
            send = np.ascontiguousarray(x, np.float32 if wide else None)
            out = self.pool.take((x.shape[0] // self.size, *x.shape[1:]), send.dtype)
            op = MPI.LOR if kind == "bool" else MPI.SUM
            self._blocking(description, lambda: self.comm.Reduce_scatter_block(
                [send, _MPI_TYPES[kind]], [out, _MPI_TYPES[kind]], op=op))
            return out.astype(x.dtype) if wide else out

    # -- point to point --------------------------------------------------------------------
    def send(self, x: np.ndarray, dst: int) -> None:
        """Starts sending `x` to rank `dst`; completion is checked by later operations."""
        with self.lock:
            self._usable("send")
            mine = header("send", 0, x.shape, x.dtype.name)
            data = np.ascontiguousarray(x).reshape(-1).view(np.uint8)
            requests = [self.comm.Isend(mine, dest=dst, tag=TAG_P2P_HEADER),
                        self.comm.Isend([data, MPI.BYTE], dest=dst, tag=TAG_P2P_DATA)]
            what = f"send of {array_text(mine)} to rank {dst}"
            self.pending_sends.append((time.monotonic() + self.timeout, what, requests,
                                       (mine, data)))

    def _reap(self, operation: str) -> None:
        """Drops completed sends; raises if one has waited past its deadline."""
        if not self.pending_sends:
            return
        now = time.monotonic()
        still = []
        for deadline, what, requests, buffers in self.pending_sends:
            if MPI.Request.Testall(requests):
                continue
            if now > deadline:
                raise self._fail(f"{operation}: rank {self.rank}'s {what} was not received "
                                 f"within {self.timeout:g} s")
            still.append((deadline, what, requests, buffers))
        self.pending_sends = still

    def recv(self, shape: tuple[int, ...], dtype: np.dtype, src: int) -> Any:
        """Receives an array of `shape` and `dtype` from rank `src`."""
        with self.lock:
            self._usable("recv")
            expected = header("send", 0, shape, dtype.name)
            got = np.empty(HEADER, np.int64)
            what = f"{array_text(expected)} from rank {src}"
            request = self.comm.Irecv(got, source=src, tag=TAG_P2P_HEADER)
            if not wait([request], time.monotonic() + self.timeout):
                request.Cancel()
                raise self._fail(f"recv: rank {self.rank} waited {self.timeout:g} s for {what}; "
                                 f"rank {src} may have died or sent nothing")
            sent_dtype = np.dtype(_numpy_dtype(DTYPE_NAMES[int(got[2])]))
            status = MPI.Status()
            self.comm.Probe(source=src, tag=TAG_P2P_DATA, status=status)
            out = np.empty(status.Get_count(MPI.BYTE), np.uint8)
            request = self.comm.Irecv([out, MPI.BYTE], source=src, tag=TAG_P2P_DATA)
            if not wait([request], time.monotonic() + self.timeout):
                raise self._fail(f"recv: rank {self.rank} timed out receiving {what}")
            if not (got[2:] == expected[2:]).all():
                raise DistributedError(
                    f"recv: rank {self.rank} expected {what}, but rank {src} sent "
                    f"{array_text(got)}")
            return out.view(sent_dtype).reshape(shape)

    def finish(self) -> None:
        """Waits (bounded) for this communicator's unfinished sends; run at exit."""
        for deadline, what, requests, _ in self.pending_sends:
            if not wait(requests, deadline):
                sys.stderr.write(f"nuvec.distributed: rank {self.rank}'s {what} was never "
                                 "received\n")
        self.pending_sends = []

    def split(self, color: int, key: int) -> Communicator | None:
        """The communicator of the processes passing `color` (None for a negative color)."""
        with self.lock:
            self._usable("split")
            token = watchdog.arm(time.monotonic() + self.timeout,
                                 f"rank {self.rank}: split did not finish")
            try:
                comm = self.comm.Split(MPI.UNDEFINED if color < 0 else color, key)
            finally:
                watchdog.disarm(token)
        if comm == MPI.COMM_NULL:
            return None
        child = Communicator(comm, self.timeout)
        _communicators.append(child)
        return child


def _numpy_dtype(name: str) -> Any:
    return ml_dtypes.bfloat16 if name == "bfloat16" else name


_communicators: list[Communicator] = []


def _finish_all() -> None:
    for communicator in _communicators:
        communicator.finish()


def _abort_on_uncaught(previous: Any) -> Any:
    """An excepthook that prints the error, then aborts every rank (as `python -m mpi4py`):
    otherwise the other ranks would wait in a collective for this one."""

    def hook(kind: Any, value: Any, traceback: Any) -> None:
        previous(kind, value, traceback)
        abort_job()

    return hook


def world(timeout: float) -> Communicator:
    """The communicator of all launched processes (MPI initialised by importing mpi4py)."""
    communicator = Communicator(MPI.COMM_WORLD.Dup(), timeout)
    _communicators.append(communicator)
    if communicator.size > 1:
        sys.excepthook = _abort_on_uncaught(sys.excepthook)
        atexit.register(_finish_all)
    kernels.register_cpu()
    return communicator
