"""CPU kernels of `nuvec.ops.fft`."""

from __future__ import annotations
