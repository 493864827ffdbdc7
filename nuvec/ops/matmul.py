"""Matrix products: matmul (NumPy batching and 1-D rules) and addmm."""

from __future__ import annotations

__all__: list[str] = []
