"""Counter-based random numbers: keys, split, and the samplers of nuvec.random."""

from __future__ import annotations

__all__: list[str] = []
