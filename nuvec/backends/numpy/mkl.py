"""The CPU's 2-D float32 and float64 products through Intel MKL, where the `mkl` package is
installed (`pip install "nuvec[mkl]"`); otherwise, and for every other product, NumPy's
matmul and the BLAS NumPy loaded.

NumPy's wheels ship OpenBLAS. PyTorch's CPU products are MKL's, which on the x86 machines the
benchmarks run on computes the products of a small MLP's training step 1.2 to 1.4 times as
fast (`python benchmarks/bench_gemm_peers.py`, docs/performance.md). When the `mkl`
distribution is installed, its `libmkl_rt` is loaded on first use (`nuvec.backends.mkl_library`:
MKL's GNU OpenMP threads, the Intel OpenMP runtime where `libgomp` is missing), and `Matmul` and
`Addmm` call its `cblas_?gemm` for a 2-D right operand and a 2-D (or C-contiguous N-D: its
rows) left one, of one float dtype, that it reads in place (rows or columns contiguous: a
transposed view is a flag, not a copy), from `MIN_WORK` multiply-adds; other products (batched
ones) stay NumPy's. `NUVEC_MKL=0` in the environment keeps every product on NumPy (so does
`NUVEC_MKL=vml`, which keeps MKL's vector math, `nuvec.backends.vector_math`). A library that
fails to load or fails its check on a small product is not used.

MKL's threads follow MKL's own settings (`MKL_NUM_THREADS`, `OMP_NUM_THREADS`, else the
physical cores); `threadpoolctl` (and so `one_blas_thread`) limits them as it limits OpenBLAS.
Its sums run in another order than OpenBLAS's: results differ from NumPy's in the last bits.
A process forked from one that used MKL computes its products with NumPy (OpenMP's threads do
not survive a fork; the child's first threaded MKL call would hang).
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

from nuvec.backends import mkl_library, native
from nuvec.backends.common.matmul import add_scaled
from nuvec.backends.numpy.registry import table
from nuvec.ops.matmul import Addmm, Matmul

__all__ = ["MIN_WORK", "available", "library", "matmul", "layout"]

# Below this many multiply-adds NumPy's matmul is used: a ctypes call costs a few microseconds
# more than NumPy's own dispatch, about the time OpenBLAS takes for 64³.
MIN_WORK = 1 << 18

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_INT_MAX = 2**31 - 1  # `mkl_rt`'s default interface takes 32-bit integers

_lock = threading.Lock()
_bound: list[Any] = []  # [] until first use, then [(library, {dtype: cblas gemm}) or None]


def _find() -> tuple[Any, dict[np.dtype, Any]] | None:
    """MKL's library and its gemm functions by dtype, checked on a small product; None where
    MKL is not installed, is turned off, or fails."""
    lib = mkl_library.library()
    if lib is None:
        return None
    found: dict[np.dtype, Any] = {}
    i, p = ctypes.c_int, ctypes.c_void_p
    for dtype, name, real in ((np.float32, "cblas_sgemm", ctypes.c_float),
                              (np.float64, "cblas_dgemm", ctypes.c_double)):
        gemm = getattr(lib, name, None)
        if gemm is None:
            return None
        gemm.argtypes = [i, i, i, i, i, i, real, p, i, p, i, real, p, i]
        gemm.restype = None
        found[np.dtype(dtype)] = gemm
    return (lib, found) if _works(found) else None


def _works(functions: dict[np.dtype, Any]) -> bool:
    """Whether each gemm computes a small product, plain and with a transposed operand."""
    a = np.arange(12.0).reshape(3, 4)
    b = np.arange(8.0).reshape(4, 2) - 3.0
    for dtype, gemm in functions.items():
        x, y = a.astype(dtype), b.astype(dtype)
        for left in (x, np.asfortranarray(x)):
            out = _call(gemm, left, y)
            if out is None or not np.array_equal(out, a @ b):
                return False
    return True


def _loaded() -> tuple[Any, dict[np.dtype, Any]] | None:
    if not mkl_library.PRODUCTS or mkl_library.library() is None:  # (or forked)
        return None
    if not _bound:
        with _lock:
            if not _bound:
                _bound.append(_find())
    return _bound[0]


def library() -> Any:
    """MKL's loaded `ctypes` library where products go through MKL, else None: the BLAS calls
    of one library only (`nuvec.backends.numpy.blas` takes its `axpy` from it), as two
    libraries' threads, each spinning after its calls, slow each other's down."""
    loaded = _loaded()
    return None if loaded is None else loaded[0]


def available() -> bool:
    """Whether products go through MKL (the `mkl` package installed, loaded and checked)."""
    return _loaded() is not None


def layout(x: np.ndarray) -> tuple[int, int] | None:
    """`(transpose flag, leading dimension)` with which row-major CBLAS reads the 2-D array `x`
    in place: rows contiguous (not transposed) or columns contiguous (transposed); None for any
    other layout, or a leading dimension that does not fit a 32-bit int."""
    rows, cols = x.shape
    s0, s1 = x.strides
    size = x.itemsize
    if (s1 == size or cols == 1) and s0 % size == 0 and s0 // size >= max(1, cols):
        ld = s0 // size
        return (_NO_TRANS, ld) if ld <= _INT_MAX else None
    if (s0 == size or rows == 1) and s1 % size == 0 and s1 // size >= max(1, rows):
        ld = s1 // size
        return (_TRANS, ld) if ld <= _INT_MAX else None
    return None


def _call(fn: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    la, lb = layout(a), layout(b)
    if la is None or lb is None:
        return None
    m, k = a.shape
    n = b.shape[1]
    out = np.empty((m, n), a.dtype)
    fn(_ROW_MAJOR, la[0], lb[0], m, n, k, 1.0, native.address(a), la[1], native.address(b),
       lb[1], 0.0, native.address(out), max(1, n))
    return out


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """`a @ b` in a new C-contiguous array through MKL, or None where it does not apply (MKL
    not available; `b` not 2-D, or `a` neither 2-D nor C-contiguous (a linear layer's
    `[batch, length, features]` input is one product of its rows); dtypes other than one of
    float32 and float64; under `MIN_WORK` multiply-adds; a dimension over 2**31 - 1; a layout
    CBLAS cannot read in place)."""
    if b.ndim != 2 or a.ndim < 2 or a.dtype != b.dtype:
        return None
    lead = a.shape[:-1]
    if a.ndim > 2:
        if not a.flags.c_contiguous:
            return None
        a = a.reshape(-1, a.shape[-1])  # a view
    m, k = a.shape
    n = b.shape[1]
    if m * n * k < MIN_WORK or max(m, n, k) > _INT_MAX:
        return None
    loaded = _loaded()
    gemm = None if loaded is None else loaded[1].get(a.dtype)
    out = None if gemm is None else _call(gemm, a, b)
    return out if out is None or len(lead) == 1 else out.reshape(*lead, n)


def _install() -> None:
    # Only where the package is installed: otherwise products keep the table's kernels and
    # pay nothing (MKL itself loads on the first product large enough). The table's kernels
    # stay the fallback of every product MKL does not take.
    if mkl_library.PATH is None or not mkl_library.PRODUCTS:
        return
    plain_matmul, plain_addmm = table.get(Matmul), table.get(Addmm)

    def matmul_kernel(p, a, b):
        out = matmul(a, b)
        return plain_matmul(p, a, b) if out is None else out

    def addmm_kernel(p, a, b, c):
        out = matmul(a, b)
        return plain_addmm(p, a, b, c) if out is None else add_scaled(p, out, c)

    table.add(Matmul, matmul_kernel, replace=True)
    table.add(Addmm, addmm_kernel, replace=True)


_install()
