"""Discrete Fourier transforms behind nuvec.fft."""

from __future__ import annotations

__all__: list[str] = []
