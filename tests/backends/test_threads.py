"""The CPU kernels' thread pool (`nuvec/backends/threads.py`): the thread count, its
environment variables and checks, and `parallel_rows` (coverage, thresholds, nesting, errors,
NumPy's error state, callers on several threads)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import warnings
import weakref

import numpy as np
import pytest

import nuvec as mx
from nuvec.backends import threads
from nuvec.backends.threads import chunk_bounds, parallel_rows


def test_set_num_threads_round_trips(num_threads):
    for n in (1, 3, np.int64(2)):
        num_threads(n)
        assert mx.get_num_threads() == n and type(mx.get_num_threads()) is int


@pytest.mark.parametrize("bad", [1.5, "2", None, True, np.bool_(True)])
def test_set_num_threads_rejects_non_int(bad):
    with pytest.raises(TypeError, match=r"^set_num_threads: the thread count must be an int, got "
                                         rf"{type(bad).__name__}$"):
        mx.set_num_threads(bad)


@pytest.mark.parametrize("bad", [0, -1, 1025, 2**70])
def test_set_num_threads_rejects_out_of_range(bad):
    with pytest.raises(ValueError, match=rf"^set_num_threads: the thread count must be from 1 to "
                                         rf"1024, got {bad}$"):
        mx.set_num_threads(bad)


@pytest.mark.parametrize("env, expected", [
    ({"NUVEC_NUM_THREADS": "3", "OMP_NUM_THREADS": "5"}, 3),
    ({"OMP_NUM_THREADS": "5"}, 5),
    ({"OMP_NUM_THREADS": "4,2"}, 4),
    ({"NUVEC_NUM_THREADS": "zero", "OMP_NUM_THREADS": "6"}, 6),
    ({"NUVEC_NUM_THREADS": "0"}, None),
    ({}, None),
], ids=["nuvec-first", "omp", "omp-nested", "bad-nuvec-ignored", "zero-ignored", "machine"])
def test_thread_count_follows_environment(env, expected):
    clean = {k: v for k, v in os.environ.items()
             if k not in ("NUVEC_NUM_THREADS", "OMP_NUM_THREADS")}
    code = "import nuvec; print(nuvec.get_num_threads())"
    out = subprocess.run([sys.executable, "-c", code], env={**clean, **env}, text=True,
                         capture_output=True, check=True, cwd=os.getcwd()).stdout
    assert int(out) == (expected or threads.machine_threads())


@pytest.mark.parametrize("n_rows, chunks, align", [(10, 3, 1), (7, 4, 1), (1000, 4, 64), (5, 8, 1),
                                                   (130, 3, 64)])
def test_chunk_bounds_cover_rows_in_order(n_rows, chunks, align):
    bounds = chunk_bounds(n_rows, chunks, align)
    assert bounds[0] == 0 and bounds[-1] == n_rows
    assert all(a < b for a, b in zip(bounds, bounds[1:]))
    assert len(bounds) - 1 <= chunks
    assert all(b % align == 0 for b in bounds[1:-1])


def _recorded(n_rows, **kwargs):
    """The chunks `parallel_rows` made, and the threads that ran them."""
    seen, lock = [], threading.Lock()

    def body(start, stop):
        with lock:
            seen.append((start, stop, threading.get_ident()))

    parallel_rows(n_rows, body, **kwargs)
    return sorted(seen)


def test_parallel_rows_covers_each_row_once(num_threads):
    num_threads(3)
    seen = _recorded(1001, row_bytes=1 << 12, min_bytes=1 << 12)
    assert seen[0][0] == 0 and seen[-1][1] == 1001
    assert all(a[1] == b[0] for a, b in zip(seen, seen[1:]))
    assert 1 < len(seen) <= 3 * 4  # at most four chunks a thread


def test_parallel_rows_small_work_stays_on_caller(num_threads):
    num_threads(4)
    assert _recorded(100, row_bytes=8, min_bytes=1 << 20) == [(0, 100, threading.get_ident())]


def test_parallel_rows_one_thread_runs_one_chunk(num_threads):
    num_threads(1)
    assert _recorded(1 << 20, row_bytes=1 << 20, min_bytes=1) == [(0, 1 << 20,
                                                                   threading.get_ident())]


def test_parallel_rows_uses_worker_threads(num_threads):
    num_threads(2)
    barrier = threading.Barrier(2, timeout=30)  # passes only if two threads run chunks at once
    ids = set()

    def body(start, stop):
        ids.add(threading.get_ident())
        barrier.wait()

    parallel_rows(2, body, row_bytes=1, min_bytes=1)
    assert len(ids) == 2


def test_workers_keep_no_array_of_a_finished_job(num_threads):
    num_threads(2)
    barrier = threading.Barrier(2, timeout=30)  # a worker runs one of the two chunks
    out = np.zeros(2)
    kept = weakref.ref(out)
    parallel_rows(2, lambda start, stop, rows=out[:]: (barrier.wait(), rows.fill(1.0)),
                  row_bytes=1, min_bytes=1)  # a view of `out` in the body, as a kernel's
    del out
    deadline = time.monotonic() + 10  # the worker drops the job once it is back waiting
    while kept() is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert kept() is None


def test_parallel_rows_nested_use_runs_inline(num_threads):
    num_threads(3)
    inner = []

    def body(start, stop):
        inner.append(_recorded(600, row_bytes=1 << 20, min_bytes=1))

    parallel_rows(600, body, row_bytes=1 << 20, min_bytes=1)
    assert all(len(chunks) == 1 and chunks[0][:2] == (0, 600) for chunks in inner)


def test_parallel_rows_raises_a_chunks_error_after_all_ran(num_threads):
    num_threads(2)
    ran = []

    def body(start, stop):
        ran.append(start)
        if start == 0:
            raise KeyError("first chunk")

    with pytest.raises(KeyError, match="first chunk"):
        parallel_rows(4, body, row_bytes=1, min_bytes=1)
    assert sorted(ran) == [0, 1, 2, 3]
    assert _recorded(4, row_bytes=1, min_bytes=1)[-1][1] == 4  # the pool still works


@pytest.mark.parametrize("mode", ["ignore", "raise"])
def test_parallel_rows_workers_take_the_callers_error_state(num_threads, mode):
    num_threads(2)
    x = np.zeros(64)

    def body(start, stop):
        np.log(x[start:stop])  # divide by zero in every chunk

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all=mode):
            if mode == "raise":
                with pytest.raises(FloatingPointError):
                    parallel_rows(64, body, row_bytes=8, min_bytes=8, align=8)
            else:
                parallel_rows(64, body, row_bytes=8, min_bytes=8, align=8)


def test_parallel_rows_callers_on_many_threads_finish(num_threads):
    num_threads(3)
    x = np.random.default_rng(0).standard_normal((257, 1031))
    expected = np.exp(x)
    results, errors = [], []

    def caller():
        try:
            for _ in range(20):
                out = np.empty_like(x)
                parallel_rows(257, lambda a, b: np.exp(x[a:b], out=out[a:b]), row_bytes=8 * 1031,
                              min_bytes=1 << 14)
                results.append(np.array_equal(out, expected))
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    callers = [threading.Thread(target=caller) for _ in range(6)]
    for t in callers:
        t.start()
    for t in callers:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in callers) and not errors
    assert len(results) == 120 and all(results)


def test_streams_evaluate_threaded_kernels_together(num_threads):
    num_threads(2)
    data = np.random.default_rng(1).standard_normal((513, 1025)).astype(np.float32)
    expected = np.exp(data.astype(np.float64)) * 2
    s1, s2 = mx.new_stream(mx.cpu), mx.new_stream(mx.cpu)
    x = mx.array(data)
    a = mx.multiply(mx.exp(x, stream=s1), 2, stream=s1)
    b = mx.multiply(mx.exp(x, stream=s2), 2, stream=s2)
    mx.eval(a + b)
    for y in (a, b):
        np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-6)


# -- parallel_items and one_blas_thread ----------------------------------------------------
@pytest.mark.parametrize("n, limit", [(1, None), (4, 1), (5, None), (9, 2), (30, 3)])
def test_parallel_items_runs_each_item_once(num_threads, n, limit):
    num_threads(3)
    seen, names, lock = [], set(), threading.Lock()

    def body(i):
        with lock:
            seen.append(i)
            names.add(threading.current_thread().name)

    threads.parallel_items(n, body, threads=limit)
    assert sorted(seen) == list(range(n))
    assert len(names) <= min(3, n, limit or 3)


def test_parallel_items_on_one_thread_keeps_the_order(num_threads):
    num_threads(1)
    seen = []
    threads.parallel_items(6, seen.append)
    assert seen == list(range(6))


def test_parallel_items_raises_the_first_error_after_every_item(num_threads):
    num_threads(2)
    seen = []

    def body(i):
        seen.append(i)
        if i == 3:
            raise KeyError("item 3")

    with pytest.raises(KeyError, match="item 3"):
        threads.parallel_items(8, body)
    assert sorted(seen) == list(range(8))


def test_parallel_items_nested_run_inline(num_threads):
    num_threads(2)
    inner = []

    def body(i):
        outer = threading.current_thread().name
        threads.parallel_items(3, lambda j: inner.append((i, j, threading.current_thread().name
                                                          == outer)))

    threads.parallel_items(4, body)
    assert sorted(inner) == [(i, j, True) for i in range(4) for j in range(3)]


def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_one_blas_thread_limits_and_restores_once_the_last_user_exits():
    before = _blas_threads()
    with threads.one_blas_thread():
        assert all(n == 1 for n in _blas_threads())
        with threads.one_blas_thread():
            assert all(n == 1 for n in _blas_threads())
        assert all(n == 1 for n in _blas_threads())  # the outer user still holds the limit
    assert _blas_threads() == before
