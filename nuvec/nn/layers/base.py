"""Small helpers the layers share: argument normalization and the checks that make a bad
argument or input fail at the call, with a message naming the layer."""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from nuvec.graph import memory
from nuvec.graph.array import Array
from nuvec.graph.device import Device, default_device
from nuvec.ops.arguments import as_array, index_int, normalize_axis, real_number


def ntuple(value: Any, n: int, name: str, what: str = "size", low: int | None = None
           ) -> tuple[int, ...]:
    """`value` as a tuple of `n` ints (an int is repeated), each `>= low` when given.

    Raises:
        TypeError: if an entry is not an int (bools and floats included).
        ValueError: for a wrong count of entries or an entry below `low`.
    """
    if isinstance(value, (int, Array)) or not hasattr(value, "__iter__"):
        value = (value,) * n
    value = tuple(value)
    if len(value) != n:
        raise ValueError(f"{name}: expected an int or {n} values for {what}, got {value}")
    floor = -(2**63) if low is None else low
    return tuple(index_int(v, name, what, low=floor) for v in value)


def size_arg(value: Any, name: str, what: str, low: int = 1) -> int:
    """A layer's size argument (features, channels, heads) as a Python int `>= low`.

    Raises:
        TypeError: if `value` is not an int (bools and floats included).
        ValueError: if it is below `low`.
    """
    return index_int(value, name, what, low=low)


def real_or_array(value: Any, name: str, what: str) -> Any:
    """`value` unchanged if it is a real number or an array (nuvec's, or NumPy's with real
    values), broadcast against the input as MLX allows; otherwise a TypeError naming `name`.

    Example:
        >>> from nuvec.nn.layers.base import real_or_array
        >>> real_or_array(0.5, "elu", "alpha")
        0.5
    """
    numpy_real = isinstance(value, np.ndarray) and value.dtype.kind in "iuf"
    if not (isinstance(value, Array) or numpy_real):
        real_number(value, name, what, finite=False)
    return value


def input_array(x: Any, name: str) -> Array:
    """A layer's input as an array: arrays pass through, lists and scalars are converted;
    anything else raises the standard conversion error naming the layer."""
    return x if type(x) is Array else as_array(x, name)


def check_last_dim(x: Array, size: int, name: str, what: str) -> None:
    """Raises ValueError unless `x` has at least one axis and its last is `size` long."""
    shape = x.shape
    if not shape or shape[-1] != size:
        raise ValueError(f"{name}: expected inputs whose last dimension is {what}={size}, got "
                         f"shape {shape}")


def check_ndim(x: Array, low: int, high: int | None, name: str, layout: str) -> None:
    """Raises ValueError unless `low <= x.ndim <= high` (`high` None: no upper bound)."""
    if x.ndim < low or (high is not None and x.ndim > high):
        count = f"at least {low}" if high is None else (
            str(low) if low == high else f"{low} to {high}")
        raise ValueError(f"{name}: expected inputs with {count} dimensions {layout}, got shape "
                         f"{x.shape}")


def check_even_axis(x: Array, axis: Any, name: str) -> None:
    """Raises unless `axis` of `x` exists and has an even size (to split it in halves)."""
    if x.shape[normalize_axis(axis, x.ndim, name)] % 2:
        raise ValueError(f"{name}: the size of axis {axis} must be even, got shape {x.shape}")


def check_parameter_bytes(name: str, shape: tuple[int, ...], itemsize: int = 4,
                          dtype_name: str = "float32", device: Device | None = None) -> None:
    """Raises ValueError (naming the layer) for a parameter too large for the device."""
    memory.check_allocation(name, shape, itemsize, dtype_name, device or default_device())


def own_methods(cls: type, *names: str) -> type:
    """Gives `cls` its own copies of inherited methods `names`, their code named
    `cls.__name__ + '.' + name`, so Python's argument errors name the layer
    (`ReLU.__call__() takes 2 positional arguments...`) rather than a shared base."""
    for method in names:
        fn = getattr(cls, method)
        code = fn.__code__.replace(co_name=method, co_qualname=f"{cls.__name__}.{method}")
        copy = types.FunctionType(code, fn.__globals__, method, fn.__defaults__,
                                  fn.__closure__)
        copy.__kwdefaults__, copy.__doc__ = fn.__kwdefaults__, fn.__doc__
        copy.__qualname__ = f"{cls.__name__}.{method}"
        setattr(cls, method, copy)
    return cls
