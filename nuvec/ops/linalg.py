"""Linear algebra primitives behind nuvec.linalg."""

from __future__ import annotations

__all__: list[str] = []
