"""Shared bodies of `nuvec.ops.shape` (views where NumPy gives them; data is never mutated)."""

from __future__ import annotations

from nuvec.backends.common.registry import body
from nuvec.ops import shape as sh


@body(sh.Reshape)
def reshape(xp, p, x):
    return x.reshape(p.shape)


@body(sh.Transpose)
def transpose(xp, p, x):
    return x.transpose(p.axes)


@body(sh.Contiguous)
def contiguous(xp, p, x):
    if x.flags.c_contiguous or (p.allow_col_major and x.flags.f_contiguous):
        return x.view()  # a view, so the memory figures count no second buffer
    return xp.ascontiguousarray(x)


@body(sh.BroadcastTo)
def broadcast_to(xp, p, x):
    return xp.broadcast_to(x, p.shape)
