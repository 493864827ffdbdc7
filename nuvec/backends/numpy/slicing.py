"""CPU kernels of `nuvec.ops.slicing`: strided views, copies with a window replaced, and
dynamic windows whose starts are clamped into range."""

from __future__ import annotations

import numpy as np

from nuvec.backends.numpy.registry import kernel
from nuvec.ops import slicing as sl


@kernel(sl.Slice)
def slice_(p, x):
    return x[p.index()]


@kernel(sl.SliceUpdate)
def slice_update(p, x, update):
    out = np.array(x, copy=True)
    out[p.index()] = update
    return out


def _starts(x: np.ndarray, start: np.ndarray, axes, sizes) -> np.ndarray:
    """Starts clamped to [0, dim - size] per axis (as int64; rows per batch entry if 2-D)."""
    limit = np.array([x.shape[a] - n for a, n in zip(axes, sizes)], dtype=np.int64)
    return np.clip(start.astype(np.int64), 0, limit)


def _window(x: np.ndarray, start: np.ndarray, axes, sizes, batched: bool):
    """The index selecting the window: basic slices, or open fancy grids when batched."""
    starts = _starts(x, start, axes, sizes)
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
            index.append(np.arange(x.shape[0]).reshape(shape))
        elif a in axes:
            j = axes.index(a)
            shape[0], shape[a] = x.shape[0], sizes[j]
            index.append((starts[:, j, None] + np.arange(sizes[j])).reshape(shape))
        else:
            shape[a] = x.shape[a]
            index.append(np.arange(x.shape[a]).reshape(shape))
    return tuple(index)


@kernel(sl.DynamicSlice)
def dynamic_slice(p, x, start):
    return x[_window(x, start, p.axes, p.sizes, p.batched)]


@kernel(sl.DynamicSliceUpdate)
def dynamic_slice_update(p, x, update, start):
    sizes = tuple(update.shape[a] for a in p.axes)
    out = np.array(x, copy=True)
    out[_window(x, start, p.axes, sizes, p.batched)] = update
    return out
