"""CPU kernels of `nuvec.ops.sorting`."""

from __future__ import annotations
