"""MLX's `mx.metal`, for code written for Apple GPUs: Metal never exists under nuvec.

`is_available()` is False. The other functions are harmless: the memory ones forward to
nuvec's top-level memory functions (as MLX's deprecated `mx.metal` aliases do), the capture
ones do nothing. MLX code and tests call these at import time.
"""

from __future__ import annotations

from typing import Any

from nuvec.graph import memory


def is_available() -> bool:
    """Whether a Metal GPU is available: never under nuvec.

    Example:
        >>> import nuvec as mx
        >>> mx.metal.is_available()
        False
    """
    return False


def device_info() -> dict[str, Any]:
    """Metal device facts: there is no Metal device, so an empty dict.

    Example:
        >>> import nuvec as mx
        >>> mx.metal.device_info()
        {}
    """
    return {}


def start_capture(path: str) -> None:
    """Does nothing: GPU captures are a Metal (Xcode) feature.

    Example:
        >>> import nuvec as mx
        >>> mx.metal.start_capture("trace.gputrace")
    """
    return None


def stop_capture() -> None:
    """Does nothing (see `start_capture`).

    Example:
        >>> import nuvec as mx
        >>> mx.metal.stop_capture()
    """
    return None


def get_active_memory() -> int:
    """`nuvec.get_active_memory()` (MLX's deprecated alias).

    Example:
        >>> import nuvec as mx
        >>> mx.metal.get_active_memory() == mx.get_active_memory()
        True
    """
    return memory.get_active_memory()


def get_peak_memory() -> int:
    """`nuvec.get_peak_memory()` (MLX's deprecated alias).

    Example:
        >>> import nuvec as mx
        >>> mx.metal.get_peak_memory() == mx.get_peak_memory()
        True
    """
    return memory.get_peak_memory()


def reset_peak_memory() -> None:
    """`nuvec.reset_peak_memory()` (MLX's deprecated alias).

    Example:
        >>> import nuvec as mx
        >>> mx.metal.reset_peak_memory()
    """
    memory.reset_peak_memory()


def get_cache_memory() -> int:
    """`nuvec.get_cache_memory()` (MLX's deprecated alias).

    Example:
        >>> import nuvec as mx
        >>> mx.metal.get_cache_memory() >= 0
        True
    """
    return memory.get_cache_memory()


def clear_cache() -> None:
    """`nuvec.clear_cache()` (MLX's deprecated alias).

    Example:
        >>> import nuvec as mx
        >>> mx.metal.clear_cache()
    """
    memory.clear_cache()


def set_memory_limit(limit: int) -> int:
    """`nuvec.set_memory_limit(limit)` (MLX's deprecated alias); returns the previous limit.

    Example:
        >>> import nuvec as mx
        >>> old = mx.metal.set_memory_limit(1 << 30); _ = mx.set_memory_limit(old)
    """
    return memory.set_memory_limit(limit)


def set_cache_limit(limit: int) -> int:
    """`nuvec.set_cache_limit(limit)` (MLX's deprecated alias); returns the previous limit.

    Example:
        >>> import nuvec as mx
        >>> old = mx.metal.set_cache_limit(0); _ = mx.set_cache_limit(old)
    """
    return memory.set_cache_limit(limit)


def set_wired_limit(limit: int) -> int:
    """`nuvec.set_wired_limit(limit)`: no effect, there is no wired memory; returns the previous.

    Example:
        >>> import nuvec as mx
        >>> mx.metal.set_wired_limit(0)
        0
    """
    return memory.set_wired_limit(limit)


__all__ = [
    "is_available", "device_info", "start_capture", "stop_capture", "get_active_memory",
    "get_peak_memory", "reset_peak_memory", "get_cache_memory", "clear_cache",
    "set_memory_limit", "set_cache_limit", "set_wired_limit",
]  # fmt: skip
