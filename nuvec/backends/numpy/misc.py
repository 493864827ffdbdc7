"""CPU kernels of `nuvec.ops.misc`."""

from __future__ import annotations
