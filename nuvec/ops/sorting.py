"""Sorting and selection: sort, argsort, partition, argpartition, topk, searchsorted."""

from __future__ import annotations

__all__: list[str] = []
