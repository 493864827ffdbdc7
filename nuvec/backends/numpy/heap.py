"""The CPU's buffer cache: freed memory the C allocator keeps for the next buffers.

NumPy takes its buffers from the C allocator. By default glibc's `malloc` gives a large block
(from 128 KiB, a threshold that grows with the blocks freed) pages of its own (`mmap`) and
hands them back to the system when it is freed, and it returns the free top of its heap once
that passes a threshold. A new buffer on fresh pages then costs a page fault for every page on
first touch: about as long as a pass of `exp` over the buffer, paid again by every step that
makes same-sized arrays. As MLX's allocator keeps a cache of freed buffers, the CPU backend
sets glibc's two thresholds (`mallopt`) to the cache limit: blocks below it come from the heap,
and up to that many freed bytes stay there for reuse. `malloc_trim` hands them back
(`clear_cache`); a limit of 0 restores glibc's fixed defaults (128 KiB), not its growing
threshold.

The setting is the process's: every library's `malloc` in it shares the cache. Without glibc
(macOS, Windows, musl) nothing is set and the cache reads 0.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
_GLIBC_DEFAULT = 128 * 1024  # both thresholds' defaults
_INT_MAX = 2**31 - 1  # mallopt takes a C int


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _glibc() -> Any:
    """The C library's handle when it is glibc with `mallopt`, `malloc_trim` and `mallinfo2`
    (glibc 2.33 and newer), else None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        for name in ("gnu_get_libc_version", "mallopt", "malloc_trim", "mallinfo2"):
            getattr(libc, name)
    except (OSError, AttributeError):
        return None
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    libc.mallinfo2.restype = _Mallinfo2
    return libc


_libc = _glibc()


def available() -> bool:
    """Whether this process's allocator is glibc's, so the cache can be set."""
    return _libc is not None


def set_limit(limit: int) -> None:
    """Keeps up to `limit` freed bytes (at most 2 GiB, mallopt's range) in the allocator's heap
    and takes blocks below it from there; 0 returns to glibc's fixed defaults. Frees the
    cache at once if it holds more than `limit`."""
    if _libc is None:
        return
    keep = min(limit, _INT_MAX)
    _libc.mallopt(_M_MMAP_THRESHOLD, max(keep, _GLIBC_DEFAULT))
    _libc.mallopt(_M_TRIM_THRESHOLD, keep if keep else _GLIBC_DEFAULT)
    if cached_bytes() > limit:
        trim()


def cached_bytes() -> int:
    """The free bytes the allocator holds in its heaps (glibc's `mallinfo2().fordblks`, over
    every thread's arena); pages the system took back from inside the heap still count."""
    return 0 if _libc is None else int(_libc.mallinfo2().fordblks)


def trim() -> None:
    """Hands the allocator's free memory back to the system (`malloc_trim(0)`)."""
    if _libc is not None:
        _libc.malloc_trim(0)
