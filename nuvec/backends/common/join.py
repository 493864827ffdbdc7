"""Shared bodies of `nuvec.ops.join`."""

from __future__ import annotations

from nuvec.backends.common.registry import body
from nuvec.ops import join as jn


@body(jn.Concatenate)
def concatenate(xp, p, *xs):
    return xp.concatenate(xs, axis=p.axis)
