"""The safetensors format: an 8-byte little-endian header length, a JSON header naming each
tensor's dtype, shape and byte range, then the tensors' bytes. MLX's `save_safetensors` and
the safetensors half of `load`."""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

from nuvec.graph.dtypes import DtypeError
from nuvec.graph.array import Array
from nuvec.io.files import describe, fail, host, read_buffer, to_array, view, writable

__all__ = ["load_safetensors", "save_safetensors"]

# The safetensors library refuses headers above 100 MB; so does nuvec.
MAX_HEADER_BYTES = 100_000_000

_CODES = {
    "BOOL": np.dtype(np.bool_), "U8": np.dtype(np.uint8), "I8": np.dtype(np.int8),
    "U16": np.dtype("<u2"), "I16": np.dtype("<i2"), "U32": np.dtype("<u4"),
    "I32": np.dtype("<i4"), "U64": np.dtype("<u8"), "I64": np.dtype("<i8"),
    "F16": np.dtype("<f2"), "F32": np.dtype("<f4"), "F64": np.dtype("<f8"),
    "C64": np.dtype("<c8"), "BF16": np.dtype("V2"),
}
# Codes of the safetensors specification that nuvec has no dtype for.
_UNSUPPORTED = ("F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "E8M0")
_NAMES = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "uint16": "U16", "int16": "I16",
          "uint32": "U32", "int32": "I32", "uint64": "U64", "int64": "I64", "float16": "F16",
          "bfloat16": "BF16", "float32": "F32", "float64": "F64", "complex64": "C64"}


def save_safetensors(file: Any, arrays: dict[str, Array],
                     metadata: dict[str, str] | None = None) -> None:
    """Saves a dict of arrays to a `.safetensors` file (MLX's `save_safetensors`).

    The header's `__metadata__` holds `metadata` as given (no such entry without metadata), as
    MLX writes it, so the file loads in MLX, in the `safetensors` library (NumPy or PyTorch) and
    back in nuvec.

    Args:
        file: a path (`.safetensors` is appended when missing) or a binary file object.
        arrays: names to arrays (every nuvec dtype, bfloat16 and complex64 included).
        metadata: string keys to string values stored in the header.

    Raises:
        TypeError: if a value is not an array, a name is not a string, or metadata is not a
            dict of strings to strings.
        ValueError: if a name is `__metadata__`.

    Example:
        >>> import io, nuvec as mx
        >>> f = io.BytesIO(); mx.save_safetensors(f, {"w": mx.ones((2, 2))}, {"step": "3"})
        >>> _ = f.seek(0); w, meta = mx.load(f, format="safetensors", return_metadata=True)
        >>> w["w"].shape, meta["step"]
        ((2, 2), '3')
    """
    if not isinstance(arrays, dict):
        raise TypeError(f"save_safetensors: arrays must be a dict, got {type(arrays).__name__}")
    meta = _metadata(metadata)
    header: dict[str, Any] = {"__metadata__": meta} if meta else {}
    datas, offset = [], 0
    for name, a in arrays.items():
        if not isinstance(name, str):
            raise TypeError(f"save_safetensors: names must be strings, got {name!r}")
        if name == "__metadata__":
            raise ValueError("save_safetensors: '__metadata__' is reserved for the metadata")
        data = np.ascontiguousarray(host(a, "save_safetensors"))  # native: little-endian
        # `a.shape`, not `data.shape`: `ascontiguousarray` makes a 0-d array 1-D
        header[name] = {"dtype": _NAMES[a.dtype.name], "shape": list(a.shape),
                        "data_offsets": [offset, offset + data.nbytes]}
        datas.append(data)
        offset += data.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as the library writes it
    with writable(file, "safetensors", "save_safetensors") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in datas:
            f.write(data.reshape(-1).view(np.uint8).data)


def _metadata(metadata: Any) -> dict[str, str]:
    """`metadata` checked to be strings to strings."""
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise TypeError("save_safetensors: metadata must be a dict of strings to strings, "
                        f"got {metadata!r}")
    return metadata


def load_safetensors(file: Any) -> tuple[dict[str, Array], dict[str, str]]:
    """The arrays of a safetensors file (views of its memory map) and its metadata."""
    buffer = read_buffer(file, "load")
    header, start = _header(buffer, file)
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise fail("load", file, "the header's __metadata__ is not a dict of strings")
    entries = [(name, *_entry(name, info, file)) for name, info in header.items()]
    _check_layout(entries, len(buffer) - start, file)
    arrays = {}
    for name, dtype, shape, (begin, _) in entries:
        arrays[name] = to_array(view(buffer, dtype, shape, start + begin), "load", file)
    return arrays, meta


def _header(buffer: memoryview, file: Any) -> tuple[dict[str, Any], int]:
    """The parsed JSON header and the offset of the data after it."""
    if len(buffer) < 8:
        raise fail("load", file, f"is truncated: {len(buffer)} bytes, fewer than the 8 of the "
                   "safetensors header length")
    (size,) = struct.unpack("<Q", buffer[:8])
    if size > MAX_HEADER_BYTES:
        raise fail("load", file, f"has an oversized header: {size} bytes declared, at most "
                   f"{MAX_HEADER_BYTES} allowed (not a safetensors file?)")
    if 8 + size > len(buffer):
        raise fail("load", file, f"is truncated: the header declares {size} bytes but the file "
                   f"has {len(buffer)} bytes")
    try:
        header = json.loads(bytes(buffer[8:8 + size]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise fail("load", file, f"has a header that is not JSON ({exc}); not a safetensors "
                   "file?") from None
    if not isinstance(header, dict):
        raise fail("load", file, "has a header that is not a JSON object")
    return header, 8 + size


def _entry(name: str, info: Any, file: Any) -> tuple[np.dtype, tuple[int, ...], tuple[int, int]]:
    """`(dtype, shape, (begin, end))` of one header entry, checked."""
    if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= info.keys():
        raise fail("load", file, f"tensor {name!r} lacks dtype, shape or data_offsets")
    code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if code in _UNSUPPORTED:
        raise DtypeError(f"load: {describe(file)}: tensor {name!r} has dtype {code}, "
                         "which nuvec does not have")
    if code not in _CODES:
        raise fail("load", file, f"tensor {name!r} has an unknown dtype {code!r}")
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise fail("load", file, f"tensor {name!r} has an invalid shape {shape!r}")
    if (not isinstance(offsets, list) or len(offsets) != 2
            or not all(type(o) is int and o >= 0 for o in offsets) or offsets[0] > offsets[1]):
        raise fail("load", file, f"tensor {name!r} has invalid data_offsets {offsets!r}")
    dtype = _CODES[code]
    expected = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if offsets[1] - offsets[0] != expected:
        raise fail("load", file, f"tensor {name!r} of dtype {code} and shape {tuple(shape)} "
                   f"needs {expected} bytes, but its data_offsets {offsets} span "
                   f"{offsets[1] - offsets[0]}")
    return dtype, tuple(shape), (offsets[0], offsets[1])


def _check_layout(entries: list[Any], size: int, file: Any) -> None:
    """The tensors must tile the data exactly, as the safetensors library requires: a file
    that ends early is truncated, one with gaps, overlaps or trailing bytes is malformed."""
    end = 0
    for name, _, _, (begin, stop) in sorted(entries, key=lambda e: e[3]):
        if begin != end:
            raise fail("load", file, f"tensor {name!r} starts at data byte {begin}, expected "
                       f"{end} (overlapping or missing data)")
        end = stop
    if end > size:
        raise fail("load", file, f"is truncated: the tensors need {end} data bytes but the file "
                   f"has {size}")
    if end < size:
        raise fail("load", file, f"has {size - end} bytes after the last tensor's data")
