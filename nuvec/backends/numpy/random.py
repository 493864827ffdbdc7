"""CPU kernels of `nuvec.ops.random`."""

from __future__ import annotations
