"""Shared bodies of `nuvec.ops.slicing`: strided views, copies with a window replaced, and
dynamic windows whose starts are clamped into range."""

from __future__ import annotations

import numpy as np

from nuvec.backends.common.registry import body
from nuvec.ops import slicing as sl


@body(sl.Slice)
def slice_(xp, p, x):
    return x[p.index()]


def _updated(xp, x, out):
    """The buffer a window update writes into: `x`'s own where the evaluator gives it up
    (`out is x`: nothing else sees it, so the rest is not copied), else a copy of `x`."""
    return out if out is x else xp.array(x, copy=True)


@body(sl.SliceUpdate, out=True)
def slice_update(xp, p, x, update, out=None):
    out = _updated(xp, x, out)
    out[p.index()] = update
    return out


def _starts(xp, x, start, axes, sizes):
    """Starts clamped to [0, dim - size] per axis (as int64; rows per batch entry if 2-D)."""
    limit = xp.array([x.shape[a] - n for a, n in zip(axes, sizes)], dtype=np.int64)
    return xp.clip(start.astype(np.int64), 0, limit)


def _window(xp, x, start, axes, sizes, batched: bool):
    """The index selecting the window: basic slices, or open fancy grids when batched."""
    starts = _starts(xp, x, start, axes, sizes)
    if not batched:
        index = [slice(None)] * x.ndim
        for a, n, s in zip(axes, sizes, starts.tolist()):
            index[a] = slice(s, s + n)
        return tuple(index)
    ndim = x.ndim
    index = []
    for a in range(ndim):
        shape = [1] * ndim
        if a == 0:
            shape[0] = x.shape[0]
            index.append(xp.arange(x.shape[0]).reshape(shape))
        elif a in axes:
            j = axes.index(a)
            shape[0], shape[a] = x.shape[0], sizes[j]
            index.append((starts[:, j, None] + xp.arange(sizes[j])).reshape(shape))
        else:
            shape[a] = x.shape[a]
            index.append(xp.arange(x.shape[a]).reshape(shape))
    return tuple(index)


@body(sl.DynamicSlice)
def dynamic_slice(xp, p, x, start):
    return x[_window(xp, x, start, p.axes, p.sizes, p.batched)]


@body(sl.DynamicSliceUpdate, out=True)
def dynamic_slice_update(xp, p, x, update, start, out=None):
    sizes = tuple(update.shape[a] for a in p.axes)
    window = _window(xp, x, start, p.axes, sizes, p.batched)
    out = _updated(xp, x, out)
    out[window] = update
    return out
