"""The CPU's buffer cache (`nuvec.backends.numpy.heap`): glibc's allocator keeps freed memory.

Each check runs in a fresh process: the allocator's settings are the process's.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nuvec.backends.numpy import heap

pytestmark = pytest.mark.skipif(not heap.available(), reason="the cache needs glibc's malloc")

# one thread: a worker drops a kernel's arrays just after the kernel returns (not a race to test)
ENV = {**os.environ, "NUVEC_NUM_THREADS": "1"}

# Makes and frees a 32 MiB array through nuvec; prints the resident MiB and the cache's MiB
# with the array alive, after it is freed, and after `clear_cache`.
PROGRAM = r"""
import os, sys
import nuvec as mx
limit = int(sys.argv[1])
if limit >= 0:
    mx.set_cache_limit(limit)
def resident():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20
def cached():
    return mx.get_cache_memory() >> 20
x = mx.exp(mx.arange(8 << 20, dtype=mx.float32))
mx.eval(x)
alive = resident(), cached()
del x
freed = resident(), cached()
mx.clear_cache()
print(*alive, *freed, resident(), cached())
"""


def _run(limit: int) -> list[int]:
    out = subprocess.run([sys.executable, "-c", PROGRAM, str(limit)], capture_output=True,
                         text=True, check=True, env=ENV)
    return [int(v) for v in out.stdout.split()]


def test_freed_buffers_stay_cached_until_clear_cache():
    alive_rss, alive_cache, freed_rss, freed_cache, cleared_rss, _ = _run(-1)  # the default
    assert freed_cache >= alive_cache + 31  # the 32 MiB buffer is free, and kept
    assert freed_rss >= alive_rss - 1  # its pages stay mapped for the next buffer
    assert cleared_rss <= freed_rss - 31  # clear_cache hands them back


def test_a_cache_limit_of_zero_returns_freed_buffers_at_once():
    alive_rss, alive_cache, freed_rss, freed_cache, _, _ = _run(0)
    assert freed_rss <= alive_rss - 31
    assert freed_cache < alive_cache + 31


def test_a_limit_below_the_cache_trims_it_when_set():
    code = ("import nuvec as mx; x = mx.exp(mx.arange(8 << 20, dtype=mx.float32)); mx.eval(x); "
            "del x; before = mx.get_cache_memory(); mx.set_cache_limit(1 << 20); "
            "print(before >> 20, mx.get_cache_memory() >> 20)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=ENV)
    before, after = (int(v) for v in out.stdout.split())
    assert before >= 32 and after <= before - 31
