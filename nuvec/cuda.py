"""MLX's `mx.cuda`: whether nuvec computes on an NVIDIA GPU here (through CuPy)."""

from __future__ import annotations

from typing import Any

from nuvec.graph.device import DeviceType, device_info as _device_info, is_available as _available


def is_available() -> bool:
    """Whether a CUDA GPU is available (CuPy installed and a device found).

    Example:
        >>> import nuvec as mx
        >>> mx.cuda.is_available() == mx.is_available(mx.gpu)
        True
    """
    return _available(DeviceType.gpu)


def device_info() -> dict[str, Any]:
    """Facts about GPU 0 (`nuvec.device_info(nuvec.gpu)`).

    Raises:
        RuntimeError: if no GPU is available.

    Example:
        >>> import nuvec as mx
        >>> mx.cuda.device_info()["name"] if mx.cuda.is_available() else "no GPU"  # doctest: +SKIP
        'NVIDIA H200'
    """
    return _device_info(DeviceType.gpu)


__all__ = ["is_available", "device_info"]
