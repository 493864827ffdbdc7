"""Saving and loading arrays in NumPy's `.npy` and `.npz` formats: MLX's `save`, `savez`,
`savez_compressed` and `load`.

Files are NumPy's own, so they round-trip with `numpy.save`/`numpy.load` and with MLX; bfloat16
is stored as 2-byte void data (`<V2`), which is how MLX writes and recognizes it.
"""

from __future__ import annotations

import io
import os
import zipfile
from typing import Any

import numpy as np

from nuvec.graph.array import Array
from nuvec.io.files import fail, host, read_buffer, to_array, view, writable

__all__ = ["load_npy", "load_npz", "save", "savez", "savez_compressed"]


def save(file: Any, arr: Array) -> None:
    """Saves one array to a `.npy` file (MLX's `save`); evaluates `arr`.

    Args:
        file: a path (str or `os.PathLike`; `.npy` is appended when missing) or a binary file
            object open for writing.
        arr: the array to save.

    Raises:
        TypeError: if `arr` is not an array.

    Example:
        >>> import io, nuvec as mx
        >>> f = io.BytesIO(); mx.save(f, mx.array([1, 2])); _ = f.seek(0)
        >>> mx.load(f, format="npy").tolist()
        [1, 2]
    """
    data = host(arr, "save")
    with writable(file, "npy", "save") as f:
        np.save(f, data, allow_pickle=False)


def _named(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, np.ndarray]:
    """NumPy's (and MLX's) archive names: positional arrays are `arr_0`, `arr_1`, ..."""
    named = {f"arr_{i}": host(a, op) for i, a in enumerate(args)}
    for name, a in kwargs.items():
        if name in named:
            raise ValueError(f"{op}: cannot use un-named variables and keyword {name}")
        named[name] = host(a, op)
    return named


def savez(file: Any, *args: Array, **kwargs: Array) -> None:
    """Saves several arrays to an uncompressed `.npz` archive (MLX's `savez`).

    Args:
        file: a path (`.npz` is appended when missing) or a binary file object.
        *args: arrays stored as `arr_0`, `arr_1`, ...
        **kwargs: arrays stored under their keyword, e.g. `mx.savez(f, **dict(flat_params))`.

    Raises:
        TypeError: if a value is not an array.
        ValueError: if a keyword collides with a positional name (`arr_0`, ...).

    Example:
        >>> import io, nuvec as mx
        >>> f = io.BytesIO(); mx.savez(f, mx.zeros((2,)), w=mx.ones((3,))); _ = f.seek(0)
        >>> sorted((k, v.shape) for k, v in mx.load(f, format="npz").items())
        [('arr_0', (2,)), ('w', (3,))]
    """
    named = _named("savez", args, kwargs)
    with writable(file, "npz", "savez") as f:
        np.savez(f, **named)


def savez_compressed(file: Any, *args: Array, **kwargs: Array) -> None:
    """Saves several arrays to a compressed `.npz` archive (MLX's `savez_compressed`).

    Args and errors as `savez`.

    Example:
        >>> import io, nuvec as mx
        >>> f = io.BytesIO(); mx.savez_compressed(f, x=mx.zeros((256,))); _ = f.seek(0)
        >>> mx.load(f, format="npz")["x"].shape
        (256,)
    """
    named = _named("savez_compressed", args, kwargs)
    with writable(file, "npz", "savez_compressed") as f:
        np.savez_compressed(f, **named)


def load_npy(file: Any) -> Array:
    """The array in `.npy` file `file`; a path is memory-mapped (no copy of the data)."""
    try:
        if isinstance(file, (str, bytes, os.PathLike)):
            data = np.asarray(np.load(file, mmap_mode="r", allow_pickle=False))
        else:
            data = np.load(file, allow_pickle=False)
    except OSError as exc:
        raise fail("load", file, f"cannot be opened ({exc.strerror or exc})") from None
    except (ValueError, EOFError) as exc:
        raise fail("load", file, f"is not a valid .npy file ({exc})") from None
    if not isinstance(data, np.ndarray):
        raise fail("load", file, "is not a valid .npy file")
    return to_array(data, "load", file)


def load_npz(file: Any) -> dict[str, Array]:
    """The arrays in `.npz` archive `file`, by name; the uncompressed members of an archive
    given by path are views of its memory map (`savez` stores them so)."""
    try:
        archive = np.load(file, allow_pickle=False)
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise fail("load", file, "is a .npy file, not a .npz archive")
        with archive:
            buffer = read_buffer(file, "load") if isinstance(file, (str, os.PathLike)) else None
            members = {n.removesuffix(".npy"): n for n in archive.zip.namelist()}
            out = {}
            for name in archive.files:
                info = archive.zip.getinfo(members[name])
                mapped = None if buffer is None else _stored_member(buffer, info)
                out[name] = to_array(archive[name] if mapped is None else mapped, "load", file)
            return out
    except OSError as exc:
        raise fail("load", file, f"cannot be opened ({exc.strerror or exc})") from None
    except (EOFError, zipfile.BadZipFile) as exc:
        raise fail("load", file, f"is not a valid .npz archive ({exc})") from None
    except ValueError as exc:
        if str(exc).startswith("load: "):
            raise
        raise fail("load", file, f"is not a valid .npz archive ({exc})") from None


def _stored_member(buffer: memoryview, info: zipfile.ZipInfo) -> np.ndarray | None:
    """A view of the `.npy` member `info` inside the mapped archive, or None when it is
    compressed (or its header is not one a view can follow)."""
    if info.compress_type != zipfile.ZIP_STORED or info.file_size < 10:
        return None
    local = bytes(buffer[info.header_offset:info.header_offset + 30])
    if len(local) < 30 or local[:4] != b"PK\x03\x04":
        return None
    start = info.header_offset + 30 + int.from_bytes(local[26:28], "little") + int.from_bytes(
        local[28:30], "little")
    head = io.BytesIO(bytes(buffer[start:start + min(info.file_size, 1 << 16)]))
    version = np.lib.format.read_magic(head)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(head)
    elif version in ((2, 0), (3, 0)):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(head)
    else:
        return None
    if dtype.hasobject or start + info.file_size > len(buffer):
        return None
    data = view(buffer, dtype, shape[::-1] if fortran else shape, start + head.tell())
    return data.T if fortran else data
