"""Devices, streams and the backend registry.

A `Stream` is an ordered queue of work on one `Device`. The default device and the stream set
by `stream(...)` are per thread. Backends are imported lazily on first use of their device, so
`import nuvec` needs no CuPy; nothing here imports a backend at import time.
"""

from __future__ import annotations

import enum
import importlib
import importlib.util
import os
import threading
from typing import Any

from nuvec.graph.caller import public_caller


class DeviceType(enum.Enum):
    """The kind of a device: `cpu` or `gpu`.

    Example:
        >>> import nuvec as mx
        >>> [t.name for t in mx.DeviceType]
        ['cpu', 'gpu']
    """

    cpu = 0
    gpu = 1

    def __repr__(self) -> str:
        return f"DeviceType.{self.name}"


cpu = DeviceType.cpu
gpu = DeviceType.gpu


class Device:
    """A device: its `type` (`DeviceType`) and `index`.

    Example:
        >>> import nuvec as mx
        >>> mx.Device(mx.gpu, 1)
        Device(gpu, 1)
    """

    __slots__ = ("type", "index")

    def __init__(self, type: DeviceType, index: int = 0):
        if not isinstance(type, DeviceType):
            raise TypeError(f"Device: type must be a DeviceType, got {type!r}")
        self.type = type
        self.index = index

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DeviceType):
            return self.type is other
        return isinstance(other, Device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __repr__(self) -> str:
        return f"Device({self.type.name}, {self.index})"


class Stream:
    """An ordered queue of work on a device; `index` is unique among all streams.

    Example:
        >>> import nuvec as mx
        >>> s = mx.default_stream(mx.cpu)
        >>> s.device, s == mx.default_stream(mx.Device(mx.cpu, 0))
        (Device(cpu, 0), True)
    """

    __slots__ = ("device", "index", "executor", "cleared", "_backend")

    def __init__(self, device: Device, index: int):
        self.device = device
        self.index = index
        self.executor: Any = None  # a one-worker executor, made when two streams run at once
        self.cleared = False  # destroyed by `clear_streams`: ops refuse it
        self._backend: Any = None

    @property
    def backend(self) -> Any:
        """The backend computing this stream's work (`nuvec.graph.backend.Backend`)."""
        found = self._backend
        if found is None:
            found = self._backend = backend_for(self.device)
        return found

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and self.index == other.index

    def __hash__(self) -> int:
        return self.index

    def __repr__(self) -> str:
        return f"Stream({self.device}, {self.index})"


class DeviceUnavailableError(RuntimeError, ValueError):
    """A device nuvec cannot compute on here (a `RuntimeError`, and a `ValueError` as MLX raises
    for a GPU stream or device without a GPU backend)."""


# Each module defines `backend`, an object behind the protocol of `nuvec.graph.backend`.
_BACKEND_MODULES = {DeviceType.cpu: "nuvec.backends.numpy", DeviceType.gpu: "nuvec.backends.cupy"}
_backends: dict[DeviceType, Any] = {}
_lock = threading.Lock()
_streams: list[Stream] = []
_default_streams: dict[Device, Stream] = {}


class _BackendState:
    """`asynchronous`: whether a backend whose kernels only enqueue work was ever loaded (until
    then `eval` skips looking for streams to synchronize)."""

    asynchronous = False


backend_state = _BackendState()


def register_backend(device_type: DeviceType, backend: Any | None) -> None:
    """Installs (or with `None` removes) the backend used for `device_type` (tests use this)."""
    if backend is None:
        _backends.pop(device_type, None)
    else:
        _backends[device_type] = backend
        backend_state.asynchronous |= bool(backend.asynchronous)
    for s in _streams:
        s._backend = None


def loaded_backends() -> list[Any]:
    """The backends in use so far, one per device type."""
    return list(_backends.values())


def backend_for(device: Device | DeviceType) -> Any:
    """The backend of a device, imported on first use.

    Raises:
        DeviceUnavailableError: if the device has no available backend; for the GPU the
            message says whether CuPy or a CUDA device is missing and how to install CuPy.
    """
    kind = device if isinstance(device, DeviceType) else device.type
    found = _backends.get(kind)
    if found is not None:
        return found
    backend = importlib.import_module(_BACKEND_MODULES[kind]).backend
    if not backend.available():
        raise DeviceUnavailableError(
            f"the {kind.name} device is not available: {backend.unavailable_reason()}"
        )
    with _lock:
        if kind not in _backends:
            register_backend(kind, backend)
    return _backends[kind]


def is_available(device: Device | DeviceType) -> bool:
    """Whether nuvec can compute on `device` here.

    Args:
        device: a Device or DeviceType (`mx.cpu`, `mx.gpu`).

    Returns:
        True if a backend for the device is available.

    Raises:
        TypeError: if `device` is not a Device or DeviceType.

    Example:
        >>> import nuvec as mx
        >>> mx.is_available(mx.cpu)
        True
    """
    if not isinstance(device, (Device, DeviceType)):
        raise TypeError(f"is_available: device must be a Device or DeviceType, got {device!r} "
                        f"({type(device).__name__})")
    try:
        backend_for(device)
    except RuntimeError:
        return False
    return True


def _available(device: Device, op: str) -> None:
    """Raises `DeviceUnavailableError`, named for the public function called (`op` if none
    is found), if `device` has no backend here."""
    try:
        backend_for(device)
    except DeviceUnavailableError as e:
        raise DeviceUnavailableError(f"{public_caller(op)}: {e}") from None


def _as_device(device: Device | DeviceType, op: str) -> Device:
    """`device` as a `Device`; `op` names the public function in the error."""
    if isinstance(device, Device):
        return device
    if isinstance(device, DeviceType):
        return Device(device, 0)
    raise TypeError(f"{op}: device must be a Device or DeviceType, got {device!r} "
                    f"({type(device).__name__})")


def _usable_device(device: Device | DeviceType, op: str) -> Device:
    """`device` as a `Device` that nuvec can compute on here (for a stream made on it)."""
    dev = _as_device(device, op)
    if dev.type is not DeviceType.cpu and dev.type not in _backends:
        _available(dev, op)
    return dev


def _make_stream(device: Device, owned: bool = True) -> Stream:
    """A new stream; an `owned` one is destroyed by `clear_streams` in this thread."""
    with _lock:
        s = Stream(device, len(_streams))
        _streams.append(s)
    if owned:
        _state.made.append(s)
    return s


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.device: Device | None = None
        self.stream: Stream | None = None
        self.made: list[Stream] = []  # the streams this thread made, for `clear_streams`


_state = _ThreadState()
_scoped = 0  # `stream(...)` blocks open in any thread; while none is, `_state` is not read
_global_device: Device | None = None  # chosen on first use (`_initial_device`)
_global_stream: Stream | None = None  # the default stream of _global_device, once made


def _driver_present() -> bool:
    """Whether an NVIDIA driver is installed (checked without importing CuPy)."""
    return os.name == "nt" or os.path.exists("/proc/driver/nvidia/version")


def _initial_device() -> Device:
    """The GPU when CuPy finds one, else the CPU. CuPy is imported only where a driver is."""
    global _global_device
    if _global_device is None:
        gpu_here = (
            _driver_present()
            and importlib.util.find_spec("cupy") is not None
            and is_available(DeviceType.gpu)
        )
        _global_device = Device(DeviceType.gpu if gpu_here else DeviceType.cpu, 0)
    return _global_device


def default_device() -> Device:
    """The device operations run on when no `stream=` is given: the GPU when one is present.

    Example:
        >>> import nuvec as mx
        >>> with mx.stream(mx.cpu):
        ...     print(mx.default_device())
        Device(cpu, 0)
    """
    return _state.device or _global_device or _initial_device()


def set_default_device(device: Device | DeviceType) -> None:
    """Sets the default device for this and new threads.

    Args:
        device: a `Device`, or a `DeviceType` (index 0).

    Raises:
        DeviceUnavailableError: (a `RuntimeError` and `ValueError`) if the device is not
            available here.
        TypeError: if `device` is not a device.

    Example:
        >>> import nuvec as mx
        >>> old = mx.default_device()
        >>> mx.set_default_device(mx.cpu); mx.default_device()
        Device(cpu, 0)
        >>> mx.set_default_device(old)
    """
    global _global_device, _global_stream
    dev = _as_device(device, "set_default_device")
    _available(dev, "set_default_device")
    _global_device = dev
    _global_stream = _device_stream(dev)
    _state.device = None
    _state.stream = None


def default_stream(device: Device | DeviceType) -> Stream:
    """The default stream of `device` (a `Device` or `DeviceType`), made on first use; within
    a `stream(s)` block, `s` for its device (as MLX).

    Raises:
        DeviceUnavailableError: (a `RuntimeError` and `ValueError`) if the device is not
            available here.
        TypeError: if `device` is not a device.

    Example:
        >>> import nuvec as mx
        >>> s = mx.new_stream(mx.cpu)
        >>> with mx.stream(s):
        ...     mx.default_stream(mx.cpu) == s
        True
        >>> mx.default_stream(mx.cpu) == s
        False
    """
    dev = _usable_device(device, "default_stream")
    if _scoped:
        s = _state.stream
        if s is not None and s.device == dev:
            return s
    return _device_stream(dev)


def _device_stream(dev: Device) -> Stream:
    """The default stream of `dev` outside `stream(...)` blocks, made on first use."""
    s = _default_streams.get(dev)
    if s is None:
        with _lock:
            s = _default_streams.get(dev)
            if s is None:
                s = Stream(dev, len(_streams))
                _streams.append(s)
                _default_streams[dev] = s
    return s


def new_stream(device: Device | DeviceType) -> Stream:
    """A new stream on `device` (a `Device` or `DeviceType`); work on different streams may run
    concurrently.

    Raises:
        DeviceUnavailableError: (a `RuntimeError` and `ValueError`) if the device is not
            available here.
        TypeError: if `device` is not a device.

    Example:
        >>> import nuvec as mx
        >>> s = mx.new_stream(mx.cpu)
        >>> s == mx.default_stream(mx.cpu), mx.add(1, 2, stream=s).item()
        (False, 3)
    """
    return _make_stream(_usable_device(device, "new_stream"))


def new_thread_unsafe_stream(device: Device | DeviceType) -> Stream:
    """A new stream on `device` that any thread may use, as MLX's (every nuvec stream may be
    used from any thread: this is `new_stream`, except that `clear_streams` keeps it, as MLX).

    Raises:
        DeviceUnavailableError: (a `RuntimeError` and `ValueError`) if the device is not
            available here.
        TypeError: if `device` is not a device.

    Example:
        >>> import nuvec as mx
        >>> mx.add(1, 2, stream=mx.new_thread_unsafe_stream(mx.cpu)).item()
        3
    """
    return _make_stream(_usable_device(device, "new_thread_unsafe_stream"), owned=False)


def clear_streams() -> None:
    """Destroys the streams made in this thread (MLX's `clear_streams`).

    The streams of `new_stream` and those a `ThreadLocalStream` made for this thread can no
    longer be used: an operation, `stream(...)` or `set_default_stream` given one raises
    `RuntimeError`. Work already recorded on them still evaluates. The devices' default
    streams remain (a destroyed stream made a default by `set_default_stream` is replaced by
    a new default stream), and so do `new_thread_unsafe_stream`'s.

    Example:
        >>> import nuvec as mx
        >>> s = mx.new_stream(mx.cpu)
        >>> mx.clear_streams()
        >>> try: mx.add(1, 2, stream=s)
        ... except RuntimeError as e: print(e)
        add: Stream(Device(cpu, 0), ...) was destroyed by clear_streams
        >>> mx.add(1, 2).item()
        3
    """
    global _global_stream
    made, _state.made = _state.made, []
    with _lock:
        for s in made:
            s.cleared = True
            if _default_streams.get(s.device) is s:
                del _default_streams[s.device]
        if _global_stream is not None and _global_stream.cleared:
            _global_stream = None
    for s in made:
        if s.executor is not None:  # its worker thread ends once idle
            s.executor.shutdown(wait=False)
            s.executor = None


class ThreadLocalStream:
    """A stream per thread (MLX's `ThreadLocalStream`): each thread that records on it gets a
    stream of its own on `device`, made at its first use and kept. Pass it wherever a stream
    is taken (`stream=`, `mx.stream(...)`).

    Example:
        >>> import nuvec as mx
        >>> s = mx.new_thread_local_stream(mx.cpu)
        >>> mx.add(1, 2, stream=s).item()
        3
    """

    __slots__ = ("device", "index", "_local")
    _count = 0

    def __init__(self, device: Device):
        self.device = device
        with _lock:
            self.index = ThreadLocalStream._count
            ThreadLocalStream._count += 1
        self._local = threading.local()

    def resolve(self) -> Stream:
        """This thread's stream."""
        found = getattr(self._local, "stream", None)
        if found is None:
            found = self._local.stream = _make_stream(self.device)
        return found

    def __repr__(self) -> str:
        return f"ThreadLocalStream({self.device}, {self.index})"


def new_thread_local_stream(device: Device | DeviceType) -> ThreadLocalStream:
    """A `ThreadLocalStream` on `device`: one stream per thread that uses it.

    Raises:
        DeviceUnavailableError: (a `RuntimeError` and `ValueError`) if the device is not
            available here.
        TypeError: if `device` is not a device.

    Example:
        >>> import nuvec as mx
        >>> mx.new_thread_local_stream(mx.cpu).device
        Device(cpu, 0)
    """
    return ThreadLocalStream(_usable_device(device, "new_thread_local_stream"))


def set_default_stream(s: Stream) -> None:
    """Makes `s` the default stream of its device (for every thread without a `stream(...)`).

    Raises:
        TypeError: if `s` is not a `Stream`.
        RuntimeError: if its device is not available here, or `clear_streams` destroyed it.

    Example:
        >>> import nuvec as mx
        >>> old = mx.default_stream(mx.cpu)
        >>> mx.set_default_stream(mx.new_stream(mx.cpu)); mx.default_stream(mx.cpu) == old
        False
        >>> mx.set_default_stream(old)
    """
    global _global_stream
    if not isinstance(s, Stream):
        raise TypeError(f"set_default_stream: expected a Stream, got {type(s).__name__}")
    if s.cleared:
        raise RuntimeError(f"set_default_stream: {s} was destroyed by clear_streams")
    _available(s.device, "set_default_stream")
    with _lock:
        _default_streams[s.device] = s
    if s.device == (_global_device or _initial_device()):
        _global_stream = s


def current_stream() -> Stream:
    """The stream operations use when given no `stream=`."""
    s = _state.stream
    if s is not None:
        return s
    return default_stream(default_device())


def _init_global_stream() -> Stream:
    global _global_stream
    _global_stream = _device_stream(_global_device or _initial_device())
    return _global_stream


def leaf_stream() -> Stream:
    """The stream arrays made from host data live on: the current default stream (on a GPU
    default device they are uploaded)."""
    return (_scoped and _state.stream) or _global_stream or _init_global_stream()


def host_stream() -> Stream:
    """The default CPU stream, where arrays made from host data live."""
    return _host_stream or _init_host_stream()


_host_stream: Stream | None = None


def _init_host_stream() -> Stream:
    global _host_stream
    _host_stream = _device_stream(Device(DeviceType.cpu, 0))
    return _host_stream


def to_stream(s: Stream | Device | DeviceType | None) -> Stream:
    """Resolves an op's `stream=` argument to a `Stream` whose device is available.

    Raises:
        RuntimeError: if the stream's device has no backend here, or `clear_streams` destroyed
            the stream.
        TypeError: if `s` is not a stream or device.
    """
    if s is None:
        s = (_scoped and _state.stream) or _global_stream or _init_global_stream()
        if s.device.type is cpu and not s.cleared:
            return s
    elif isinstance(s, (Device, DeviceType)):
        s = default_stream(s)
    elif isinstance(s, ThreadLocalStream):
        s = s.resolve()
    elif not isinstance(s, Stream):
        raise _not_a_stream(public_caller("stream"), s)
    if s.cleared:
        raise RuntimeError(f"{public_caller('stream')}: {s} was destroyed by clear_streams")
    if s.device.type is not DeviceType.cpu and s.device.type not in _backends:
        _available(s.device, "stream")
    return s


def _not_a_stream(op: str, s: Any) -> TypeError:
    return TypeError(f"{op}: stream must be a Stream, ThreadLocalStream, Device or None, got "
                     f"{s!r} ({type(s).__name__})")


def stream(s: Stream | ThreadLocalStream | Device | DeviceType) -> StreamContext:
    """Makes `s` (or the default stream of a device) the default within the block, per thread.

    Args:
        s: a Stream (or ThreadLocalStream), or a Device (or DeviceType) for its default stream.

    Returns:
        A `StreamContext`, whose `with` block yields the stream.

    Raises:
        TypeError: (at the call) if `s` is not a Stream or Device.

    Example:
        >>> import nuvec as mx
        >>> with mx.stream(mx.cpu) as s:
        ...     mx.default_stream(mx.cpu) == s
        True
    """
    return StreamContext(s)


class StreamContext:
    """The context manager of `stream(s)` (MLX's `StreamContext`): within its block, `s` is
    this thread's default stream and its device the default device; both are restored after.

    Example:
        >>> import nuvec as mx
        >>> with mx.StreamContext(mx.new_stream(mx.cpu)) as s:
        ...     mx.add(1, 2).stream == s
        True
    """

    __slots__ = ("_stream", "_saved")

    def __init__(self, s: Stream | ThreadLocalStream | Device | DeviceType):
        if s is not None and not isinstance(s, (Stream, ThreadLocalStream, Device, DeviceType)):
            raise _not_a_stream(public_caller("StreamContext"), s)
        self._stream = to_stream(s)
        self._saved: list[tuple[Stream | None, Device | None]] = []

    def __enter__(self) -> Stream:
        global _scoped
        self._saved.append((_state.stream, _state.device))
        with _lock:
            _scoped += 1
        _state.stream, _state.device = self._stream, self._stream.device
        return self._stream

    def __exit__(self, *exc: Any) -> None:
        global _scoped
        _state.stream, _state.device = self._saved.pop()
        with _lock:
            _scoped -= 1


def device_count(device_type: DeviceType) -> int:
    """How many devices of `device_type` nuvec can compute on here (0 for an unavailable GPU).

    Raises:
        TypeError: if `device_type` is not a `DeviceType`.

    Example:
        >>> import nuvec as mx
        >>> mx.device_count(mx.cpu)
        1
    """
    if not isinstance(device_type, DeviceType):
        raise TypeError(f"device_count: expected a DeviceType, got {type(device_type).__name__}")
    if not is_available(device_type):
        return 0
    return backend_for(device_type).device_count()


def device_info(d: Device | DeviceType | None = None) -> dict[str, Any]:
    """Facts about the device `d` (the default one if None), with MLX's keys where they
    apply: `name` (also as `device_name`), `architecture` and `memory_size` in bytes.

    Raises:
        RuntimeError: if the device is not available here.
        TypeError: if `d` is not a device.

    Example:
        >>> import nuvec as mx
        >>> sorted(mx.device_info(mx.cpu))[:3]
        ['architecture', 'device_name', 'memory_size']
    """
    dev = default_device() if d is None else _as_device(d, "device_info")
    _available(dev, "device_info")
    return backend_for(dev).device_info(dev.index)
