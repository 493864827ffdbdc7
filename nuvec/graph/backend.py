"""What the evaluator asks of a backend: the `Backend` protocol and the `KernelTable`.

The evaluator knows no array library: every step that touches data (running a kernel, coercing
its result, deciding whether an input buffer may be reused, error scopes, moving data between
devices, events and synchronization) is a method of the stream's backend. Backends live in
`nuvec.backends` and are imported on first use of their device (see `nuvec.graph.device`);
this module imports none.
"""

from __future__ import annotations

from typing import Any, Callable, ContextManager, Iterator, Protocol

from nuvec.graph.device import DeviceType, Stream

Kernel = Callable[..., Any]


class KernelTable:
    """The kernels of one backend: primitive class -> `kernel(primitive, *inputs)`.

    `kernels` is a plain dict (the evaluator's lookup is one `dict.get`); `writes_into` holds
    the classes whose kernel also takes `out=`, a buffer the evaluator gives up (an input buffer
    nothing else can see, so it may alias an input): the kernel may write its whole result
    there in one elementwise call and return it, or ignore it.

    Example:
        >>> from nuvec.graph.backend import KernelTable
        >>> table = KernelTable("example")
        >>> class Twice: pass
        >>> table.add(Twice, lambda p, x: 2 * x)
        >>> table.get(Twice)(None, 3), Twice in table
        (6, True)
    """

    __slots__ = ("name", "kernels", "writes_into", "get")

    def __init__(self, name: str):
        self.name = name
        self.kernels: dict[type, Kernel] = {}
        self.writes_into: set[type] = set()
        # `get(cls)`: the kernel of `cls` or None (the dict's own method: the evaluator's
        # per-node lookup runs no Python frame)
        self.get = self.kernels.get

    def add(self, cls: type, fn: Kernel, out: bool = False, replace: bool = False) -> None:
        """Registers `fn` as the kernel of `cls`; `replace=True` overrides an existing one.

        Raises:
            ValueError: if `cls` has a kernel already and `replace` is False.
        """
        if cls in self.kernels and not replace:
            raise ValueError(f"{self.name}: two kernels registered for {cls.__name__}")
        self.kernels[cls] = fn
        if out:
            self.writes_into.add(cls)
        else:
            self.writes_into.discard(cls)

    def register(
        self, *classes: type, out: bool = False, replace: bool = False
    ) -> Callable[[Kernel], Kernel]:
        """A decorator registering the function as the kernel of each class (see `add`)."""

        def decorate(fn: Kernel) -> Kernel:
            for cls in classes:
                self.add(cls, fn, out=out, replace=replace)
            return fn

        return decorate

    def __contains__(self, cls: object) -> bool:
        return cls in self.kernels

    def __iter__(self) -> Iterator[type]:
        return iter(self.kernels)

    def __len__(self) -> int:
        return len(self.kernels)


class Backend(Protocol):
    """What the evaluator needs from the backend of a device.

    Attributes:
        device_type: the `DeviceType` it computes on.
        kernels: its `KernelTable`.
        array_type: the type of the buffers its kernels return; a result of exactly this type
            and of the node's dtype is stored as it is, anything else goes through `coerce`.
        asynchronous: whether kernels return before their work is done (GPU streams); then
            `eval` calls `synchronize` before it returns, and inputs made on another stream of
            the device are ordered with `record_event`/`wait_event`.
    """

    device_type: DeviceType
    kernels: KernelTable
    array_type: type
    asynchronous: bool

    def available(self) -> bool:
        """Whether the device can compute here."""

    def unavailable_reason(self) -> str:
        """Why it cannot (what is missing and how to install it), or ''."""

    def scope(self, stream: Stream) -> ContextManager[Any]:
        """The context kernels of `stream` run in: its floating-point error state (kernels
        define their own results for 1/0 and NaN, never warnings) and current device stream."""

    def coerce(self, data: Any, dtype: Any, shape: tuple[int, ...]) -> Any:
        """A kernel result (a buffer of another dtype, a scalar) as a buffer of exactly
        `dtype` (a NumPy dtype) and `shape`."""

    def owned_bytes(self, outputs: list[Any], inputs: list[Any]) -> int:
        """Bytes of the buffers behind `outputs` that are not buffers of `inputs`."""

    def can_donate(self, data: Any, shape: tuple[int, ...], dtype: Any) -> bool:
        """Whether `data` (referenced by nothing but the evaluator) may become the output of an
        elementwise kernel of `shape` and `dtype`: it owns its memory, is writeable and large
        enough for reuse to pay."""

    def to_host(self, data: Any, stream: Stream) -> Any:
        """`data` made on `stream` as a NumPy array (waits for `stream`'s work on it)."""

    def from_host(self, data: Any, stream: Stream) -> Any:
        """A NumPy array as a buffer of this device, made on `stream`."""

    def record_event(self, stream: Stream) -> Any:
        """Marks the work enqueued on `stream` so far; returns the event."""

    def wait_event(self, stream: Stream, event: Any) -> None:
        """Makes later work on `stream` wait for `event` (without blocking the host)."""

    def synchronize(self, stream: Stream | None = None) -> None:
        """Blocks until the work on `stream` (or on every stream of the device) is done;
        raises a kernel failure found meanwhile."""

    def device_count(self) -> int:
        """How many devices of this type there are."""

    def device_info(self, index: int) -> dict[str, Any]:
        """MLX's `device_info` keys that apply: name, architecture, memory_size, ..."""

    def cache_memory(self) -> int:
        """Bytes kept in the backend's buffer cache (0 without one)."""

    def clear_cache(self) -> None:
        """Returns cached buffers to the system."""

    def set_memory_limit(self, limit: int) -> None:
        """Caps the bytes the backend may allocate (where it can enforce a cap)."""

    def set_cache_limit(self, limit: int) -> None:
        """Caps the bytes kept in its cache (where it has one)."""
