"""Saving and loading arrays in NumPy's `.npy` and `.npz` formats: MLX's `save`, `savez`,
`savez_compressed` and `load`.

Files are NumPy's own, so they round-trip with `numpy.save`/`numpy.load` and with MLX; bfloat16
is stored as 2-byte void data (`<V2`), which is how MLX writes and recognizes it.
"""

from __future__ import annotations

import os
from typing import Any

import ml_dtypes
import numpy as np

from nuvec.graph import dtypes as dt
from nuvec.graph.array import Array
from nuvec.graph.device import to_stream
from nuvec.ops.creation import array

__all__ = ["save", "savez", "savez_compressed", "load"]

_FORMATS = ("npy", "npz")


def _host(a: Any, op: str) -> np.ndarray:
    """The evaluated data of array `a` (a NumPy array of its dtype)."""
    if not isinstance(a, Array):
        raise TypeError(f"{op}: expected an array, got {type(a).__name__}")
    return np.asarray(a)


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
    np.save(file, _host(arr, "save"), allow_pickle=False)


def _named(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, np.ndarray]:
    """NumPy's (and MLX's) archive names: positional arrays are `arr_0`, `arr_1`, ..."""
    named = {f"arr_{i}": _host(a, op) for i, a in enumerate(args)}
    for name, a in kwargs.items():
        if name in named:
            raise ValueError(f"{op}: cannot use un-named variables and keyword {name}")
        named[name] = _host(a, op)
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
    np.savez(file, **_named("savez", args, kwargs))


def savez_compressed(file: Any, *args: Array, **kwargs: Array) -> None:
    """Saves several arrays to a compressed `.npz` archive (MLX's `savez_compressed`).

    Args and errors as `savez`.

    Example:
        >>> import io, nuvec as mx
        >>> f = io.BytesIO(); mx.savez_compressed(f, x=mx.zeros((256,))); _ = f.seek(0)
        >>> mx.load(f, format="npz")["x"].shape
        (256,)
    """
    np.savez_compressed(file, **_named("savez_compressed", args, kwargs))


def _format(file: Any) -> str:
    """The format named by the extension of `file`'s path (or of a file object's `name`)."""
    name = os.fspath(file) if isinstance(file, (str, os.PathLike)) else getattr(file, "name", None)
    if not isinstance(name, (str, bytes)):
        raise ValueError("load: cannot infer the file format of a file object without a name; "
                         "pass format='npy' or format='npz'")
    name = os.fsdecode(name)
    _, dot, extension = os.path.basename(name).rpartition(".")
    if not dot:
        raise ValueError(f"load: cannot infer the file format from the extension of {name!r}")
    return extension


def _to_array(data: np.ndarray) -> Array:
    """A nuvec array holding `data` in its own dtype (float64 stays float64)."""
    if data.dtype.kind == "V" and data.dtype.itemsize == 2:
        data = data.view(ml_dtypes.bfloat16)
    elif not data.dtype.isnative:
        data = data.astype(data.dtype.newbyteorder("="))
    try:
        dtype = dt.from_numpy_dtype(data.dtype)
    except TypeError:
        raise TypeError(f"load: unsupported dtype {data.dtype} in the file") from None
    if dtype is dt.complex64 and data.dtype != np.complex64:
        raise TypeError(f"load: unsupported dtype {data.dtype} in the file (nuvec has complex64)")
    return array(data, dtype)


def load(
    file: Any, /, format: str | None = None, return_metadata: bool = False, *, stream: Any = None
) -> Array | dict[str, Array]:
    """Loads an array from a `.npy` file or a dict of arrays from a `.npz` archive (MLX's `load`).

    The arrays keep the file's dtypes (float64 included) and are evaluated leaves in host
    memory, which operations on any stream read.

    Args:
        file: a path or a binary file object open for reading.
        format: "npy" or "npz"; by default the extension of the path (or of the file object's
            `name`).
        return_metadata: MLX returns the metadata of safetensors/gguf files; npy and npz
            files have none, so it must be False.
        stream: a stream or device, checked as every operation's `stream=`.

    Returns:
        An array for "npy"; a dict from names to arrays for "npz".

    Raises:
        ValueError: if the format cannot be inferred, is not "npy"/"npz" (nuvec reads neither
            safetensors nor gguf), or `return_metadata` is True.
        TypeError: if the file holds a dtype nuvec lacks (complex128, strings, objects, ...).

    Example:
        >>> import io, nuvec as mx
        >>> f = io.BytesIO(); mx.save(f, mx.arange(3, dtype=mx.float64)); _ = f.seek(0)
        >>> mx.load(f, format="npy").dtype
        nuvec.float64
    """
    to_stream(stream)
    fmt = _format(file) if format is None else format
    if fmt not in _FORMATS:
        raise ValueError(f"load: unsupported format {fmt!r}; nuvec reads 'npy' and 'npz' files")
    if return_metadata:
        raise ValueError(f"load: metadata is not supported for the {fmt} format")
    if fmt == "npy":
        return _to_array(np.load(file, allow_pickle=False))
    with np.load(file, allow_pickle=False) as archive:
        return {name: _to_array(archive[name]) for name in archive.files}
