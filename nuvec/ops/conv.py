"""Convolutions in MLX's channels-last layout, and their transposed forms."""

from __future__ import annotations

__all__: list[str] = []
