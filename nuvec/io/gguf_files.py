"""The GGUF format (llama.cpp's model files), read and written without the `gguf` package:
MLX's `save_gguf` and the GGUF half of `load`.

A file is a header (magic `GGUF`, version 2 or 3, tensor and key-value counts), typed
key-value metadata, tensor descriptions (name, dimensions fastest first, type, offset) and the
tensor data, each tensor aligned to `general.alignment` (32 by default) bytes. Unquantized
tensors are views of the file's memory map; quantized ones are repacked or dequantized
(`nuvec.io.gguf_quants`).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from nuvec.graph.dtypes import DtypeError
from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.io import gguf_quants as quants
from nuvec.io.files import fail, host, read_buffer, to_array, view, writable

__all__ = ["load_gguf", "save_gguf"]

_SCALARS = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "?",
            10: "<u8", 11: "<i8", 12: "<f8"}
_STRING, _ARRAY = 8, 9
_VALUE_CODES = {np.dtype(v).newbyteorder("="): k for k, v in _SCALARS.items()}
_TENSOR_CODES = {"float32": 0, "float16": 1, "int8": 24, "int16": 25, "int32": 26,
                 "int64": 27, "float64": 28, "bfloat16": 30}
DEFAULT_ALIGNMENT = 32


class _Reader:
    """Bounds-checked reads from the start of a GGUF buffer; running off its end is a
    truncated file."""

    def __init__(self, buffer: memoryview, file: Any):
        self.buffer, self.file, self.pos = buffer, file, 0

    def take(self, count: int, what: str) -> memoryview:
        if count > len(self.buffer) - self.pos:
            raise fail("load", self.file, f"is truncated: {what} needs {count} bytes at offset "
                       f"{self.pos}, but the file has {len(self.buffer)} bytes")
        out = self.buffer[self.pos:self.pos + count]
        self.pos += count
        return out

    def scalar(self, fmt: str, what: str) -> Any:
        return struct.unpack("<" + fmt, self.take(struct.calcsize(fmt), what))[0]

    def string(self, what: str) -> str:
        raw = self.take(self.scalar("Q", what), what)
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            raise fail("load", self.file, f"{what} is not UTF-8 text") from None

    def count(self, smallest: int, what: str) -> int:
        """A 64-bit count of items of at least `smallest` bytes each, checked to fit."""
        n = self.scalar("Q", what)
        if n * smallest > len(self.buffer) - self.pos:
            raise fail("load", self.file, f"declares {n} {what}, more than its "
                       f"{len(self.buffer)} bytes can hold (truncated or not a GGUF file)")
        return n

    def value(self, kind: int, what: str) -> Any:
        """One metadata value as MLX returns it: numbers as arrays, strings as str."""
        if kind == _STRING:
            return self.string(what)
        if kind in _SCALARS:
            return to_array(self._numbers(kind, 1, what).reshape(()).copy())
        if kind == _ARRAY:
            inner = self.scalar("I", what)
            if inner in _SCALARS:
                n = self.count(np.dtype(_SCALARS[inner]).itemsize, f"values in {what}")
                return to_array(self._numbers(inner, n, what).copy())
            if inner in (_STRING, _ARRAY):
                n = self.count(8, f"items in {what}")
                return [self.value(inner, what) for _ in range(n)]
            kind = inner
        raise fail("load", self.file, f"{what} has an unknown value type {kind}")

    def _numbers(self, kind: int, n: int, what: str) -> np.ndarray:
        dtype = np.dtype(_SCALARS[kind])
        return np.frombuffer(self.take(n * dtype.itemsize, what), dtype=dtype)


def load_gguf(file: Any) -> tuple[dict[str, Array], dict[str, Any]]:
    """The arrays (Q4_0/Q4_1/Q8_0 repacked, other quantized types dequantized to float16)
    and the metadata of a GGUF file."""
    buffer = read_buffer(file, "load")
    r = _Reader(buffer, file)
    tensor_count, kv_count = _preamble(r)
    metadata = {}
    for _ in range(kv_count):
        key = r.string("a metadata key")
        metadata[key] = r.value(r.scalar("I", f"the type of {key!r}"), f"metadata {key!r}")
    infos = [_tensor_info(r) for _ in range(tensor_count)]
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    alignment = int(alignment.item()) if isinstance(alignment, Array) else alignment
    if not isinstance(alignment, int) or alignment <= 0 or alignment % 8:
        raise fail("load", file, f"has an invalid general.alignment {alignment!r}")
    start = r.pos + (-r.pos % alignment)
    arrays: dict[str, Array] = {}
    for name, shape, kind, offset in infos:
        for key, data in _tensor(buffer, file, name, shape, kind, start + offset):
            if key in arrays:
                raise fail("load", file, f"has two tensors named {key!r}")
            arrays[key] = to_array(data, "load", file)
    return arrays, metadata


def _preamble(r: _Reader) -> tuple[int, int]:
    """Checks the magic and version; returns the tensor and key-value counts."""
    magic = bytes(r.take(4, "the magic number"))
    if magic != b"GGUF":
        raise fail("load", r.file, f"is not a GGUF file (it starts with {magic!r}, not b'GGUF')")
    version = r.scalar("I", "the version")
    if version not in (2, 3):
        swapped = struct.unpack(">I", struct.pack("<I", version))[0]
        problem = ("is a big-endian GGUF file, which nuvec does not read" if swapped in (2, 3)
                   else f"has GGUF version {version}; nuvec reads versions 2 and 3")
        raise fail("load", r.file, problem)
    return r.count(24, "tensors"), r.count(12, "metadata entries")


def _tensor_info(r: _Reader) -> tuple[str, tuple[int, ...], int, int]:
    """One tensor description: name, NumPy shape (dimensions reversed), type, offset."""
    name = r.string("a tensor name")
    ndim = r.scalar("I", f"the rank of tensor {name!r}")
    if ndim > 8:
        raise fail("load", r.file, f"tensor {name!r} has {ndim} dimensions (GGUF allows 4)")
    dims = [r.scalar("Q", f"the shape of tensor {name!r}") for _ in range(ndim)]
    kind = r.scalar("I", f"the type of tensor {name!r}")
    offset = r.scalar("Q", f"the offset of tensor {name!r}")
    return name, tuple(reversed(dims)), kind, offset


def _tensor(buffer: memoryview, file: Any, name: str, shape: tuple[int, ...], kind: int,
            offset: int) -> list[tuple[str, np.ndarray]]:
    """The named NumPy arrays one tensor loads as (three for a repacked quantized one)."""
    if kind not in quants.TYPES:
        label = quants.NAMES.get(kind, f"unknown ({kind})")
        raise fail("load", file, f"tensor {name!r} has type {label}, which nuvec cannot load "
                   f"(it repacks {', '.join(quants.REPACKED)} and dequantizes "
                   f"{', '.join(quants.DEQUANTIZED)})")
    label, block, size, dtype = quants.TYPES[kind]
    columns = shape[-1] if shape else 1
    if columns % block:
        raise fail("load", file, f"tensor {name!r} of type {label} has rows of {columns} "
                   f"values, not a multiple of its block of {block}")
    nbytes = int(np.prod(shape, dtype=object)) // block * size
    if offset + nbytes > len(buffer):
        raise fail("load", file, f"is truncated: tensor {name!r} needs bytes {offset} to "
                   f"{offset + nbytes}, but the file has {len(buffer)} bytes")
    if dtype is not None:
        return [(name, view(buffer, dtype, shape, offset))]
    raw = view(buffer, np.dtype(np.uint8), (nbytes,), offset)
    if label in quants.DEQUANTIZED or len(shape) < 2:
        return [(name, quants.dequantize(label, raw, shape))]
    prefix = name.removesuffix(".weight")
    w_q, scales, biases = quants.repack(label, raw, shape)
    return [(name, w_q), (prefix + ".scales", scales), (prefix + ".biases", biases)]


def save_gguf(file: Any, arrays: dict[str, Array], metadata: dict[str, Any] | None = None
              ) -> None:
    """Saves a dict of arrays and metadata to a `.gguf` file (MLX's `save_gguf`).

    Args:
        file: a path (`.gguf` is appended when missing) or a binary file object.
        arrays: names to arrays of float32, float16, bfloat16, float64, int8, int16, int32
            or int64 (the unquantized tensor types of GGUF).
        metadata: keys to values: a str, a list of str, or a scalar or 1-D array of a type
            GGUF metadata has (bool, 8- to 64-bit integers, float32, float64).

    Raises:
        TypeError: for an array dtype or metadata value GGUF cannot hold.
        ValueError: for a metadata array with more than one dimension.

    Example:
        >>> import io, nuvec as mx
        >>> f = io.BytesIO()
        >>> mx.save_gguf(f, {"w": mx.ones((2, 3))}, {"name": "demo", "n": mx.array(3)})
        >>> _ = f.seek(0); w, meta = mx.load(f, format="gguf", return_metadata=True)
        >>> w["w"].shape, meta["name"], meta["n"].item()
        ((2, 3), 'demo', 3)
    """
    if not isinstance(arrays, dict):
        raise TypeError(f"save_gguf: arrays must be a dict, got {type(arrays).__name__}")
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict):
        raise TypeError(f"save_gguf: metadata must be a dict, got {type(metadata).__name__}")
    parts = [b"GGUF", struct.pack("<IQQ", 3, len(arrays), len(metadata))]
    for key, value in metadata.items():
        parts += [_string(key, "metadata keys"), _metadata_value(key, value)]
    datas, offset = [], 0
    for name, a in arrays.items():
        data = np.ascontiguousarray(host(a, "save_gguf"))
        if a.dtype.name not in _TENSOR_CODES:
            raise DtypeError(f"save_gguf: GGUF has no tensor type for {a.dtype.name} "
                             f"(array {name!r}); use one of {', '.join(_TENSOR_CODES)}")
        dims = tuple(reversed(a.shape))  # (no dimensions for a 0-d array, as MLX writes)
        parts += [_string(name, "array names"), struct.pack(f"<I{len(dims)}Q", len(dims), *dims),
                  struct.pack("<IQ", _TENSOR_CODES[a.dtype.name], offset)]
        datas.append(data)
        offset += data.nbytes + (-data.nbytes % DEFAULT_ALIGNMENT)
    header = b"".join(parts)
    with writable(file, "gguf", "save_gguf") as f:
        f.write(header + b"\0" * (-len(header) % DEFAULT_ALIGNMENT))
        for data in datas:
            f.write(data.reshape(-1).view(np.uint8).data)
            f.write(b"\0" * (-data.nbytes % DEFAULT_ALIGNMENT))


def _string(text: Any, what: str) -> bytes:
    if not isinstance(text, str):
        raise TypeError(f"save_gguf: {what} must be strings, got {text!r}")
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def _metadata_value(key: str, value: Any) -> bytes:
    """The type code and bytes of one metadata value."""
    if isinstance(value, str):
        return struct.pack("<I", _STRING) + _string(value, "metadata strings")
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = b"".join(_string(v, "metadata strings") for v in value)
        return struct.pack("<IIQ", _ARRAY, _STRING, len(value)) + items
    if not isinstance(value, Array):
        raise TypeError(f"save_gguf: metadata {key!r} must be a str, a list of str or an "
                        f"array, got {type(value).__name__}")
    data = host(value, "save_gguf")
    code = _VALUE_CODES.get(data.dtype) if value.dtype is not dt.bfloat16 else None
    if code is None:
        raise DtypeError(f"save_gguf: GGUF metadata cannot hold {value.dtype.name} "
                         f"(metadata {key!r})")
    if data.ndim > 1:
        raise ValueError(f"save_gguf: metadata {key!r} must be a scalar or 1-D array, got "
                         f"shape {data.shape}")
    raw = np.ascontiguousarray(data).tobytes()
    if data.ndim == 0:
        return struct.pack("<I", code) + raw
    return struct.pack("<IIQ", _ARRAY, code, data.size) + raw

