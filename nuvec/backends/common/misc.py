"""Shared bodies of `nuvec.ops.misc`: strided views and the fast Walsh-Hadamard transform."""

from __future__ import annotations

import numpy as np

from nuvec.backends.common.registry import body
from nuvec.ops import misc as m


@body(m.AsStrided)
def as_strided(xp, p, x):
    # A contiguous copy makes the element strides well defined; the op checked the bounds.
    flat = xp.ascontiguousarray(x).reshape(-1)
    item = flat.itemsize
    if not flat.size:
        return xp.empty(p.shape, dtype=flat.dtype)
    base = flat[p.offset:]
    return xp.lib.stride_tricks.as_strided(
        base, shape=p.shape, strides=tuple(s * item for s in p.strides), writeable=False
    )


# Hadamard matrices of orders 12, 20 and 28 from N. J. A. Sloane's library of Hadamard
# matrices (neilsloane.com/hadamard), the ones MLX uses: row j, column k is "+" for +1.
_SLOANE = {
    12: """
+-++++++++++ --+-+-+-+-+- +++-++----++ +---+--+-++- +++++-++---- +-+---+--+-+
++--+++-++-- +--++---+--+ ++----+++-++ +--+-++---+- ++++----+++- +-+--+-++---
""",
    20: """
+----+----++--++-++- -+----+---+++---+-++ --+----+---+++-+-+-+ ---+----+---+++++-+-
----+----++--++-++-+ -+++++-----+--+++--+ +-+++-+---+-+--+++-- ++-++--+---+-+--+++-
+++-+---+---+-+--+++ ++++-----++--+-+--++ --++-+-++-+-----++++ ---++-+-++-+---+-+++
+---++-+-+--+--++-++ ++---++-+----+-+++-+ -++---++-+----+++++- -+--+--++-+----+----
+-+-----++-+----+--- -+-+-+---+--+----+-- --+-+++------+----+- +--+--++------+----+
""",
    28: """
+------++----++-+--+-+--++-- -+-----+++-----+-+--+-+--++- --+-----+++---+-+-+----+--++
---+-----+++---+-+-+-+--+--+ ----+-----+++---+-+-+++--+-- -----+-----++++--+-+--++--+-
------++----++-+--+-+--++--+ --++++-+-------++--+++-+--+- ---++++-+-----+-++--+-+-+--+
+---+++--+----++-++--+-+-+-- ++---++---+----++-++--+-+-+- +++---+----+----++-++--+-+-+
++++--------+-+--++-++--+-+- -++++--------+++--++--+--+-+ -+-++-++--++--+--------++++-
+-+-++--+--++--+--------++++ -+-+-++--+--++--+----+---+++ +-+-+-++--+--+---+---++---++
++-+-+-++--+------+--+++---+ -++-+-+-++--+------+-++++--- +-++-+---++--+------+-++++--
-++--++-+-++-+++----++------ +-++--++-+-++-+++-----+----- ++-++---+-+-++-+++-----+----
-++-++-+-+-+-+--+++-----+--- --++-++++-+-+----+++-----+-- +--++-+-++-+-+----+++-----+-
++--++-+-++-+-+----++------+
""",
}


def sloane_matrix(m: int) -> np.ndarray:
    """Sloane's Hadamard matrix of order `m` (12, 20 or 28) as a float64 array of +-1."""
    rows = _SLOANE[m].split()
    return np.array([[1.0 if c == "+" else -1.0 for c in row] for row in rows])


@body(m.Hadamard)
def hadamard(xp, p, x):
    work = np.float64 if x.dtype == np.float64 else np.float32
    size = x.shape[-1]
    factor = m.hadamard_factor(size)
    n = size // factor
    out = x.astype(work).reshape(-1, n)
    half = 1
    # One butterfly pass per bit: pairs (i, i + half) become (a + b, a - b).
    while half < n:
        pairs = out.reshape(out.shape[0], n // (2 * half), 2, half)
        first, second = pairs[:, :, 0, :], pairs[:, :, 1, :]
        out = xp.stack([first + second, first - second], axis=2).reshape(-1, n)
        half *= 2
    if factor > 1:
        h = xp.asarray(sloane_matrix(factor).astype(work))
        h = h.T if p.adjoint else h
        out = xp.matmul(h, out.reshape(-1, factor, n))
    return (out * work(p.scale)).reshape(x.shape)


@body(m.View)
def view(xp, p, x):
    return xp.ascontiguousarray(x).view(p.dtype.np)
