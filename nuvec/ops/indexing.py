"""Indexing and scatter: advanced __getitem__/__setitem__, take, take_along_axis, put_along_axis, the .at helper."""

from __future__ import annotations

__all__: list[str] = []
