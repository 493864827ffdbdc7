"""Saving and loading arrays in NumPy's `.npy` and `.npz` formats: MLX's `save`, `savez`,
`savez_compressed` and `load`.

Files are NumPy's own, so they round-trip with `numpy.save`/`numpy.load` and with MLX; bfloat16
is stored as 2-byte void data (`<V2`), which is how MLX writes and recognizes it.
"""

from __future__ import annotations

import os
import zipfile
from typing import Any

import numpy as np

from nuvec.graph.array import Array
from nuvec.io.files import fail, host, to_array

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
    np.save(file, host(arr, "save"), allow_pickle=False)


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
    """The arrays in `.npz` archive `file`, by name."""
    try:
        archive = np.load(file, allow_pickle=False)
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise fail("load", file, "is a .npy file, not a .npz archive")
        with archive:
            return {name: to_array(archive[name], "load", file) for name in archive.files}
    except OSError as exc:
        raise fail("load", file, f"cannot be opened ({exc.strerror or exc})") from None
    except (EOFError, zipfile.BadZipFile) as exc:
        raise fail("load", file, f"is not a valid .npz archive ({exc})") from None
    except ValueError as exc:
        if str(exc).startswith("load: "):
            raise
        raise fail("load", file, f"is not a valid .npz archive ({exc})") from None
