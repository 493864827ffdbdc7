"""Reading other libraries' arrays through DLPack: host NumPy data sharing a producer's memory,
bfloat16 included (NumPy's own `from_dlpack` refuses it), and the dtype field of a capsule
that nuvec's exporter (`nuvec.interop`) writes in place."""

from __future__ import annotations

import ctypes
from typing import Any

import ml_dtypes
import numpy as np

from nuvec.graph import dtypes as dt

__all__ = ["BFLOAT_CODE", "CPU_DEVICE", "capsule_data", "capsule_dtype", "host_data",
           "is_capsule"]

# DLPack's CPU device type and dtype codes (dlpack.h)
CPU_DEVICE = 1
UINT_CODE, BFLOAT_CODE = 1, 4
# Offsets of `DLTensor.dtype` in the two capsule layouts: `DLManagedTensor` starts with the
# DLTensor; `DLManagedTensorVersioned` has a version, manager context, deleter and flags first.
_DTYPE_OFFSET = {b"dltensor": 20, b"dltensor_versioned": 52}
_DEVICE_OFFSET = {b"dltensor": 8, b"dltensor_versioned": 40}  # `DLTensor.device`

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


def _field(capsule: Any, op: str, offsets: dict[bytes, int]) -> int:
    """The address of a `DLTensor` field inside an unconsumed DLPack capsule."""
    name = _get_name(capsule)
    if name not in offsets:
        raise BufferError(f"{op}: not an unconsumed DLPack capsule (name {name!r})")
    # the managed tensor's first field (versioned: after the version) points at the DLTensor
    # only through the struct layout, so read the field at its fixed offset
    return _get_pointer(capsule, name) + offsets[name]


def capsule_dtype(capsule: Any, op: str = "from_dlpack") -> _DataType:
    """The `DLDataType` inside an unconsumed DLPack capsule, writable in place."""
    return _DataType.from_address(_field(capsule, op, _DTYPE_OFFSET))


def is_capsule(x: Any) -> bool:
    """Whether `x` is a `PyCapsule` (a DLPack capsule handed over without its producer)."""
    return type(x).__name__ == "PyCapsule"


def capsule_data(capsule: Any, op: str) -> np.ndarray:
    """NumPy data sharing the memory of a DLPack capsule on the CPU (which it consumes, as
    MLX's `array` does: a capsule is read once).

    Raises:
        BufferError: for a capsule already read, or one holding GPU data (pass the producer,
            which can copy it to the host).
    """
    device = tuple((ctypes.c_int32 * 2).from_address(_field(capsule, op, _DEVICE_OFFSET)))
    if device[0] != CPU_DEVICE:
        raise BufferError(f"{op}: a DLPack capsule of data on device {device} cannot be read "
                          "on the CPU; pass the array that made it instead")
    return _shared_host_data(_Capsule(capsule, (CPU_DEVICE, 0)), None, op)


class _Capsule:
    """Hands NumPy's `from_dlpack` a capsule that was already taken from the producer."""

    def __init__(self, capsule: Any, device: tuple[int, int]):
        self._capsule, self._device = capsule, device

    def __dlpack__(self, **_: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device


def _take_capsule(x: Any, op: str) -> Any:
    try:
        try:
            return x.__dlpack__(max_version=(1, 0))
        except TypeError:  # a producer from before DLPack 1.0 takes no keywords
            return x.__dlpack__()
    except BufferError as e:  # the producer cannot export its data (an object dtype, ...)
        dtype = getattr(x, "dtype", None)
        of = f" of dtype {dtype}" if dtype is not None else ""
        raise dt.DtypeError(f"{op}: cannot import {type(x).__name__} data{of}: {e}") from None


def _shared_host_data(x: Any, copy: bool | None, op: str) -> np.ndarray:
    """NumPy data sharing the memory of CPU DLPack producer `x` (bfloat16 included)."""
    if copy:
        try:
            return np.from_dlpack(x, copy=True)
        except (TypeError, BufferError):
            pass  # older producers or bfloat16: share, then copy below
    capsule = _take_capsule(x, op)
    code = capsule_dtype(capsule, op)
    bfloat = code.code == BFLOAT_CODE and code.bits == 16
    if bfloat:
        code.code = UINT_CODE
    data = np.from_dlpack(_Capsule(capsule, (CPU_DEVICE, 0)))
    if bfloat:
        data = data.view(ml_dtypes.bfloat16)
    return data.copy() if copy else data


def host_data(x: Any, copy: bool | None, op: str = "from_dlpack") -> np.ndarray:
    """NumPy data of DLPack producer `x`: shared for CPU data (unless `copy`), a host copy of
    a GPU's (refused with `copy=False`).

    Raises:
        BufferError: for GPU data with `copy=False`.
        DtypeError: if the producer cannot export its dtype.
    """
    device = tuple(x.__dlpack_device__()) if hasattr(x, "__dlpack_device__") else (CPU_DEVICE, 0)
    if device[0] == CPU_DEVICE:
        return _shared_host_data(x, copy, op)
    if copy is False:
        raise BufferError(f"{op}: data on device {device} cannot be shared with the CPU "
                          "without a copy")
    return np.from_dlpack(x, device="cpu", copy=True)
