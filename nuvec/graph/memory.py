"""Memory figures and limits, as MLX's `get_active_memory`, `set_memory_limit` and friends.

Each evaluated node adds the bytes of the buffers its kernel allocated (not views of its inputs)
and gives them back when it is freed, on every device. The figures count nuvec's buffers, not
Python objects. The cache figures and limits go to the backends in use: CuPy's memory pool on
the GPU; on the CPU, the free memory the C allocator keeps (glibc's; `nuvec.backends.numpy.heap`).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from nuvec.graph.caller import public_caller
from nuvec.graph.device import Device, backend_for, default_device, loaded_backends


class _Counters:
    active = 0
    peak = 0


counters = _Counters()


def root_buffer(data: Any) -> Any:
    """The array owning `data`'s memory (`data` itself unless it is a view of one)."""
    base = getattr(data, "base", None)
    while base is not None and hasattr(base, "nbytes"):
        data = base
        base = getattr(data, "base", None)
    return data


def owned_bytes(outputs: Sequence[Any], inputs: Sequence[Any]) -> int:
    """Bytes of the buffers behind `outputs` that are not buffers of `inputs`."""
    if len(outputs) == 1 and getattr(outputs[0], "base", 0) is None:
        return outputs[0].nbytes
    input_roots = {id(root_buffer(x)) for x in inputs}
    seen: set[int] = set()
    total = 0
    for out in outputs:
        root = root_buffer(out)
        if id(root) in input_roots or id(root) in seen:
            continue
        seen.add(id(root))
        total += getattr(root, "nbytes", 0)
    return total


def allocate(nbytes: int) -> None:
    """Counts `nbytes` more as held; a node gives them back when it is freed (`Node.__del__`)."""
    counters.active += nbytes
    if counters.active > counters.peak:
        counters.peak = counters.active


def get_active_memory() -> int:
    """Bytes currently held by evaluated arrays.

    Example:
        >>> import nuvec as mx
        >>> a = mx.arange(256.0); mx.eval(a)
        >>> mx.get_active_memory() >= a.nbytes
        True
    """
    return counters.active


def get_peak_memory() -> int:
    """The largest `get_active_memory()` seen since start or `reset_peak_memory()`.

    Example:
        >>> import nuvec as mx
        >>> a = mx.arange(256.0); mx.eval(a)
        >>> mx.get_peak_memory() >= mx.get_active_memory() >= a.nbytes
        True
    """
    return counters.peak


def reset_peak_memory() -> None:
    """Resets the peak memory to zero, as MLX's (the next buffer made sets it again).

    Example:
        >>> import nuvec as mx
        >>> mx.reset_peak_memory()
        >>> a = mx.arange(256.0); mx.eval(a)
        >>> mx.get_peak_memory() >= a.nbytes
        True
    """
    counters.peak = 0


def get_cache_memory() -> int:
    """Bytes kept in buffer caches: CuPy's pool on the GPU; on the CPU, the free bytes glibc's
    allocator holds for the next buffers (after `clear_cache` their pages are the system's,
    though they count until reused; 0 without glibc).

    Example:
        >>> import nuvec as mx
        >>> mx.get_cache_memory() >= 0
        True
    """
    return sum(b.cache_memory() for b in loaded_backends())


def clear_cache() -> None:
    """Frees cached buffers: CuPy's pool on the GPU; on the CPU, hands the allocator's free
    memory back to the system (`malloc_trim`).

    Example:
        >>> import nuvec as mx
        >>> mx.clear_cache()
    """
    for b in loaded_backends():
        b.clear_cache()


class _Limits:
    memory: int | None = None  # None: not set yet (the default device's memory size)
    cache: int | None = None
    wired = 0


limits = _Limits()


def _check_limit(name: str, limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"{name}: limit must be a non-negative int of bytes, got {limit!r}")
    return limit


def set_memory_limit(limit: int) -> int:
    """Sets the bytes nuvec may allocate; returns the previous limit.

    On the GPU the limit is enforced: CuPy's pool refuses allocations past it (an evaluation
    then fails with an out-of-memory `EvaluationError`). On the CPU it is advisory, as MLX's
    limit is a guideline: NumPy allocates from the system. The default is the default device's
    memory size.

    Args:
        limit: bytes (a non-negative int).

    Returns:
        The previous limit.

    Raises:
        ValueError: if `limit` is not a non-negative int.

    Example:
        >>> import nuvec as mx
        >>> old = mx.set_memory_limit(1 << 30)
        >>> mx.set_memory_limit(old) == 1 << 30
        True
    """
    limit = _check_limit("set_memory_limit", limit)
    previous = get_memory_limit()
    limits.memory = limit
    for b in loaded_backends():
        b.set_memory_limit(limit)
    return previous


def get_memory_limit() -> int:
    """The bytes nuvec may allocate (see `set_memory_limit`): by default the default
    device's memory size.

    Example:
        >>> import nuvec as mx
        >>> old = mx.set_memory_limit(1 << 30)
        >>> mx.get_memory_limit()
        1073741824
        >>> _ = mx.set_memory_limit(old)
    """
    return device_memory(default_device()) if limits.memory is None else limits.memory


def set_cache_limit(limit: int) -> int:
    """Sets the bytes buffer caches may keep; returns the previous limit.

    On the GPU, a cache above the limit is returned to the device when the limit is set and
    after each `clear_cache`; 0 keeps no cache. On the CPU (with glibc) buffers below the limit
    come from the C allocator's heap, and up to the limit of freed memory (at most 2 GiB) stays
    there for the next ones, so a step's same-sized arrays reuse mapped pages instead of
    faulting in fresh ones; 0 restores glibc's fixed defaults. The setting is the process's.
    The default is the memory limit.

    Args:
        limit: bytes (a non-negative int).

    Returns:
        The previous limit.

    Raises:
        ValueError: if `limit` is not a non-negative int.

    Example:
        >>> import nuvec as mx
        >>> old = mx.set_cache_limit(0)
        >>> mx.set_cache_limit(old)
        0
    """
    limit = _check_limit("set_cache_limit", limit)
    previous = limits.cache
    if previous is None:
        previous = device_memory(default_device()) if limits.memory is None else limits.memory
    limits.cache = limit
    for b in loaded_backends():
        b.set_cache_limit(limit)
    return previous


def set_wired_limit(limit: int) -> int:
    """Sets MLX's wired (resident) memory limit; returns the previous one.

    Wired memory is a Metal concept (buffers kept resident on Apple silicon): no nuvec device
    has it, so the value is kept and returned but changes nothing. The default is 0.

    Args:
        limit: bytes (a non-negative int).

    Returns:
        The previous limit.

    Raises:
        ValueError: if `limit` is not a non-negative int.

    Example:
        >>> import nuvec as mx
        >>> mx.set_wired_limit(0)
        0
    """
    limit = _check_limit("set_wired_limit", limit)
    previous, limits.wired = limits.wired, limit
    return previous


_device_memory: dict[Device, int] = {}

# arrays below this size are never checked (the common case costs one multiplication)
_SMALL = 1 << 30


def device_memory(device: Device) -> int:
    """The memory size of `device` in bytes (its `device_info`; cached).

    Example:
        >>> import nuvec as mx
        >>> from nuvec.graph.memory import device_memory
        >>> device_memory(mx.default_device()) > 0
        True
    """
    size = _device_memory.get(device)
    if size is None:
        info = backend_for(device).device_info(device.index)
        size = _device_memory[device] = int(info.get("memory_size", 0)) or 2**63
    return size


def check_allocation(op: str, shape: Sequence[int], itemsize: int, dtype_name: str,
                     device: Device) -> None:
    """Raises, at the call, for an array whose buffer could not exist on `device`: its bytes
    exceed the device's memory (`device_memory`). Views (broadcasts, transposes, slices) are
    not allocations and are not checked.

    Args:
        op: the name for the message (the public function called is found from the stack).
        shape: the array's shape.
        itemsize: bytes per element.
        dtype_name: the dtype's name, for the message.
        device: the device the array would live on.

    Raises:
        ValueError: if the array's bytes exceed the device's memory.

    Example:
        >>> import nuvec as mx
        >>> from nuvec.graph.memory import check_allocation
        >>> check_allocation("zeros", (2, 3), 4, "float32", mx.default_device())
    """
    nbytes = math.prod(shape) * itemsize
    if nbytes <= _SMALL:
        return
    limit = device_memory(device)
    if nbytes > limit:
        raise ValueError(f"{public_caller(op)}: an array of shape {tuple(shape)} and dtype "
                         f"{dtype_name} needs {nbytes} bytes, more than the {limit} bytes of "
                         f"memory of {device}")
