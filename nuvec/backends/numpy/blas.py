"""BLAS calls NumPy has no function for: `axpy` (`y += alpha * x` in one pass), `axpby`
(`y = alpha * x + beta * y`) and `gemm` (`c = alpha * a @ b + beta * c`, accumulating into `c`).

NumPy links a BLAS for its products; `threadpoolctl` finds which library is loaded. When it is
an OpenBLAS with 64-bit integers whose CBLAS names are known (NumPy's own wheels load
`scipy_openblas64_`), `axpy` and `axpby` call its `cblas_?axpy` and `cblas_?axpby` through
`ctypes`: one pass over `x` and `y`, where NumPy's `y + alpha * x` takes two passes and a
temporary. Where products go through MKL (`nuvec.backends.numpy.mkl`: the `mkl` package
installed), they call MKL's instead, so that one library's threads run the BLAS calls. Any
other BLAS, or a binding that fails its check on first use, leaves them returning False and
callers compute with NumPy (so does `axpby` where the library has `axpy` only, and `gemm`
where it has no `cblas_?gemm`).

OpenBLAS's and MKL's vector loops use fused multiply-adds where the CPU has them: those
elements are rounded once, where NumPy's two ufunc calls round the product and then the sum.
Not every element is: OpenBLAS's Haswell kernels on an AMD Zen 3 round vectors of under 32
elements, and a few loop tails, twice, as NumPy does. Either way each is within an ulp of the
exact `y + alpha * x`.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

import numpy as np
from threadpoolctl import threadpool_info

from nuvec.backends import native
from nuvec.backends.numpy import mkl

__all__ = ["available", "axpby", "axpy", "gemm"]

# (CBLAS name template, integer type): the names of 64-bit-integer OpenBLAS builds
_NAMES = (("scipy_cblas_{}64_", ctypes.c_int64), ("cblas_{}64_", ctypes.c_int64))
_MKL_NAMES = (("cblas_{}", ctypes.c_int),)  # `mkl_rt`'s default interface: 32-bit integers
_REALS = ((np.float32, "s", ctypes.c_float), (np.float64, "d", ctypes.c_double))
_ROW_MAJOR = 101  # CBLAS's row-major order (the transpose flags: `mkl.layout`)

_lock = threading.Lock()
_bound: list[Any] = []  # [] until first use, then [({(routine, dtype): function}, longest)
#                          or None]


def _bind(lib: Any, names: tuple) -> tuple[dict[tuple[str, np.dtype], Any], int] | None:
    """`lib`'s `axpy` functions by dtype (and its `axpby` ones where it has them) under the
    first of `names` it has, each checked on a small vector, keyed by (routine, dtype), and the
    longest vector their integer type takes; None where no `axpy` works."""
    for template, integer in names:
        found = {}
        for routine in ("axpy", "axpby"):
            fns = {np.dtype(dtype): getattr(lib, template.format(letter + routine), None)
                   for dtype, letter, _ in _REALS}
            if None in fns.values():
                continue
            for (dtype, _, real), fn in zip(_REALS, fns.values()):
                scalars = [real] * (1 if routine == "axpy" else 2)
                fn.argtypes = [integer, scalars[0], ctypes.c_void_p, integer,
                               *scalars[1:], ctypes.c_void_p, integer]
                fn.restype = None
            if _works(routine, fns):
                found.update({(routine, dtype): fn for dtype, fn in fns.items()})
        found.update(_bind_gemm(lib, template, integer))
        if ("axpy", np.dtype(np.float32)) in found:
            return found, 2 ** (8 * ctypes.sizeof(integer) - 1) - 1
    return None


def _bind_gemm(lib: Any, template: str, integer: Any) -> dict[tuple[str, np.dtype], Any]:
    """`lib`'s row-major `cblas_?gemm` by dtype under `template`, each checked on a small
    product with a transposed operand; {} where it has none or they fail."""
    fns = {np.dtype(dtype): getattr(lib, template.format(letter + "gemm"), None)
           for dtype, letter, _ in _REALS}
    if None in fns.values():
        return {}
    p = ctypes.c_void_p
    for (_, _, real), fn in zip(_REALS, fns.values()):
        fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, integer, integer, integer,
                       real, p, integer, p, integer, real, p, integer]
        fn.restype = None
    a = np.arange(12.0).reshape(3, 4)
    b = np.arange(8.0).reshape(2, 4).T - 3.0  # (columns contiguous: read transposed)
    for dtype, fn in fns.items():
        c = np.ones((3, 2), dtype)
        _gemm(fn, 2.0, a.astype(dtype), b.astype(dtype).T.copy().T, 1.0, c)
        if not np.array_equal(c, 2.0 * (a @ b) + 1.0):
            return {}
    return {("gemm", dtype): fn for dtype, fn in fns.items()}


def _find() -> tuple[dict[np.dtype, Any], int] | None:
    """The axpy functions by dtype and the longest vector they take: MKL's where products go
    through MKL (`mkl.library`), else the loaded OpenBLAS's; None where there is neither."""
    lib = mkl.library()
    if lib is not None:
        return _bind(lib, _MKL_NAMES)
    for info in threadpool_info():
        if info.get("internal_api") != "openblas":
            continue
        try:
            bound = _bind(ctypes.CDLL(info["filepath"]), _NAMES)
        except OSError:
            continue
        if bound is not None:
            return bound
    return None


def _works(routine: str, functions: dict[np.dtype, Any]) -> bool:
    """Whether each `routine` function computes `y = 2 x + y` (`axpby` with beta 1) on a
    short vector."""
    for dtype, fn in functions.items():
        x = np.arange(1, 6, dtype=dtype)
        y = np.full(5, 0.5, dtype=dtype)
        beta = (1.0,) if routine == "axpby" else ()
        fn(5, 2.0, native.address(x), 1, *beta, native.address(y), 1)
        if not np.array_equal(y, 2 * np.arange(1, 6, dtype=dtype) + 0.5):
            return False
    return True


def _after_fork() -> None:
    _bound.clear()  # found again: a forked child leaves MKL (see `mkl`), whose handler ran first


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _functions() -> tuple[dict[tuple[str, np.dtype], Any], int] | None:
    if not _bound:
        with _lock:
            if not _bound:
                _bound.append(_find())
    return _bound[0]


def available() -> bool:
    """Whether `axpy` calls a BLAS (else it always returns False)."""
    return _functions() is not None


def _function(routine: str, x: np.ndarray, y: np.ndarray) -> Any:
    """The BLAS `routine` for `x` and `y`, None where there is none or where it cannot compute
    in place: `x` and `y` C-contiguous float32 or float64 arrays of one size and dtype, `y`
    writeable and not overlapping `x`."""
    bound = _functions()
    fn = None if bound is None or x.size > bound[1] else bound[0].get((routine, x.dtype))
    if (fn is None or y.dtype != x.dtype or y.size != x.size or not x.flags.c_contiguous
            or not y.flags.c_contiguous or not y.flags.writeable
            or np.may_share_memory(x, y)):
        return None
    return fn


def axpy(alpha: float, x: np.ndarray, y: np.ndarray) -> bool:
    """`y += alpha * x` in place through the BLAS, for C-contiguous float32 or float64 `x` and
    a writeable C-contiguous `y` of the same size and dtype that does not overlap `x`; False
    (with `y` untouched) where it cannot.

    Example:
        >>> import numpy as np
        >>> from nuvec.backends.numpy.blas import axpy
        >>> y = np.ones(3, np.float32)
        >>> done = axpy(2.0, np.arange(3, dtype=np.float32), y)
        >>> y.tolist() if done else [1.0, 3.0, 5.0]
        [1.0, 3.0, 5.0]
    """
    fn = _function("axpy", x, y)
    if fn is None:
        return False
    if x.size:
        fn(x.size, alpha, native.address(x), 1, native.address(y), 1)
    return True


def axpby(alpha: float, x: np.ndarray, beta: float, y: np.ndarray) -> bool:
    """`y = alpha * x + beta * y` in place through the BLAS, on the arrays `axpy` takes; False
    (with `y` untouched) where it cannot.

    Example:
        >>> import numpy as np
        >>> from nuvec.backends.numpy.blas import axpby
        >>> y = np.ones(3, np.float32)
        >>> done = axpby(1.0, np.arange(3, dtype=np.float32), -2.0, y)
        >>> y.tolist() if done else [-2.0, -1.0, 0.0]
        [-2.0, -1.0, 0.0]
    """
    fn = _function("axpby", x, y)
    if fn is None:
        return False
    if x.size:
        fn(x.size, alpha, native.address(x), 1, beta, native.address(y), 1)
    return True


def _gemm(fn: Any, alpha: float, a: np.ndarray, b: np.ndarray, beta: float,
          c: np.ndarray) -> bool:
    la, lb = mkl.layout(a), mkl.layout(b)
    if la is None or lb is None:
        return False
    m, k = a.shape
    fn(_ROW_MAJOR, la[0], lb[0], m, b.shape[1], k, alpha, native.address(a), max(1, la[1]),
       native.address(b), max(1, lb[1]), beta, native.address(c), max(1, b.shape[1]))
    return True


def gemm(alpha: float, a: np.ndarray, b: np.ndarray, beta: float, c: np.ndarray) -> bool:
    """`c = alpha * (a @ b) + beta * c` in place through the BLAS, for 2-D float32 or float64
    `a` and `b` whose rows or columns are contiguous and a writeable C-contiguous `c` of the
    product's shape, all of one dtype, `c` overlapping neither; False (with `c` untouched)
    where it cannot. The sums run in the BLAS's order, as NumPy's `matmul` of these operands
    does, and `c` is added into them as the library blocks the product: the result may differ
    from `beta * c + alpha * (a @ b)` in the last bits.

    Example:
        >>> import numpy as np
        >>> from nuvec.backends.numpy.blas import gemm
        >>> c = np.ones((2, 2), np.float32)
        >>> a = np.arange(4, dtype=np.float32).reshape(2, 2)
        >>> done = gemm(-1.0, a, a.T, 1.0, c)
        >>> c.tolist() if done else [[0.0, -2.0], [-2.0, -12.0]]
        [[0.0, -2.0], [-2.0, -12.0]]
    """
    bound = _functions()
    fn = None if bound is None else bound[0].get(("gemm", a.dtype))
    if (fn is None or a.ndim != 2 or b.ndim != 2 or not a.dtype == b.dtype == c.dtype
            or c.shape != (a.shape[0], b.shape[1]) or a.shape[1] != b.shape[0]
            or max(*a.shape, b.shape[1]) > bound[1] or not c.flags.c_contiguous
            or not c.flags.writeable or np.may_share_memory(a, c)
            or np.may_share_memory(b, c)):
        return False
    if c.size == 0:
        return True
    if a.shape[1] == 0:  # (no sums: BLAS leaves such a `c` alone)
        c *= beta
        return True
    return _gemm(fn, alpha, a, b, beta, c)
