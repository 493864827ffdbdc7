"""Shared bodies of `nuvec.ops.scan`: ufunc accumulations, reversed and shifted views."""

from __future__ import annotations

import math

import numpy as np

from nuvec.backends.common.registry import body
from nuvec.ops import scan as sc

_UFUNCS = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum",
           "logaddexp": "logaddexp"}

# Below this many elements after the scanned axis NumPy's `accumulate` is used; from it, one
# ufunc call per step along the axis. NumPy's accumulate over a leading axis walks each column
# down the axis (a cache miss an element): `cumsum` of float32 [512, 1024] along axis 0 took
# 3.3 ms against 1.0 by steps, [32, 512, 512] 155 against 14; [4096, 64] 1.0 against 3.4.
STEPPED_INNER = 512


def _identity(kind: str, dtype: np.dtype):
    """The value an exclusive scan starts from."""
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    if kind == "logaddexp":
        return -np.inf
    if dtype.kind == "b":
        return kind == "min"
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if kind == "max" else info.max
    return -np.inf if kind == "max" else np.inf


@body(sc.Scan)
def scan(xp, p, x):
    out_dtype = np.dtype(np.int32) if p.kind == "sum" and x.dtype == np.bool_ else x.dtype
    # Half types accumulate in float32 (the evaluator casts back).
    work = np.float32 if x.dtype.itemsize == 2 and x.dtype.kind in "fV" else out_dtype
    axis = p.axis
    source = xp.flip(x, axis) if p.reverse else x
    ufunc = getattr(xp, _UFUNCS[p.kind])
    if x.shape[axis] == 0:
        return xp.zeros(x.shape, work)
    if p.inclusive:
        result = _accumulate(xp, ufunc, source, axis, work, xp.empty(x.shape, work))
    else:
        result = xp.empty(x.shape, work)
        head = [slice(None)] * x.ndim
        head[axis] = slice(0, 1)
        rest = list(head)
        rest[axis] = slice(1, None)
        result[tuple(head)] = _identity(p.kind, np.dtype(work))
        body = list(head)
        body[axis] = slice(0, -1)
        _accumulate(xp, ufunc, source[tuple(body)], axis, work, result[tuple(rest)])
    return xp.flip(result, axis) if p.reverse else result


def _accumulate(xp, ufunc, source, axis: int, work, out):
    """`ufunc.accumulate(source, axis, out=out)` in `work`: on the CPU, step by step along the
    axis where the elements after it are many (each step one ufunc call over a contiguous
    block, the same operations in the same order, so the same bits)."""
    if (xp is not np or source.shape[axis] == 0
            or math.prod(source.shape[axis + 1:]) < STEPPED_INNER):
        return ufunc.accumulate(source, axis=axis, dtype=work, out=out)
    steps, into = np.moveaxis(source, axis, 0), np.moveaxis(out, axis, 0)
    into[0] = steps[0]
    for i in range(1, steps.shape[0]):
        ufunc(into[i - 1], steps[i], out=into[i], dtype=work)
    return out
