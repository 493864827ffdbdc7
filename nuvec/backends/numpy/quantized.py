"""CPU kernels of `nuvec.ops.quantized`."""

from __future__ import annotations
