"""Shared bodies of `nuvec.ops.rounding`: the rounding ufuncs, 16-bit floats computed in float32."""

from __future__ import annotations

from nuvec.backends.common.registry import SHARED
from nuvec.backends.common.unary import widened
from nuvec.ops import rounding as r

for _cls, _fn in (
    (r.Floor, "floor"), (r.Ceil, "ceil"), (r.Round, "rint"), (r.Trunc, "trunc"),
):  # fmt: skip
    SHARED.add_factory(_cls, widened(_fn), out=True)
