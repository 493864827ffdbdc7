"""MLX's `load`: one entry point for `.npy`, `.npz`, `.safetensors` and `.gguf` files."""

from __future__ import annotations

import os
from typing import Any

from nuvec.graph.device import to_stream
from nuvec.ops.arguments import bool_flag
from nuvec.io.gguf_files import load_gguf
from nuvec.io.numpy_files import load_npy, load_npz
from nuvec.io.safetensors_files import load_safetensors

__all__ = ["load"]

_FORMATS = ("npy", "npz", "safetensors", "gguf")


def _format(file: Any) -> str:
    """The format named by the extension of `file`'s path (or of a file object's `name`)."""
    name = os.fspath(file) if isinstance(file, (str, os.PathLike)) else getattr(file, "name", None)
    if not isinstance(name, (str, bytes)):
        raise ValueError("load: cannot infer the file format of a file object without a name; "
                         "pass format= one of 'npy', 'npz', 'safetensors', 'gguf'")
    name = os.fsdecode(name)
    _, dot, extension = os.path.basename(name).rpartition(".")
    if not dot:
        raise ValueError(f"load: cannot infer the file format from the extension of {name!r}")
    return extension


def load(
    file: Any, /, format: str | None = None, return_metadata: bool = False, *, stream: Any = None
) -> Any:
    """Loads arrays from a `.npy`, `.npz`, `.safetensors` or `.gguf` file (MLX's `load`).

    Arrays keep the file's dtypes (float64 and bfloat16 included) and are evaluated leaves in
    host memory. Files given by path are memory-mapped: `.npy` files, uncompressed `.npz`
    members, `.safetensors` files and unquantized `.gguf` tensors are views of the map
    (nothing is copied; each array keeps the map open).
    GGUF tensors in Q4_0, Q4_1 or Q8_0 load as MLX loads them: the weight `name` as uint32
    codes plus `<prefix>.scales` and `<prefix>.biases` (float16; `prefix` is `name` without
    `.weight`), ready for `quantized_matmul(x, w, scales, biases, group_size=32, bits=4 or 8)`;
    Q5_0, Q5_1, Q2_K, Q4_K and Q6_K tensors are dequantized to float16; other types raise.

    Args:
        file: a path or a binary file object open for reading.
        format: "npy", "npz", "safetensors" or "gguf"; by default the extension of the path
            (or of the file object's `name`).
        return_metadata: also return the file's metadata (safetensors: a dict of strings;
            gguf: strings, lists of strings and arrays). npy and npz files have none.
        stream: a stream or device, checked as every operation's `stream=`.

    Returns:
        An array for "npy"; a dict from names to arrays otherwise; with `return_metadata`, a
        tuple `(arrays, metadata)`.

    Raises:
        ValueError: if the format cannot be inferred or is unknown, `return_metadata` is
            asked of npy/npz, or the file is not a valid file of its format (truncated,
            oversized or malformed header, unknown dtype or tensor type, another format's
            file); the message names the file and the problem.
        TypeError: if the file holds a dtype nuvec lacks (complex128, float8, strings, ...).

    Example:
        >>> import io, nuvec as mx
        >>> f = io.BytesIO(); mx.save(f, mx.arange(3, dtype=mx.float64)); _ = f.seek(0)
        >>> mx.load(f, format="npy").dtype
        nuvec.float64
    """
    to_stream(stream)
    return_metadata = bool_flag(return_metadata, "load", "return_metadata")
    fmt = _format(file) if format is None else format
    if fmt not in _FORMATS:
        raise ValueError(f"load: unsupported format {fmt!r}; nuvec reads "
                         f"{', '.join(repr(f) for f in _FORMATS)} files")
    if fmt in ("npy", "npz"):
        if return_metadata:
            raise ValueError(f"load: metadata is not supported for the {fmt} format")
        return load_npy(file) if fmt == "npy" else load_npz(file)
    arrays, metadata = (load_safetensors if fmt == "safetensors" else load_gguf)(file)
    return (arrays, metadata) if return_metadata else arrays

