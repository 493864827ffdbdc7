"""CPU kernels of `nuvec.ops.matmul`."""

from __future__ import annotations
