"""CPU kernels of `nuvec.ops.linalg`."""

from __future__ import annotations
