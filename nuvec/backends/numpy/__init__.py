"""The CPU backend: every primitive computed with NumPy; the reference semantics.

Its table holds the shared bodies (`nuvec.backends.common`) bound to NumPy, plus the kernels
only NumPy has (`unary`: `erf`/`erfinv`; `quantized`; `fast`, `fast_attention` and
`fast_packed`: fused ops through their fallback graphs or row blocks), and C compiled on this
machine where a compiler is found (`native_norms`: the norms' rows; `native_fused`, through
`fused`: elementwise chains). Kernels receive NumPy
arrays of the node's input dtypes (bfloat16 as ml_dtypes) and may return views or NumPy
scalars; the evaluator coerces results with `coerce`.
"""

from __future__ import annotations

import os
import platform
from typing import Any

import numpy as np

from nuvec.backends.numpy.registry import kernels, table, writes_into
from nuvec.backends.numpy import (  # noqa: F401,E402  (each module registers its kernels)
    broadcast,
    fast,
    fast_attention,
    fast_packed,
    fused,
    mkl,
    native_norms,
    native_random,
    native_rope,
    quantized,
    user_kernels,
    unary,
)
from nuvec.backends.numpy import threaded  # noqa: F401,E402  (wraps the kernels above)
from nuvec.backends.numpy import heap  # noqa: E402
from nuvec.graph.backend import KernelTable
from nuvec.graph.device import DeviceType, Stream
from nuvec.graph.memory import owned_bytes

class NumpyBackend:
    """The CPU: synchronous, one buffer type (`np.ndarray`); its buffer cache is the C
    allocator's free memory (`heap`), kept up to the cache limit (by default the memory size).

    Example:
        >>> import nuvec as mx
        >>> from nuvec.backends.numpy import backend
        >>> backend.device_type, backend.asynchronous, mx.Exp in backend.kernels
        (DeviceType.cpu, False, False)
    """

    device_type = DeviceType.cpu
    array_type = np.ndarray
    asynchronous = False

    def __init__(self, kernels: KernelTable):
        self.kernels = kernels
        heap.set_limit(self.device_info(0)["memory_size"])  # MLX's default: the memory limit

    def available(self) -> bool:
        return True

    def unavailable_reason(self) -> str:
        return ""

    def scope(self, stream: Stream) -> Any:
        return np.errstate(all="ignore")  # kernels define their results for 1/0, NaN, ...

    def coerce(self, data: Any, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        """A kernel result as an ndarray of exactly `dtype`."""
        return np.asarray(data).astype(dtype, copy=False)

    def owned_bytes(self, outputs: list[Any], inputs: list[Any]) -> int:
        return owned_bytes(outputs, inputs)

    def can_donate(self, data: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> bool:
        return (
            data.base is None
            and data.flags.writeable
            and data.dtype is dtype
            and data.shape == shape
        )

    def to_host(self, data: Any, stream: Stream) -> np.ndarray:
        return np.asarray(data)

    def from_host(self, data: np.ndarray, stream: Stream) -> np.ndarray:
        return data

    def record_event(self, stream: Stream) -> None:
        return None  # work on a CPU stream is done when its kernel returns

    def wait_event(self, stream: Stream, event: Any) -> None:
        return None

    def synchronize(self, stream: Stream | None = None) -> None:
        """NumPy computes synchronously; nothing to wait for."""

    def device_count(self) -> int:
        return 1

    def device_info(self, index: int) -> dict[str, Any]:
        pages = os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 0
        size = pages * os.sysconf("SC_PAGE_SIZE") if pages else 0
        name = platform.processor() or platform.machine()
        return {"name": name, "device_name": name, "architecture": platform.machine(),
                "memory_size": size}

    def cache_memory(self) -> int:
        return heap.cached_bytes()

    def clear_cache(self) -> None:
        heap.trim()

    def set_memory_limit(self, limit: int) -> None:
        return None  # NumPy allocates from the system: a limit is advisory on the CPU

    def set_cache_limit(self, limit: int) -> None:
        heap.set_limit(limit)


backend = NumpyBackend(table)

__all__ = ["backend", "kernels", "table", "writes_into", "NumpyBackend"]
