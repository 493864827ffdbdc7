"""CPU kernels of `nuvec.ops.scan`."""

from __future__ import annotations
