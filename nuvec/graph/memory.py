"""Memory figures: bytes held by evaluated arrays, as MLX's `get_active_memory` and friends.

Each evaluated node adds the bytes of the buffers its kernel allocated (not views of its inputs)
and gives them back when it is freed. The figures count nuvec's buffers, not Python objects.
"""

from __future__ import annotations

from typing import Any, Sequence


class _Counters:
    active = 0
    peak = 0


counters = _Counters()


def _root(data: Any) -> Any:
    base = getattr(data, "base", None)
    while base is not None:
        data = base
        base = getattr(data, "base", None)
    return data


def owned_bytes(outputs: Sequence[Any], inputs: Sequence[Any]) -> int:
    """Bytes of the buffers behind `outputs` that are not buffers of `inputs`."""
    if len(outputs) == 1 and getattr(outputs[0], "base", 0) is None:
        return outputs[0].nbytes
    input_roots = {id(_root(x)) for x in inputs}
    seen: set[int] = set()
    total = 0
    for out in outputs:
        root = _root(out)
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
    """Restarts peak tracking from the current active memory.

    Example:
        >>> import nuvec as mx
        >>> mx.reset_peak_memory()
        >>> a = mx.arange(256.0); mx.eval(a)
        >>> mx.get_peak_memory() >= a.nbytes
        True
    """
    counters.peak = counters.active


def get_cache_memory() -> int:
    """Bytes kept in a buffer cache; NumPy returns memory to the system, so always 0.

    Example:
        >>> import nuvec as mx
        >>> mx.get_cache_memory()
        0
    """
    return 0


def clear_cache() -> None:
    """Frees cached buffers (there is no cache on the CPU backend).

    Example:
        >>> import nuvec as mx
        >>> mx.clear_cache(); mx.get_cache_memory()
        0
    """
