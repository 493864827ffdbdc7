"""CPU kernels of `nuvec.ops.indexing`."""

from __future__ import annotations
