"""Scans along an axis: cumsum, cumprod, cummax, cummin, logcumsumexp."""

from __future__ import annotations

__all__: list[str] = []
