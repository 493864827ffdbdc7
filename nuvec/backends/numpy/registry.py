"""The CPU kernel table and the decorator that fills it."""

from __future__ import annotations

from typing import Any, Callable

kernels: dict[type, Callable[..., Any]] = {}


def kernel(*primitive_classes: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers the decorated function as the CPU kernel of each primitive class."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for cls in primitive_classes:
            if cls in kernels:
                raise RuntimeError(f"two CPU kernels registered for {cls.__name__}")
            kernels[cls] = fn
        return fn

    return register
