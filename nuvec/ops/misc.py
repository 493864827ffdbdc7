"""The rest of MLX's array surface: as_strided, hadamard_transform, window functions."""

from __future__ import annotations

__all__: list[str] = []
