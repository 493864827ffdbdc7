"""CPU kernels of `nuvec.ops.conv`."""

from __future__ import annotations
