"""Small helpers the layers share (argument normalization)."""

from __future__ import annotations

from typing import Any


def ntuple(value: Any, n: int, name: str) -> tuple[int, ...]:
    """`value` as a tuple of `n` ints (an int is repeated)."""
    if isinstance(value, int):
        return (value,) * n
    value = tuple(value)
    if len(value) != n:
        raise ValueError(f"{name}: expected an int or {n} values, got {value}")
    return value
