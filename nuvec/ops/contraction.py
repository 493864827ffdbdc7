"""Contractions: inner, outer, tensordot, vecdot, kron, einsum, einsum_path."""

from __future__ import annotations

__all__: list[str] = []
