"""The GPU backend: CuPy, imported on first use of a GPU stream (never by `import nuvec`).

Each nuvec GPU stream is a non-blocking CuPy stream. Kernels only enqueue work; an input made
on another stream is waited for with an event recorded there (`wait_event`), never a device-wide
synchronize; `eval` synchronizes the streams of its roots. bfloat16 lives in 2-byte buffers
(`bfloat16.Bfloat16Buffer`), since CuPy has no bfloat16 dtype. The kernel table is built in
`table.py`; the memory figures of the cache read CuPy's memory pool.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from nuvec.backends.cupy.bfloat16 import BFLOAT16, Bfloat16Buffer, bits_of_host, coerce
from nuvec.backends.cupy.bfloat16 import to_host as bits_to_host
from nuvec.backends.cupy import fused
from nuvec.backends.cupy.special import overrides
from nuvec.backends.cupy.table import FUSED_CLASSES, build_table
from nuvec.backends.numpy import table as cpu_table
from nuvec.graph.device import DeviceType, Stream
from nuvec.graph.memory import owned_bytes

INSTALL = (
    'install it with pip install "nuvec[gpu]" (CUDA 13 drivers) or '
    'pip install "nuvec[gpu-cuda12]" (CUDA 12 drivers)'
)


class CupyBackend:
    """The GPU through CuPy; `available()` imports CuPy and builds the kernel table."""

    device_type = DeviceType.gpu
    asynchronous = True

    def __init__(self) -> None:
        self.cupy: Any = None
        self.kernels: Any = None
        self.array_type: type = type(None)
        self._reason: str | None = None
        self._streams: dict[int, Any] = {}
        self._constants: dict[int, tuple[np.ndarray, Any, int]] = {}
        self._lock = threading.Lock()

    # -- availability -----------------------------------------------------------------------
    def available(self) -> bool:
        if self._reason is None:
            self._reason = self._load()
        return not self._reason

    def unavailable_reason(self) -> str:
        self.available()
        return self._reason or ""

    def _load(self) -> str:
        try:
            import cupy  # here, not at module level: only a GPU's first use imports CuPy
        except ImportError:
            return f"CuPy is not installed; {INSTALL}"
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # CUDARuntimeError: no driver, or one too old
            return f"CuPy is installed but finds no CUDA device ({exc})"
        if count == 0:
            return "CuPy is installed but finds no CUDA device"
        self.cupy = cupy
        self.array_type = cupy.ndarray
        kernels = {**overrides(cupy), **fused.overrides(cpu_table, self._host, self._device)}
        self.kernels = build_table(cupy, "gpu", cpu_table, self._host, self._device, kernels,
                                   bits=frozenset(FUSED_CLASSES))
        return ""

    # -- streams and events -----------------------------------------------------------------
    def cuda_stream(self, stream: Stream) -> Any:
        """The CuPy stream of a nuvec stream, made on first use."""
        found = self._streams.get(stream.index)
        if found is None:
            with self._lock, self.cupy.cuda.Device(stream.device.index):
                found = self._streams.setdefault(
                    stream.index, self.cupy.cuda.Stream(non_blocking=True)
                )
        return found

    def scope(self, stream: Stream) -> Any:
        return _Scope(self.cupy.cuda.Device(stream.device.index), self.cuda_stream(stream))

    def record_event(self, stream: Stream) -> Any:
        event = self.cupy.cuda.Event(disable_timing=True)
        event.record(self.cuda_stream(stream))
        return event

    def wait_event(self, stream: Stream, event: Any) -> None:
        self.cuda_stream(stream).wait_event(event)

    def synchronize(self, stream: Stream | None = None) -> None:
        if stream is not None:
            self.cuda_stream(stream).synchronize()
            return
        for s in list(self._streams.values()):
            s.synchronize()

    # -- data --------------------------------------------------------------------------------
    def _host(self, data: Any) -> np.ndarray:
        if type(data) is Bfloat16Buffer:
            return bits_to_host(self.cupy.asnumpy(data.bits))
        return self.cupy.asnumpy(data)

    def _device(self, data: np.ndarray) -> Any:
        if data.dtype == BFLOAT16:
            return Bfloat16Buffer(self.cupy.asarray(bits_of_host(data)))
        return self.cupy.asarray(data)

    def to_host(self, data: Any, stream: Stream) -> np.ndarray:
        s = self.cuda_stream(stream)
        with s:
            out = self._host(data)
        s.synchronize()
        return out

    def from_host(self, data: np.ndarray, stream: Stream) -> Any:
        data = np.asarray(data)
        constant = data.ndim and data.size and not any(data.strides)
        key = id(data)
        if not data.flags.writeable and (constant or data.size == 1):
            found = self._constants.get(key)
            if found is not None and found[0] is data and found[2] == stream.index:
                return found[1]  # a read-only constant (a cached scalar) uploaded before
        with self.scope(stream):
            if constant:  # a broadcast scalar: upload one element, broadcast on the device
                one = self._device(np.ascontiguousarray(data[(0,) * data.ndim]))
                out = self._broadcast(one, data.shape)
            else:
                out = self._device(data)
        if not data.flags.writeable and (constant or data.size == 1):
            if len(self._constants) >= 1024:
                self._constants.clear()
            self._constants[key] = (data, out, stream.index)  # holds `data`: the id stays its
        return out

    def _broadcast(self, one: Any, shape: tuple[int, ...]) -> Any:
        if type(one) is Bfloat16Buffer:
            return Bfloat16Buffer(self.cupy.broadcast_to(one.bits, shape))
        return self.cupy.broadcast_to(one, shape)

    def coerce(self, data: Any, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
        return coerce(self.cupy, data, dtype, shape)

    def owned_bytes(self, outputs: list[Any], inputs: list[Any]) -> int:
        def bits(xs: list[Any]) -> list[Any]:  # bfloat16 buffers share memory through their bits
            return [x.bits if type(x) is Bfloat16Buffer else x for x in xs]

        return owned_bytes(bits(outputs), bits(inputs))

    def can_donate(self, data: Any, shape: tuple[int, ...], dtype: np.dtype) -> bool:
        return data.base is None and data.dtype == dtype and data.shape == shape

    # -- devices and memory ------------------------------------------------------------------
    def device_count(self) -> int:
        return self.cupy.cuda.runtime.getDeviceCount() if self.available() else 0

    def device_info(self, index: int) -> dict[str, Any]:
        props = self.cupy.cuda.runtime.getDeviceProperties(index)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        return {
            "name": name,
            "device_name": name,
            "architecture": f"sm_{props['major']}{props['minor']}",
            "memory_size": int(props["totalGlobalMem"]),
            "max_buffer_length": int(props["totalGlobalMem"]),
        }

    def cache_memory(self) -> int:
        pool = self.cupy.get_default_memory_pool()
        return int(pool.total_bytes() - pool.used_bytes())

    def active_memory(self) -> int:
        return int(self.cupy.get_default_memory_pool().used_bytes())

    def clear_cache(self) -> None:
        self.cupy.get_default_memory_pool().free_all_blocks()

    def set_memory_limit(self, limit: int) -> None:
        self.cupy.get_default_memory_pool().set_limit(size=limit)

    def set_cache_limit(self, limit: int) -> None:
        if self.cache_memory() > limit:
            self.clear_cache()


class _Scope:
    """Enters a CUDA device and a CuPy stream; floating-point errors never raise on a GPU."""

    __slots__ = ("device", "stream")

    def __init__(self, device: Any, stream: Any):
        self.device, self.stream = device, stream

    def __enter__(self) -> Any:
        self.device.__enter__()
        self.stream.__enter__()
        return self.stream

    def __exit__(self, *exc: Any) -> None:
        self.stream.__exit__(*exc)
        self.device.__exit__(*exc)


backend = CupyBackend()
