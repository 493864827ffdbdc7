"""Intel MKL's runtime library (`libmkl_rt`) where the `mkl` distribution is installed (`pip
install "nuvec[mkl]"`): loaded through `ctypes` on first use, once per process, with its
threading layer chosen first (GNU OpenMP, the Intel runtime where `libgomp` is missing).

Its users bind what they call: the CPU's products and `axpy` (`nuvec.backends.numpy.mkl`,
`nuvec.backends.numpy.blas`) and the vector math of `exp` and `tanh`
(`nuvec.backends.vector_math`). `NUVEC_MKL=0` in the environment keeps MKL unloaded,
`NUVEC_MKL=vml` uses its vector math only (products stay OpenBLAS's: MKL's were slower on an
AMD machine, docs/performance.md), and a process forked from another leaves MKL alone (GNU
OpenMP's threads do not survive a fork: the child's first threaded MKL call would hang), so
every user falls back to NumPy there.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from importlib.metadata import PackageNotFoundError, distribution
from typing import Any

__all__ = ["PATH", "PRODUCTS", "library"]

_GNU, _INTEL = 3, 0  # MKL_Set_Threading_Layer's codes


# `NUVEC_MKL`: "0" leaves MKL unloaded, "vml" uses its vector math only (products stay
# NumPy's OpenBLAS), anything else both
_SETTING = os.environ.get("NUVEC_MKL", "1")
PRODUCTS = _SETTING != "vml"


def _library_path() -> str | None:
    """The path of the installed `mkl` distribution's `libmkl_rt`, if any and if `NUVEC_MKL`
    leaves MKL on (anything but "0")."""
    if _SETTING == "0":
        return None
    try:
        dist = distribution("mkl")
    except PackageNotFoundError:
        return None
    for f in dist.files or ():
        if f.name.startswith("libmkl_rt.so") or f.name == "mkl_rt.2.dll":
            return str(f.locate())
    return None


PATH = _library_path()

_lock = threading.Lock()
_loaded: list[Any] = []  # [] until first use, then [the library, or None]


def _load() -> Any:
    if PATH is None:
        return None
    try:
        lib = ctypes.CDLL(PATH)
    except OSError:
        return None
    # the threading layer is chosen before any other MKL call; GNU's needs libgomp
    lib.MKL_Set_Threading_Layer(_GNU if ctypes.util.find_library("gomp") else _INTEL)
    return lib


def _after_fork() -> None:
    _loaded[:] = [None]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def library() -> Any:
    """The loaded `ctypes` library, or None (MKL not installed, turned off, failing to load,
    or this process forked from another)."""
    if not _loaded:
        with _lock:
            if not _loaded:
                _loaded.append(_load())
    return _loaded[0]
