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


@body(sh.BroadcastTo)
def broadcast_to(xp, p, x):
    return xp.broadcast_to(x, p.shape)
