"""A test double of the GPU backend: NumPy-backed, behind the same protocol as CuPy's.

Its streams are asynchronous like CUDA streams: a kernel call enqueues the work on the stream's
worker thread and returns a `DoubleArray` handle at once; events are markers in a stream's
queue; `synchronize` waits and raises a kernel failure found meanwhile. Its table is the GPU
table (`nuvec.backends.cupy.table.build_table`) built with NumPy, so bfloat16 lives in 2-byte
buffers and the listed primitives take the CPU route, exactly as on a GPU. A handle read
before its stream reached it raises: a missing event wait shows up as an error, not a race.

Use: `nuvec.graph.device.register_backend(nuvec.gpu, DoubleBackend())` (tests do).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from nuvec.backends.cupy.bfloat16 import BFLOAT16, Bfloat16Buffer, bits_of_host, coerce
from nuvec.backends.cupy.bfloat16 import to_host as bits_to_host
from nuvec.backends.cupy.special import CLASSES
from nuvec.backends.common.registry import SHARED
from nuvec.backends.cupy.table import FUSED_CLASSES, build_table, host_route
from nuvec.backends.numpy import table as cpu_table
from nuvec.graph.device import DeviceType, Stream


class DoubleArray:
    """A handle on a buffer a double stream computes; `dtype` is None until coerced."""

    __slots__ = ("future", "shape", "dtype", "nbytes")
    base = None

    def __init__(self, future: Future, shape: Any = None, dtype: Any = None):
        self.future = future
        self.shape = shape
        self.dtype = dtype
        self.nbytes = 0 if shape is None else int(np.prod(shape)) * dtype.itemsize

    def value(self) -> Any:
        """The computed buffer; raises if its stream has not reached it yet."""
        if not self.future.done():
            raise RuntimeError("DoubleArray read before its stream computed it (missing wait)")
        return self.future.result()


class _Result(DoubleArray):
    """A kernel's result: one buffer, or (iterated, for a multi-output node) its outputs."""

    __slots__ = ("backend", "stream")

    def __iter__(self):
        i = 0
        while True:  # the evaluator zips this with the node's dtypes (and takes one too many)
            yield self.backend.enqueue(self.stream, lambda i=i: self._part(i))
            i += 1

    def _part(self, i: int) -> Any:
        parts = self.value()
        return parts[i] if i < len(parts) else None


class DoubleBackend:
    """The NumPy-backed asynchronous GPU double.

    Attributes:
        delay: seconds each enqueued task sleeps first (makes asynchrony observable).
        host_copies: how many buffers its kernels copied to the host (the CPU route).

    Example:
        >>> import nuvec as mx
        >>> from nuvec.backends.double import DoubleBackend
        >>> from nuvec.graph.device import register_backend
        >>> register_backend(mx.gpu, DoubleBackend())
        >>> mx.multiply(mx.array([1.0, 2.0]), 2, stream=mx.gpu).tolist()
        [2.0, 4.0]
        >>> register_backend(mx.gpu, None)
    """

    device_type = DeviceType.gpu
    array_type = DoubleArray
    asynchronous = True

    def __init__(self, delay: float = 0.0):
        self.delay = delay
        self.host_copies = 0
        self._workers: dict[int, ThreadPoolExecutor] = {}
        self._errors: dict[int, BaseException] = {}
        self._lock = threading.Lock()
        # NumPy has no erf: the double takes the CPU's where CuPy has its own special functions
        special = {cls: cpu_table.kernels[cls] for cls in CLASSES}
        # the CUDA-kernel fused ops without a shared body compute on the host, as their CPU
        # kernels do (those with one, the row-wise ops, run it on the device)
        hosted = frozenset(cls for cls in FUSED_CLASSES if cls not in SHARED)
        special.update({cls: host_route(cpu_table.kernels[cls], self._host_of, self._device_of)
                        for cls in hosted})
        raw = build_table(np, "gpu-double", cpu_table, self._host_of, self._device_of, special,
                          bits=hosted)
        self.kernels = type(raw)(raw.name)
        for cls, fn in raw.kernels.items():
            self.kernels.add(cls, self._asynchronous(fn))

    # -- the queue ---------------------------------------------------------------------------
    def _worker(self, stream: Stream) -> ThreadPoolExecutor:
        with self._lock:
            found = self._workers.get(stream.index)
            if found is None:
                found = self._workers[stream.index] = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix=f"double-{stream.index}"
                )
        return found

    def enqueue(self, stream: Stream, task: Callable[[], Any], shape=None, dtype=None) -> Any:
        def run() -> Any:
            if self.delay:
                time.sleep(self.delay)
            try:
                with np.errstate(all="ignore"):
                    return task()
            except BaseException as exc:
                self._errors.setdefault(stream.index, exc)
                raise

        return DoubleArray(self._worker(stream).submit(run), shape, dtype)

    def _asynchronous(self, fn: Callable) -> Callable:
        def kernel(p, *inputs, out=None):
            stream = self._current.stream
            whole = self.enqueue(stream, lambda: fn(p, *[x.value() for x in inputs]))
            result = _Result(whole.future)
            result.backend, result.stream = self, stream
            return result

        return kernel

    # -- protocol ------------------------------------------------------------------------------
    _current = threading.local()

    def available(self) -> bool:
        return True

    def unavailable_reason(self) -> str:
        return ""

    def scope(self, stream: Stream) -> Any:
        return _Scope(self._current, stream)

    def coerce(self, data: Any, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
        stream = self._current.stream
        return self.enqueue(
            stream, lambda: coerce(np, data.value(), dtype, shape), shape, dtype
        )

    def owned_bytes(self, outputs: list[Any], inputs: list[Any]) -> int:
        return sum(out.nbytes for out in outputs)

    def can_donate(self, data: Any, shape: tuple[int, ...], dtype: np.dtype) -> bool:
        return False

    def _host_of(self, data: Any) -> np.ndarray:
        self.host_copies += 1
        return bits_to_host(data.bits) if type(data) is Bfloat16Buffer else np.asarray(data)

    def _device_of(self, data: np.ndarray) -> Any:
        return Bfloat16Buffer(bits_of_host(data).copy()) if data.dtype == BFLOAT16 else data

    def to_host(self, data: DoubleArray, stream: Stream) -> np.ndarray:
        data.future.result()  # waits (and raises what its kernel raised)
        value = data.value()
        return bits_to_host(value.bits) if type(value) is Bfloat16Buffer else value

    def from_host(self, data: np.ndarray, stream: Stream) -> DoubleArray:
        host = np.array(data)  # a copy, as an upload is
        value = self._device_of(host)
        return self.enqueue(stream, lambda: value, host.shape, host.dtype)

    def record_event(self, stream: Stream) -> threading.Event:
        event = threading.Event()
        self.enqueue(stream, event.set)
        return event

    def wait_event(self, stream: Stream, event: threading.Event) -> None:
        self.enqueue(stream, event.wait)

    def synchronize(self, stream: Stream | None = None) -> None:
        indices = [stream.index] if stream is not None else list(self._workers)
        for index in indices:
            worker = self._workers.get(index)
            if worker is not None:
                worker.submit(lambda: None).result()
            error = self._errors.pop(index, None)
            if error is not None:
                raise error

    def device_count(self) -> int:
        return 1

    def device_info(self, index: int) -> dict[str, Any]:
        return {"name": "nuvec GPU double", "device_name": "nuvec GPU double",
                "architecture": "numpy", "memory_size": 0}

    def cache_memory(self) -> int:
        return 0

    def clear_cache(self) -> None:
        return None

    def set_memory_limit(self, limit: int) -> None:
        return None

    def set_cache_limit(self, limit: int) -> None:
        return None


class _Scope:
    """Makes `stream` the one the double's kernels enqueue on, in this thread."""

    def __init__(self, state: threading.local, stream: Stream):
        self.state, self.stream = state, stream

    def __enter__(self) -> Stream:
        self.saved = getattr(self.state, "stream", None)
        self.state.stream = self.stream
        return self.stream

    def __exit__(self, *exc: Any) -> None:
        self.state.stream = self.saved
