"""CPU kernels of `RmsNorm`, `LayerNorm` and `RmsNormVjp` in C (`norms.c`, compiled on this
machine by `nuvec.backends.native`): each row read two or three times while it is in cache and
written once, its sums accumulated in double, the rows split over the thread pool (`ctypes`
releases the GIL). Rows of another dtype (half types), weights that are not one row of the
input's last axis, and machines without a compiler take the shared NumPy bodies
(`nuvec/backends/common/fast.py`), whose sums are NumPy's, so results may differ from those in
the last bits (both within the fused ops' float64-referenced tolerances). A row's result
depends on that row alone, so every thread count gives the same bits; `RmsNormVjp`'s weight
gradient is the rows' parts summed by NumPy in order.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any, Callable

import numpy as np

from nuvec.backends import native
from nuvec.backends.numpy.registry import table
from nuvec.backends.threads import parallel_rows
from nuvec.fast.norms import LayerNorm, RmsNorm, RmsNormVjp

__all__ = ["layer_norm", "rms_norm", "rms_norm_vjp"]

_SOURCE = Path(__file__).with_name("norms.c")
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


def _bind(lib: Any) -> dict[tuple[str, np.dtype], Any]:
    found = {}
    for dtype, suffix in _SUFFIX.items():
        for name, arrays, outs in (("layer_norm", 3, 1), ("rms_norm", 2, 1),
                                   ("rms_norm_vjp", 3, 2)):
            fn = getattr(lib, f"nuvec_{name}_{suffix}")
            fn.argtypes = ([ctypes.c_int64] * 2 + [ctypes.c_void_p] * arrays
                           + [ctypes.c_double] + [ctypes.c_void_p] * outs)
            fn.restype = None
            found[(name, dtype)] = fn
    return found


def _functions() -> dict[tuple[str, np.dtype], Any] | None:
    return native.bound(_SOURCE, _bind)


def _rows_in_c(name: str, p: Any, x: np.ndarray, weights: list[np.ndarray]) -> np.ndarray | None:
    """`name`'s C function over the rows of `x` with `weights` (each 0-d, meaning none, or one
    row of `x`'s last axis); None where it does not apply."""
    functions = _functions()
    fn = None if functions is None or x.ndim == 0 else functions.get((name, x.dtype))
    d = x.shape[-1] if x.ndim else 0
    if fn is None or d == 0 or any(w.ndim > 1 or (w.ndim == 1 and w.shape[0] != d)
                                   for w in weights):
        return None
    x2 = np.ascontiguousarray(x.reshape(-1, d))
    rows, itemsize = x2.shape[0], x.itemsize
    ws = [np.ascontiguousarray(w, dtype=x.dtype) if w.ndim else None for w in weights]
    out = np.empty_like(x2)
    base, target = native.address(x2), native.address(out)
    addresses = [native.address(w) for w in ws]

    def chunk(start: int, stop: int) -> None:
        offset = start * d * itemsize
        fn(stop - start, d, base + offset, *addresses, p.eps, target + offset)

    parallel_rows(rows, chunk, row_bytes=2 * d * itemsize)
    return out.reshape(x.shape)


def rms_norm_vjp(p: Any, x: np.ndarray, w: np.ndarray, g: np.ndarray) -> tuple[Any, Any]:
    """`RmsNormVjp`'s `dx` and `dw` with `norms.c` (each row's part of `dw` summed over the rows
    by NumPy, in order: the same sum for every thread count); the shared NumPy body where the
    C function does not apply."""
    functions = _functions()
    fn = None if functions is None or x.ndim == 0 else functions.get(("rms_norm_vjp", x.dtype))
    d = x.shape[-1] if x.ndim else 0
    if fn is None or d == 0 or g.shape != x.shape or w.ndim > 1 or (w.ndim and w.shape[0] != d):
        return _SHARED_RMS_NORM_VJP(p, x, w, g)
    x2 = np.ascontiguousarray(x.reshape(-1, d))
    g2 = np.ascontiguousarray(g.reshape(-1, d), dtype=x.dtype)
    wc = np.ascontiguousarray(w, dtype=x.dtype) if w.ndim else None
    rows, itemsize = x2.shape[0], x.itemsize
    dx = np.empty_like(x2)
    part = np.empty_like(x2) if wc is not None else None
    base, grads, target = native.address(x2), native.address(g2), native.address(dx)
    weight, parts = native.address(wc), native.address(part)

    def chunk(start: int, stop: int) -> None:
        offset = start * d * itemsize
        fn(stop - start, d, base + offset, weight, grads + offset, p.eps, target + offset,
           parts + offset if parts else None)

    parallel_rows(rows, chunk, row_bytes=3 * d * itemsize)
    dw = np.zeros((), x.dtype) if part is None else part.sum(axis=0)
    return dx.reshape(x.shape), dw


def _kernel(name: str, shared: Callable) -> Callable:
    def kernel(p, x, *weights):
        result = _rows_in_c(name, p, x, list(weights))
        return shared(p, x, *weights) if result is None else result

    kernel.__name__ = name
    return kernel


rms_norm = _kernel("rms_norm", table.kernels[RmsNorm])
layer_norm = _kernel("layer_norm", table.kernels[LayerNorm])
table.add(RmsNorm, rms_norm, replace=True)
table.add(LayerNorm, layer_norm, replace=True)
_SHARED_RMS_NORM_VJP = table.kernels[RmsNormVjp]
table.add(RmsNormVjp, rms_norm_vjp, replace=True)
