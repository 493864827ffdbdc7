"""Zero-copy exchange with NumPy, PyTorch, JAX and CuPy: DLPack, the buffer protocol and the
array API namespace.

Installs `__dlpack__`, `__dlpack_device__`, `__buffer__` and `__array_namespace__` on `Array`
and defines `from_dlpack`. Evaluated CPU arrays are shared, never copied: NumPy's DLPack
implementation makes the capsules, and a small ctypes patch of the capsule's dtype field
carries bfloat16, which NumPy's DLPack cannot name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, leaf
from nuvec.graph.dlpack import BFLOAT_CODE, CPU_DEVICE, capsule_dtype, host_data
from nuvec.ops.arguments import bool_flag

__all__ = ["from_dlpack"]


def _host_view(a: Array) -> np.ndarray:
    """A writeable-flagged view of `a`'s host data where the buffer allows (DLPack consumers
    such as PyTorch refuse read-only capsules); nuvec never writes through it."""
    data = a._host()
    view = data.view()
    try:
        view.flags.writeable = True
    except ValueError:  # a read-only buffer (e.g. imported read-only) stays read-only
        pass
    return view


def _dlpack(self: Array, *, stream: Any = None, max_version: tuple[int, int] | None = None,
            dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """A DLPack capsule sharing this array's evaluated data (no copy; evaluates first).

    Args:
        stream: the consumer's stream; must be None or -1 for CPU data.
        max_version: the highest DLPack version the consumer understands.
        dl_device: the device the consumer wants; only the array's own device works.
        copy: True to export a copy, False to refuse a copy, None to share.

    Returns:
        A `PyCapsule` named "dltensor" (or "dltensor_versioned" when `max_version >= (1, 0)`).

    Raises:
        BufferError: if `dl_device` is another device.

    Example:
        >>> import nuvec as mx, numpy as np
        >>> np.from_dlpack(mx.array([1, 2])).tolist()
        [1, 2]
    """
    data = self._node.data
    if data is not None and type(data[self._index]) is not np.ndarray:
        return data[self._index].__dlpack__(stream=stream)  # a GPU buffer speaks for itself
    if dl_device is not None and tuple(dl_device) != (CPU_DEVICE, 0):
        raise BufferError(f"__dlpack__: the array is on the CPU, cannot export to {dl_device}")
    view = _host_view(self)
    if copy or (max_version is None and copy is None and not _compact(view)):
        # a consumer of the legacy protocol (no max_version: JAX) may refuse strides that are
        # not a permutation of a compact layout (broadcasts, steps): it gets a compact copy,
        # which `copy=None` allows. Versioned consumers (NumPy, PyTorch) share any layout.
        view = np.ascontiguousarray(view) if not copy else view.copy()
    bfloat = self.dtype is dt.bfloat16
    if bfloat:
        view = view.view(np.uint16)
    kwargs: dict[str, Any] = {}
    if max_version is not None:
        kwargs["max_version"] = max_version
    capsule = view.__dlpack__(**kwargs)
    if bfloat:
        capsule_dtype(capsule).code = BFLOAT_CODE
    return capsule


def _compact(view: np.ndarray) -> bool:
    """Whether `view`'s strides are a permutation of a compact (gap-free) layout."""
    dims = sorted((stride, size) for size, stride in zip(view.shape, view.strides) if size > 1)
    expected = view.itemsize
    for stride, size in dims:
        if stride != expected:
            return False
        expected *= size
    return True


def _dlpack_device(self: Array) -> tuple[int, int]:
    """(device type, device id) in DLPack's codes: (1, 0) for the CPU, (2, n) for CUDA GPU n."""
    data = self._node.data
    if data is not None and type(data[self._index]) is not np.ndarray:
        return tuple(data[self._index].__dlpack_device__())
    return (CPU_DEVICE, 0)


def from_dlpack(x: Any, /, *, copy: bool | None = None) -> Array:
    """An array sharing the memory of any DLPack producer (NumPy, PyTorch, JAX, CuPy, ...).

    CPU data is shared without a copy, strided and offset layouts included, in every dtype
    nuvec has (bfloat16 included); the dtype is kept (float64 stays float64). Data on a CUDA
    device is copied to the host (an imported array is a CPU array, on the CPU stream) unless
    `copy=False`, which then raises.

    Args:
        x: an object with `__dlpack__` and `__dlpack_device__`, or a nuvec array.
        copy: True to copy, False to refuse a copy, None to share where possible.

    Returns:
        An evaluated array.

    Raises:
        DtypeError: if the data's dtype has no nuvec dtype (complex128 converts to complex64
            unless `copy=False`), or the producer cannot export it.
        BufferError: if the data cannot be shared and `copy=False`.

    Example:
        >>> import nuvec as mx, numpy as np
        >>> x = np.arange(6, dtype=np.float64).reshape(2, 3)[:, ::2]
        >>> mx.from_dlpack(x)
        array([[0, 2],
               [3, 5]], dtype=float64)
    """
    if copy is not None:
        copy = bool_flag(copy, "from_dlpack", "copy")
    if isinstance(x, Array):
        return x
    if not hasattr(x, "__dlpack__"):
        raise dt.DtypeError(f"from_dlpack: expected an object with __dlpack__, got "
                            f"{type(x).__name__}")
    data = host_data(x, copy)
    if data.dtype == np.complex128:
        if copy is False:
            raise BufferError("from_dlpack: complex128 data needs a copy to become complex64")
        data = data.astype(np.complex64)
    return leaf(data, dt.from_numpy_dtype(data.dtype))


def _buffer(self: Array, flags: int) -> memoryview:
    """The buffer protocol (Python 3.12+, `memoryview(a)`): a read-only view of the evaluated
    data; bfloat16 shows as uint16 ("H"). On older Pythons use `np.asarray(a)`."""
    data = self._host()
    if self.dtype is dt.bfloat16:
        data = data.view(np.uint16)
    return memoryview(data).toreadonly()


def _array_namespace(self: Array, /, *, api_version: str | None = None) -> Any:
    """The array API namespace of nuvec arrays: the `nuvec` module itself (`xp.asarray`,
    `xp.zeros`, `xp.exp`, ...)."""
    import nuvec  # the namespace imports this module: read it at call time

    return nuvec


def _to_numpy(value: Any) -> Any:
    if isinstance(value, Array):
        return np.asarray(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_numpy(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_numpy(v) for k, v in value.items()}
    return value


def _array_function(self: Array, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
    """NumPy functions on nuvec arrays (`np.sum(a, axis=0)`, `np.all(a)`, `np.testing...`)
    run on NumPy views of the evaluated data and return NumPy results."""
    return func(*_to_numpy(args), **_to_numpy(kwargs))


Array.__array_function__ = _array_function
Array.__dlpack__ = _dlpack
Array.__dlpack_device__ = _dlpack_device
Array.__buffer__ = _buffer
Array.__array_namespace__ = _array_namespace
