"""Shared bodies of `nuvec.ops.scan`: ufunc accumulations, reversed and shifted views."""

from __future__ import annotations

import numpy as np

from nuvec.backends.common.registry import body
from nuvec.ops import scan as sc

_UFUNCS = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum",
           "logaddexp": "logaddexp"}


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
        result = ufunc.accumulate(source, axis=axis, dtype=work)
    else:
        result = xp.empty(x.shape, work)
        head = [slice(None)] * x.ndim
        head[axis] = slice(0, 1)
        rest = list(head)
        rest[axis] = slice(1, None)
        result[tuple(head)] = _identity(p.kind, np.dtype(work))
        body = list(head)
        body[axis] = slice(0, -1)
        ufunc.accumulate(source[tuple(body)], axis=axis, dtype=work, out=result[tuple(rest)])
    return xp.flip(result, axis) if p.reverse else result
