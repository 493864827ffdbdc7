"""What every file format shares: file names, errors that name the file, memory-mapped reads
and the conversion of stored data into nuvec arrays."""

from __future__ import annotations

import mmap
import os
import tempfile
from typing import Any

import ml_dtypes
import numpy as np

from nuvec.graph.dtypes import DtypeError
from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array, leaf

__all__ = ["describe", "fail", "host", "read_buffer", "to_array", "with_extension", "writable"]


def describe(file: Any) -> str:
    """How errors name `file`: its path, a file object's `name`, or `<file object>`."""
    if isinstance(file, (str, bytes, os.PathLike)):
        return repr(os.fsdecode(file))
    name = getattr(file, "name", None)
    return repr(os.fsdecode(name)) if isinstance(name, (str, bytes)) else "<file object>"


def fail(op: str, file: Any, problem: str) -> ValueError:
    """The ValueError for a file that cannot be read: `op: 'name': problem`."""
    return ValueError(f"{op}: {describe(file)}: {problem}")


def host(a: Any, op: str) -> np.ndarray:
    """The evaluated data of array `a` (a NumPy array of its dtype)."""
    if not isinstance(a, Array):
        raise TypeError(f"{op}: expected an array, got {type(a).__name__}")
    return np.asarray(a)


def with_extension(file: Any, extension: str) -> Any:
    """A path gets `.extension` appended when it lacks it (MLX's rule); file objects pass."""
    if isinstance(file, (str, os.PathLike)):
        path = os.fspath(file)
        return path if path.endswith("." + extension) else f"{path}.{extension}"
    return file


class writable:
    """A context manager giving a binary file to write: a path is written to a temporary file
    beside it that replaces it only when complete (so arrays still mapped from the old file,
    such as weights saved back where they were loaded from, stay valid, and a failed write
    leaves no partial file); a file object is borrowed."""

    def __init__(self, file: Any, extension: str, op: str):
        if not isinstance(file, (str, os.PathLike)) and not hasattr(file, "write"):
            raise TypeError(f"{op}: file must be a path or a binary file object, got "
                            f"{type(file).__name__}")
        self.file, self.extension, self.handle = file, extension, None

    def __enter__(self) -> Any:
        if isinstance(self.file, (str, os.PathLike)):
            self.path = with_extension(self.file, self.extension)
            folder, name = os.path.split(os.path.abspath(self.path))
            fd, self.temporary = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
            self.handle = os.fdopen(fd, "wb")
            return self.handle
        return self.file

    def __exit__(self, kind: object, *exc: object) -> None:
        if self.handle is None:
            return
        self.handle.close()
        if kind is None:
            os.chmod(self.temporary, 0o666 & ~_umask())
            os.replace(self.temporary, self.path)
        else:
            os.unlink(self.temporary)


def _umask() -> int:
    """The process's file creation mask (mkstemp makes files private; saved files are not)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_buffer(file: Any, op: str) -> memoryview:
    """The bytes of `file`, memory-mapped read-only when it is a path or a file object at its
    start with a descriptor; otherwise read into memory. Arrays viewing the result keep the
    map alive, so no data is copied."""
    if isinstance(file, (str, bytes, os.PathLike)):
        try:
            with open(file, "rb") as f:
                return _map(f)
        except OSError as exc:
            raise fail(op, file, f"cannot be opened ({exc.strerror or exc})") from None
    if not hasattr(file, "read"):
        raise TypeError(f"{op}: file must be a path or a binary file object, got "
                        f"{type(file).__name__}")
    try:
        if file.tell() == 0:
            return _map(file)
    except (AttributeError, OSError, ValueError):
        pass  # no descriptor (BytesIO) or not mappable (a pipe): read the bytes instead
    data = file.read()
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"{op}: the file object must be opened in binary mode")
    return memoryview(data)


def _map(f: Any) -> memoryview:
    """A read-only map of the whole of the open file `f` (an empty file gives no bytes)."""
    if os.fstat(f.fileno()).st_size == 0:
        return memoryview(b"")
    return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))


def view(buffer: memoryview, dtype: np.dtype, shape: tuple[int, ...], offset: int) -> np.ndarray:
    """`shape` elements of `dtype` at byte `offset` of `buffer`, without a copy."""
    count = int(np.prod(shape, dtype=np.int64))
    return np.frombuffer(buffer, dtype=dtype, count=count, offset=offset).reshape(shape)


def to_array(data: np.ndarray, op: str = "load", file: Any = None) -> Array:
    """A nuvec array over `data` in its own dtype (float64 stays float64), without a copy when
    the data is native and of a nuvec dtype; 2-byte void data is bfloat16 (MLX's npy rule)."""
    if data.dtype.kind == "V" and data.dtype.itemsize == 2:
        data = data.view(ml_dtypes.bfloat16)
    elif not data.dtype.isnative:
        data = data.astype(data.dtype.newbyteorder("="))
    try:
        dtype = dt.from_numpy_dtype(data.dtype)
    except TypeError:
        dtype = None
    if dtype is None or (dtype is dt.complex64 and data.dtype != np.complex64):
        where = "" if file is None else f"{describe(file)}: "
        raise DtypeError(f"{op}: {where}unsupported dtype {data.dtype} in the file")
    return leaf(data, dtype)
