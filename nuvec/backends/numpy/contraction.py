"""CPU kernels of `nuvec.ops.contraction`."""

from __future__ import annotations
