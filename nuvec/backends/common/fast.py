"""Shared bodies of `nuvec.fast`'s row-wise fused ops, written against `xp` (the fused ops
without one compute through their fallback graph: `nuvec/backends/numpy/fast.py`).

On NumPy `exp` goes through `nuvec.backends.vector_math` (MKL's vector math where the `mkl`
extra is installed), told the size of the whole input so that every block takes its path.

Half types compute in float32, float64 in float64; the evaluator casts results to the
node's dtypes and runs every kernel under `xp.errstate(all="ignore")` (an infinite row maximum
makes `x - max` NaN, which `_lse_rows` replaces by that maximum), so kernels open no error state.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

from nuvec.backends import vector_math
from nuvec.backends.common.registry import body
from nuvec.backends.threads import parallel_rows
from nuvec.fast.cross_entropy import CrossEntropy, CrossEntropyVjp
from nuvec.fast.norms import AddRmsNorm, LayerNorm, LayerNormVjp, RmsNorm, RmsNormVjp
from nuvec.fast.rope import Rope
from nuvec.fast.softmax import LogSumExp, Softmax


def _wide(x: Any) -> Any:
    return x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)


def _row_dot(xp, a: Any, b: Any) -> Any:
    """`sum(a * b, -1, keepdims=True)` without a temporary of `a`'s size."""
    return xp.einsum("...i,...i->...", a, b)[..., None]


def _inv_rms(xp, xf: Any, eps: float) -> Any:
    ms = _row_dot(xp, xf, xf)
    ms /= xf.shape[-1]
    ms += eps
    return 1.0 / xp.sqrt(ms, out=ms)


def _row_mean(xb: Any) -> Any:
    """`xb.mean(-1, keepdims=True)` of float32/float64 rows, the same bits without `mean`'s
    Python-level steps."""
    m = xb.sum(axis=-1, keepdims=True)
    m /= xb.shape[-1]
    return m


def _as(p: Any, like: Any) -> Any:
    return p.astype(like.dtype, copy=False)


# Row-wise kernels work through blocks of rows small enough that a block and its temporaries
# stay in cache, so each pass over a block reads cache rather than memory, and large enough
# that the few NumPy calls per block (each taking the GIL) do not keep two threads waiting on
# each other. 256K elements (1 MiB of float32): on a two-core Xeon (2 MiB of L2 a core) the
# bench_peers norms, softmax, logsumexp, cross_entropy and rope took 0.67-0.82 of their time
# with 64K-element blocks; 128K and 512K were within 10 % of 256K, 1M slower.
_BLOCK = 1 << 18


def _row_blocks(start: int, stop: int, row_size: int):
    step = max(1, _BLOCK // max(row_size, 1))
    return (slice(i, min(stop, i + step)) for i in range(start, stop, step))


def _each_rows(xp, n_rows: int, row_bytes: int, chunk: Any) -> None:
    """`chunk(start, stop)` over rows `[0, n_rows)`: split over the CPU's thread pool for NumPy
    (each chunk writes its own rows, so results do not depend on the split); CuPy keeps its
    current stream per thread, so a GPU body runs on its own thread."""
    if xp is np:
        parallel_rows(n_rows, chunk, row_bytes=row_bytes)
    else:
        chunk(0, n_rows)


def _each_block(xp, x2: Any, out: Any, block: Any) -> None:
    """`block(rows)` over cache-sized blocks of the rows of `x2` (`[rows, D]`), split over
    threads; `out` is the float output whose itemsize counts the work."""
    d = x2.shape[-1]
    if x2.shape[0] and x2.size <= _BLOCK:  # one block, as the split would run it
        block(slice(0, x2.shape[0]))
        return

    def chunk(start: int, stop: int) -> None:
        for rows in _row_blocks(start, stop, d):
            block(rows)

    _each_rows(xp, x2.shape[0], d * out.itemsize, chunk)


def _rows(xp, x: Any) -> tuple[Any, Any]:
    """`x` as `[rows, D]` and an empty output of that shape (float32 for half types)."""
    x2 = x.reshape(-1, x.shape[-1])
    return x2, xp.empty(x2.shape, np.float64 if x.dtype == np.float64 else np.float32)


@body(RmsNorm)
def rms_norm(xp, p, x, w):
    x2, out = _rows(xp, x)
    wf = _as(w, out) if w.ndim else None

    def block(rows):
        xb, ob = _wide(x2[rows]), out[rows]
        xp.multiply(xb, _inv_rms(xp, xb, p.eps), out=ob)
        if wf is not None:
            ob *= wf

    _each_block(xp, x2, out, block)
    return out.reshape(x.shape)


@body(AddRmsNorm)
def add_rms_norm(xp, p, x, r, w):
    h = x + r
    return h, rms_norm(xp, p, h, w)


def _norm_vjp(xp, x: Any, w: Any, g: Any, grad_rows: Any) -> tuple[Any, Any, Any]:
    """A norm's `dx` and `dw` by blocks of rows: `grad_rows(xb, gb, ob, wf)` writes the rows
    of `dx` into `ob` and returns the normalized rows, whose products with `g` summed over the
    rows (in order, after the split) give `dw`. Also returns `g` as rows."""
    x2, dx = _rows(xp, x)
    g2 = g.reshape(x2.shape)
    wf = _as(w, dx)
    partial = None if w.ndim == 0 else xp.empty_like(dx)  # rows of dw, summed afterwards

    def block(rows):
        gb = _wide(g2[rows])
        normalized = grad_rows(_wide(x2[rows]), gb, dx[rows], wf)
        if partial is not None:
            xp.multiply(gb, normalized, out=partial[rows])

    _each_block(xp, x2, dx, block)
    dw = xp.zeros((), dx.dtype) if partial is None else partial.sum(axis=0)
    return dx.reshape(x.shape), dw, g2


@body(RmsNormVjp)
def rms_norm_vjp(xp, p, x, w, g):
    d = x.shape[-1]

    def grad_rows(xb, gb, ob, wf):
        n = _inv_rms(xp, xb, p.eps)
        xp.multiply(gb, wf, out=ob)  # g * w
        t = _row_dot(xp, ob, xb) / d
        ob *= n
        ob -= xb * (t * n**3)
        return xb * n

    dx, dw, _ = _norm_vjp(xp, x, w, g, grad_rows)
    return dx, dw


@body(LayerNorm)
def layer_norm(xp, p, x, w, b):
    x2, out = _rows(xp, x)
    wf = _as(w, out) if w.ndim else None
    bf = _as(b, out) if b.ndim else None
    d = x2.shape[-1]

    def block(rows):
        xb, ob = _wide(x2[rows]), out[rows]
        xp.subtract(xb, _row_mean(xb), out=ob)
        var = _row_dot(xp, ob, ob)
        var /= d
        var += p.eps
        ob *= 1.0 / xp.sqrt(var, out=var)
        if wf is not None:
            ob *= wf
        if bf is not None:
            ob += bf

    _each_block(xp, x2, out, block)
    return out.reshape(x.shape)


@body(LayerNormVjp)
def layer_norm_vjp(xp, p, x, w, b, g):
    d = x.shape[-1]

    def grad_rows(xb, gb, ob, wf):
        xc = xb - _row_mean(xb)
        var = _row_dot(xp, xc, xc)
        var /= d
        var += p.eps
        n = 1.0 / xp.sqrt(var, out=var)
        wg = gb * wf
        mwgxc = _row_dot(xp, wg, xc) / d
        xp.subtract(wg, _row_mean(wg), out=ob)
        ob *= n
        ob -= xc * (mwgxc * n**3)
        return xp.multiply(xc, n, out=xc)

    dx, dw, g2 = _norm_vjp(xp, x, w, g, grad_rows)
    db = xp.zeros((), dx.dtype) if b.ndim == 0 else _wide(g2).sum(axis=0)
    return dx, dw, db


# Rows shorter than this take their maximum from a transposed copy: NumPy's reduction along a
# short last axis runs its inner loop once per row (12 us for [256, 10] against 3 us).
_SHORT_ROW = 64


def _row_max(xp, xb: Any) -> Any:
    """`xb.max(axis=-1, keepdims=True)` of float32/float64 rows (the same values: a maximum
    does not depend on the order its entries are compared in)."""
    if xp is np and xb.ndim and xb.shape[-1] < _SHORT_ROW:
        columns = np.ascontiguousarray(xb.reshape(-1, xb.shape[-1]).T)
        return np.maximum.reduce(columns, axis=0).reshape(*xb.shape[:-1], 1)
    return xb.max(axis=-1, keepdims=True)


def _exp_shifted(xp, xb: Any, eb: Any, whole: int) -> Any:
    """Writes `exp(x - max)` of the rows `xb` into `eb`; returns the max (kept)."""
    m = _row_max(xp, xb)
    xp.subtract(xb, m, out=eb)
    vector_math.exp_of(xp, eb, eb, whole=whole)
    return m


def _exp_rows(xp, xb: Any, eb: Any, whole: int) -> tuple[Any, Any]:
    """Writes `exp(x - shift)` of the rows `xb` (`[rows, D]`) into `eb`; returns the row sums
    of `eb` and the shifts (both kept; shifts None where no row is shifted).

    On NumPy a row is first taken unshifted: when the sum of its `exp(x)` is at least 1 and
    finite, no term overflowed and terms that underflow are under the result's own rounding,
    so the row's results are the shifted formula's to within rounding (each `exp` of `x` as
    it is, where the shifted formula first rounds `x - max`). That skips the maximum's and the
    subtraction's passes over the block (softmax: a sixth of its time; docs/performance.md).
    Other rows (an overflow, a NaN, rows of very negative logits) are shifted by their
    maximum, as on other backends. A row's result depends on that row alone, never on the
    block or the thread split it came in."""
    if xp is not np or not xb.size:
        m = _exp_shifted(xp, xb, eb, whole)
        return eb.sum(axis=-1, keepdims=True), m
    sums = np.empty((xb.shape[0], 1), eb.dtype)
    if not vector_math.exp_rows(xb, eb, sums, whole=whole):  # (the C pass: `exp` and sums)
        vector_math.exp(xb, eb, whole=whole)
        sums = eb.sum(axis=-1, keepdims=True)
    if sums.min() >= 1 and sums.max() < np.inf:  # False where a sum is NaN
        return sums, None
    shifted = ~((sums >= 1) & (sums < np.inf))[:, 0]
    rows = xb[shifted]
    e = np.empty_like(rows)
    m = _exp_shifted(np, rows, e, whole)
    eb[shifted] = e
    sums[shifted] = e.sum(axis=-1, keepdims=True)
    shifts = np.zeros_like(sums)
    shifts[shifted] = m
    return sums, shifts


def _lse_rows(xp, xb: Any, eb: Any, whole: int) -> Any:
    """`log(sum(exp(x)))` of the rows `xb` (`[rows, D]`, kept), `eb` their scratch; infinite
    maxima pass through."""
    sums, shifts = _exp_rows(xp, xb, eb, whole)
    out = xp.log(sums)
    if shifts is None:
        return out
    out += shifts
    return xp.where(xp.isinf(shifts), shifts, out)


@body(Softmax)
def softmax_kernel(xp, p, x):
    x2, out = _rows(xp, x)

    def block(rows):
        ob = out[rows]
        sums, _ = _exp_rows(xp, _wide(x2[rows]), ob, x2.size)
        inv = 1.0 / sums
        if xp is not np or not vector_math.scale_rows(ob, inv):  # (C: no broadcast loop)
            ob *= inv

    _each_block(xp, x2, out, block)
    return out.reshape(x.shape)


def _lse(xp, x: Any) -> Any:
    """`log(sum(exp(x)))` over the last axis, kept as size 1; infinite maxima pass through."""
    x2 = x.reshape(-1, x.shape[-1])
    if x.size <= _BLOCK:  # one block: the rows at once (no thread split, no block loop)
        xb = _wide(x2)
        return _lse_rows(xp, xb, xp.empty_like(xb), x2.size).reshape(*x.shape[:-1], 1)
    dtype = np.float64 if x.dtype == np.float64 else np.float32
    out = xp.empty((x2.shape[0], 1), dtype)
    d = x2.shape[-1]

    def chunk(start: int, stop: int) -> None:
        scratch = None
        for rows in _row_blocks(start, stop, d):
            xb = _wide(x2[rows])
            if scratch is None:
                scratch = xp.empty_like(xb)
            out[rows] = _lse_rows(xp, xb, scratch[: xb.shape[0]], x2.size)

    _each_rows(xp, x2.shape[0], d * out.itemsize, chunk)
    return out.reshape(*x.shape[:-1], 1)


@body(LogSumExp)
def logsumexp(xp, p, x):
    return _lse(xp, x)


class _AngleTables:
    """Rope's angle tables on the CPU (`_angles`), kept per parameters and positions: a
    model's layers (and the queries and keys of each) rotate by the same tables, whose
    cosines, sines and concatenations took 0.3 ms of rope's 1.9 over `[1, 32, 512, 128]` on a
    two-core machine. The tables are read-only; the oldest go past `LIMIT` bytes or `ENTRIES`
    tables (a decoder's one position a step makes a small table a step)."""

    LIMIT = 1 << 26
    ENTRIES = 1024

    def __init__(self) -> None:
        self.tables: dict[tuple, tuple[Any, Any]] = {}
        self.nbytes = 0
        self.lock = threading.Lock()

    def get(self, xp, p, x: Any, offset: Any, freqs: tuple) -> tuple[Any, Any]:
        """`_angles(xp, p, x, offset, freqs)`, kept when `xp` is NumPy."""
        if xp is not np:
            return _angles(xp, p, x, offset, freqs)
        key = (x.shape[-2], x.dtype == np.float64, p.dims, p.base, p.scale, p.traditional,
               p.forward, *((a.dtype.str, a.shape, a.tobytes()) for a in (offset, *freqs)))
        found = self.tables.get(key)
        if found is not None:
            return found
        c, s = _angles(np, p, x, offset, freqs)
        size = c.nbytes + s.nbytes
        if size <= self.LIMIT:
            c.flags.writeable = s.flags.writeable = False
            with self.lock:
                while self.tables and (self.nbytes + size > self.LIMIT
                                       or len(self.tables) >= self.ENTRIES):
                    old_c, old_s = self.tables.pop(next(iter(self.tables)))
                    self.nbytes -= old_c.nbytes + old_s.nbytes
                if key not in self.tables:
                    self.tables[key] = c, s
                    self.nbytes += size
        return c, s


_angle_tables = _AngleTables()


def angle_tables(xp, p, x: Any, offset: Any, freqs: tuple) -> tuple[Any, Any]:
    """Rope's cosine and sine tables for `x` (see `_angles`), kept between calls (CPU)."""
    return _angle_tables.get(xp, p, x, offset, freqs)


def _angles(xp, p, x: Any, offset: Any, freqs: tuple) -> tuple[Any, Any]:
    """Rope's cosines and sines (negated for the inverse rotation): `[T, dims / 2]`, or
    `[B, 1, T, dims / 2]` for one offset per batch entry. For the halves layout they come as
    `C = [c, c]` and `S = [s, -s]` over `dims`, so that a rotation is `x C + swap(x S)`."""
    t, half = x.shape[-2], p.dims // 2
    ang = np.float64 if x.dtype == np.float64 else np.float32
    off = offset.astype(ang).reshape((-1, 1, 1) if offset.size > 1 else ())
    positions = (xp.arange(t, dtype=ang) + off) * ang(p.scale)
    if freqs:
        inv = 1.0 / freqs[0].astype(ang)
    else:
        inv = xp.exp(xp.arange(0, -half, -1, dtype=ang) * ang(math.log(p.base) / half))
    theta = positions[..., None] * inv
    c, s = xp.cos(theta), xp.sin(theta)
    if not p.forward:
        s = -s
    if p.traditional:
        return c, s
    return xp.concatenate([c, c], -1), xp.concatenate([s, -s], -1)


def _rotate(xp, p, xb: Any, ob: Any, c: Any, s: Any) -> None:
    """Writes the rotation of the heads `xb` (`[..., T, D]`) into `ob` (contiguous): per pair
    `(x1 c - x2 s, x1 s + x2 c)`; for the halves layout as `(x1 c + x2 (-s), x2 c + x1 s)`,
    the same bits in two contiguous products and one sum."""
    dims, half = p.dims, p.dims // 2
    if p.traditional:  # pairs are neighbours: strided products, as a swap would be 2 wide
        x1, x2 = xb[..., 0:dims:2], xb[..., 1:dims:2]
        o1, o2 = ob[..., 0:dims:2], ob[..., 1:dims:2]
        tmp = xp.empty(x1.shape, ob.dtype)
        xp.multiply(x1, c, out=o1)
        o1 -= xp.multiply(x2, s, out=tmp)
        xp.multiply(x1, s, out=o2)
        o2 += xp.multiply(x2, c, out=tmp)
    else:
        whole = dims == xb.shape[-1]
        xr = xb[..., :dims]
        y = xp.multiply(xr, s).reshape(*xr.shape[:-1], 2, half)
        rotated = xp.multiply(xr, c, out=ob if whole else None)
        view = rotated.reshape(y.shape)  # a view: `rotated` is contiguous
        view += y[..., ::-1, :]
        if not whole:
            ob[..., :dims] = rotated
    if dims < xb.shape[-1]:
        ob[..., dims:] = xb[..., dims:]


@body(Rope)
def rope_kernel(xp, p, x, offset, *freqs):
    shape = x.shape
    t, d = shape[-2], shape[-1]
    xv = x.reshape(shape[0], -1, t, d)
    batch, heads = xv.shape[:2]
    c, s = angle_tables(xp, p, x, offset, freqs)
    per_batch = c.ndim == 4
    out = xp.empty(xv.shape, c.dtype)
    if out.size == 0:
        return out.reshape(shape)
    step = max(1, _BLOCK // (t * d))

    def chunk(start: int, stop: int) -> None:  # units `b * heads + h`
        u = start
        while u < stop:
            b, h = divmod(u, heads)
            if h == 0 and not per_batch and stop - u >= heads:  # whole batches in one block
                nb = max(1, min(step // heads, (stop - u) // heads))
                _rotate(xp, p, _wide(xv[b:b + nb]), out[b:b + nb], c, s)
                u += nb * heads
                continue
            e = min(heads, h + step, stop - b * heads)
            cb, sb = (c[b], s[b]) if per_batch else (c, s)
            _rotate(xp, p, _wide(xv[b, h:e]), out[b, h:e], cb, sb)
            u = b * heads + e

    _each_rows(xp, batch * heads, t * d * out.itemsize, chunk)
    return out.reshape(shape)


def _targets(xp, x: Any, targets: Any) -> tuple[Any, Any]:
    """Wrapped class indices (0 where out of range) and whether each was in range (a target
    out of range gives a NaN loss and gradient row). Targets are int32 (`cross_entropy` casts
    them): seen as uint32, a wrapped index still negative is out of range too."""
    classes = x.shape[-1]
    y = targets + (targets < 0) * np.int32(classes)
    hit = y.view(np.uint32) < classes
    return xp.where(hit, y, 0), hit


def _small_rows(xp, x: Any, targets: Any) -> bool:
    """Whether the CPU computes these rows at once with the targets as they are: logits of one
    block (`_BLOCK` elements) whose targets all lie in `[0, classes)` (seen as uint32, a
    negative target is past the classes). Then no wrapping, no masks and no flat positions:
    few NumPy calls, as small rows (a classifier's logits) cost in calls, not in data."""
    return (xp is np and 0 < x.size <= _BLOCK
            and targets.view(np.uint32).max() < x.shape[-1])


def _picked(xp, x2: Any, y: Any) -> Any:
    """`x2[i, y[i]]` of each row of `x2` (`[rows, C]`, `y` of `rows` valid indices)."""
    return x2.reshape(-1)[_flat_at(xp, x2, y)]


def _flat_at(xp, x2: Any, y: Any) -> Any:
    """The flat positions in `x2` (`[rows, C]`) of each row's entry `y[i]`."""
    return xp.arange(y.size) * x2.shape[-1] + y.reshape(-1)


@body(CrossEntropy)
def cross_entropy(xp, p, x, targets):
    x2 = x.reshape(-1, x.shape[-1])
    if _small_rows(xp, x, targets):  # the targets as they are: no wrapping, no masks
        score = _wide(_picked(xp, x2, targets))
    else:
        y, hit = _targets(xp, x, targets)
        score = xp.where(hit.reshape(-1), _wide(_picked(xp, x2, y)), np.nan)
    return (_lse(xp, x2)[:, 0] - score).reshape(targets.shape)


@body(CrossEntropyVjp)
def cross_entropy_vjp(xp, p, x, targets, loss, g):
    x2, grad = _rows(xp, x)
    g2 = g.reshape(-1, 1).astype(grad.dtype)
    if _small_rows(xp, x, targets):  # the targets as they are: no wrapping, no masks
        y2, hit2 = targets.reshape(-1), 1
        score = _wide(_picked(xp, x2, y2))
    else:
        y, hit = _targets(xp, x, targets)
        y2, hit2 = y.reshape(-1), hit.reshape(-1)
        score = xp.where(hit2, _wide(_picked(xp, x2, y2)), np.nan)
    lse = (loss.reshape(-1).astype(grad.dtype) + score).reshape(-1, 1)
    if x2.size <= _BLOCK:  # one block: the rows at once, the targets' entries by flat index
        xp.subtract(_wide(x2), lse, out=grad)
        vector_math.exp_of(xp, grad, grad, whole=x2.size)
        flat = grad.reshape(-1)
        flat[_flat_at(xp, x2, y2)] -= hit2
        grad *= g2
        return grad.reshape(x.shape)
    y2, hit2 = y2.reshape(-1, 1), hit2.reshape(-1, 1)

    def block(rows):
        gb = grad[rows]
        xp.subtract(_wide(x2[rows]), lse[rows], out=gb)
        vector_math.exp_of(xp, gb, gb, whole=x2.size)
        picked = xp.take_along_axis(gb, y2[rows], -1)
        xp.put_along_axis(gb, y2[rows], picked - hit2[rows], -1)
        gb *= g2[rows]

    _each_block(xp, x2, grad, block)
    return grad.reshape(x.shape)
