"""The CPU kernels' thread pool: `parallel_rows` splits a kernel's leading rows over threads,
`parallel_items` deals out independent work items one at a time, `one_blas_thread` keeps
the BLAS library to one thread of its own while items that call it run on the pool's.

NumPy releases the GIL inside its loops, so row chunks computed on several threads run on
several cores. One process-wide pool, sized by `NUVEC_NUM_THREADS`, else `OMP_NUM_THREADS`,
else the cores this process may run on; `set_num_threads` changes it. Work is claimed chunk by
chunk: the calling thread computes chunks too and only waits for chunks a worker has already
started, so callers on several threads (the evaluator's per-stream workers) never deadlock, and
a `parallel_rows` inside a chunk (nested use) runs inline. Imports nothing from nuvec.

OpenBLAS serialises callers on several threads while it runs its own threads, so kernels whose
items are matrix products pin it to one thread through `threadpoolctl` (its controller built
once, on first use: it scans the loaded libraries; a limit and its restore take about 7 us).
"""

from __future__ import annotations

import os
import queue
import threading
from typing import Callable

import numpy as np
from threadpoolctl import ThreadpoolController

# Below this much work a chunk costs more to hand to another thread than it saves: waking a
# worker and collecting its chunk take 20-60 us here, NumPy streams about 4-8 GB/s per core.
# Measured with `python benchmarks/bench_threads.py` (see docs/performance.md).
MIN_BYTES = 1 << 19

# Kernels bound by memory bandwidth (one cheap instruction an element: `-x`, `x²`, `|x|`,
# `floor`, ...; and reductions) split only from this much work per chunk: `python
# benchmarks/bench_threads.py` measured them on two threads at 1.1 to 3.6 times their one-thread
# time for 1 to 4 MiB arrays, and at 0.6 to 0.9 from 8 MiB (`exp` and `tanh` gain from 2 MiB).
MEMORY_BOUND_BYTES = 1 << 22

MAX_THREADS = 1024
_CHUNKS_PER_THREAD = 4  # a late worker (another process on its core) holds up little work


def _environment_threads() -> int | None:
    """The first positive integer of `NUVEC_NUM_THREADS`, else of `OMP_NUM_THREADS` (whose
    nested form `4,2` gives 4); anything else there is ignored."""
    for name in ("NUVEC_NUM_THREADS", "OMP_NUM_THREADS"):
        text = os.environ.get(name, "").split(",")[0].strip()
        if text.isdigit() and 0 < int(text) <= MAX_THREADS:
            return int(text)
    return None


def machine_threads() -> int:
    """The number of cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity masks on this platform
        return max(1, os.cpu_count() or 1)


class _Job:
    """One `parallel_rows` call: its chunk bounds, the next unclaimed chunk, what is left."""

    __slots__ = ("body", "bounds", "claimed", "left", "lock", "done", "error", "errstate")

    def __init__(self, body: Callable[[int, int], object], bounds: list[int]) -> None:
        self.body = body
        self.bounds = bounds
        self.claimed = 0
        self.left = len(bounds) - 1
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.errstate = np.geterr()  # NumPy's error state is per thread: workers take the caller's

    def claim(self) -> int | None:
        with self.lock:
            i = self.claimed
            if i >= len(self.bounds) - 1:
                return None
            self.claimed = i + 1
            return i

    def run(self) -> None:
        """Computes unclaimed chunks until none is left."""
        while (i := self.claim()) is not None:
            try:
                self.body(self.bounds[i], self.bounds[i + 1])
            except BaseException as exc:
                if self.error is None:
                    self.error = exc
            with self.lock:
                self.left -= 1
                if self.left == 0:
                    self.done.set()


class _Pool:
    """Worker threads waiting on one queue of jobs; started as they are first needed."""

    def __init__(self) -> None:
        self.threads = _environment_threads() or machine_threads()
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.workers: list[threading.Thread] = []
        self.lock = threading.Lock()

    def wake(self, job: _Job, helpers: int) -> None:
        if len(self.workers) < helpers:
            with self.lock:
                while len(self.workers) < helpers:
                    worker = threading.Thread(target=_work, args=(self.jobs,), daemon=True,
                                              name=f"nuvec-pool-{len(self.workers)}")
                    worker.start()
                    self.workers.append(worker)
        for _ in range(helpers):
            self.jobs.put(job)


_local = threading.local()  # `inside`: this thread is computing a chunk
_pool = _Pool()


def _work(jobs: queue.SimpleQueue[_Job]) -> None:
    _local.inside = True
    while True:
        job = jobs.get()
        with np.errstate(**job.errstate):
            job.run()
        # waiting for the next job, hold nothing of this one: its body's arrays (a kernel's
        # inputs and output) would stay alive until then
        del job


def _after_fork() -> None:
    global _pool
    threads = _pool.threads
    _pool = _Pool()  # the parent's workers do not exist in a forked child
    _pool.threads = threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def get_num_threads() -> int:
    """The number of threads the CPU kernels split their work over.

    Set by `NUVEC_NUM_THREADS`, else `OMP_NUM_THREADS`, else the number of cores this process
    may run on, until `set_num_threads` changes it.

    Returns:
        int: the thread count (at least 1).

    Example:
        >>> n = mx.get_num_threads()
        >>> n >= 1
        True
    """
    return _pool.threads


def set_num_threads(n: int) -> None:
    """Sets the number of threads the CPU kernels split their work over (1: no threads).

    Results do not depend on it: threads split rows, never a sum's order. It takes effect for
    kernels started afterwards; threads already running are kept.

    Args:
        n: the thread count, a positive int.

    Raises:
        TypeError: if `n` is not an int.
        ValueError: if `n` is less than 1 or more than `MAX_THREADS` (1024).

    Example:
        >>> before = mx.get_num_threads()
        >>> mx.set_num_threads(1)
        >>> mx.get_num_threads()
        1
        >>> mx.set_num_threads(before)
    """
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"set_num_threads: the thread count must be an int, got {type(n).__name__}")
    if not 1 <= n <= MAX_THREADS:
        raise ValueError(f"set_num_threads: the thread count must be from 1 to {MAX_THREADS}, "
                         f"got {n}")
    _pool.threads = int(n)


class _BlasPin:
    """How many callers want BLAS on one thread, and the limit to restore after the last."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0
        self.controller: ThreadpoolController | None = None
        self.limit = None

    def __enter__(self) -> None:
        with self.lock:
            if self.users == 0:
                if self.controller is None:
                    self.controller = ThreadpoolController()
                self.limit = self.controller.limit(limits=1, user_api="blas")
            self.users += 1

    def __exit__(self, *exc) -> None:
        with self.lock:
            self.users -= 1
            if self.users == 0 and self.limit is not None:
                self.limit.restore_original_limits()
                self.limit = None


_blas_pin = _BlasPin()


def one_blas_thread() -> _BlasPin:
    """A context manager in which the BLAS library runs each call on its caller's thread.

    Nested and concurrent uses share one limit: the library's thread count is restored when
    the last of them exits.

    Example:
        >>> from nuvec.backends.threads import one_blas_thread
        >>> with one_blas_thread():
        ...     pass
    """
    return _blas_pin


def parallel_items(count: int, body: Callable[[int], object], *, threads: int | None = None
                   ) -> None:
    """Calls `body(i)` for every `i` in `[0, count)`, on up to `threads` (default
    `get_num_threads()`, never more) threads, each claiming the next item as it is free;
    returns once every item has run.

    Items must be independent; which thread runs which, and in what order, varies (order them
    by decreasing cost for balance). One thread, one item, or a call from inside an item
    runs them in order on the calling thread. The first exception an item raises is raised
    here, after every item has finished.

    Example:
        >>> from nuvec.backends.threads import parallel_items
        >>> out = [0] * 5
        >>> parallel_items(5, lambda i: out.__setitem__(i, i * i))
        >>> out
        [0, 1, 4, 9, 16]
    """
    n = min(_pool.threads, count, _pool.threads if threads is None else max(threads, 1))
    if n <= 1 or getattr(_local, "inside", False):
        for i in range(count):
            body(i)
        return
    _run(_Job(lambda i, _: body(i), list(range(count + 1))), n)


def _run(job: _Job, threads: int) -> None:
    """Runs `job`'s chunks on the calling thread and `threads - 1` workers."""
    _pool.wake(job, threads - 1)
    _local.inside = True
    try:
        job.run()
    finally:
        _local.inside = False
    job.done.wait()
    if job.error is not None:
        raise job.error


def chunk_bounds(n_rows: int, chunks: int, align: int = 1) -> list[int]:
    """`chunks + 1` increasing bounds from 0 to `n_rows`, inner ones multiples of `align`."""
    inner = {n_rows * i // chunks // align * align for i in range(1, chunks)}
    return [0, *sorted(inner - {0, n_rows}), n_rows]


def parallel_rows(
    n_rows: int,
    body: Callable[[int, int], object],
    *,
    row_bytes: int = 1,
    min_bytes: int | None = None,
    align: int = 1,
) -> None:
    """Calls `body(start, stop)` on contiguous chunks covering rows `[0, n_rows)`, on up to
    `get_num_threads()` threads, and returns once every chunk has run.

    Each chunk holds at least `min_bytes` (default `MIN_BYTES`) of work (`row_bytes` per
    row), so small work stays on the calling thread as one `body(0, n_rows)` call; so does a
    call made from inside a chunk. Chunk bounds other than 0 and `n_rows` are multiples of
    `align`, and every chunk holds at least `align` rows (unless the work is one chunk). The
    chunks must be independent (each writes its own rows of a preallocated output): which thread
    runs which chunk, and in what order, varies. The first exception a chunk raises is raised
    here, after every chunk has finished.

    Example:
        >>> import numpy as np
        >>> from nuvec.backends.threads import parallel_rows
        >>> x = np.arange(12.0).reshape(4, 3); out = np.empty_like(x)
        >>> parallel_rows(4, lambda a, b: np.exp(x[a:b], out=out[a:b]), row_bytes=24, min_bytes=24)
        >>> bool((out == np.exp(x)).all())
        True
    """
    threads = _pool.threads
    chunks = 1
    if threads > 1 and n_rows > align and not getattr(_local, "inside", False):
        work = n_rows * row_bytes // max(MIN_BYTES if min_bytes is None else min_bytes, 1)
        chunks = min(threads * _CHUNKS_PER_THREAD, work, n_rows // align)
    if chunks <= 1:
        body(0, n_rows)
        return
    job = _Job(body, chunk_bounds(n_rows, chunks, align))
    _run(job, min(threads, len(job.bounds) - 1))
