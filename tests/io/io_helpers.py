"""Helpers of the file-format tests: bit-exact comparison and the memory-map check."""

from __future__ import annotations

import mmap
import pathlib

import numpy as np

import nuvec as mx


def same_bits(actual: mx.array, expected: np.ndarray) -> None:
    """`actual` holds exactly `expected`'s shape and bytes (NaN payloads and -0.0 included)."""
    got = np.asarray(actual)
    assert got.shape == expected.shape, f"shape {got.shape} != {expected.shape}"
    assert got.dtype.itemsize == expected.dtype.itemsize
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes()


def mapped(a: mx.array) -> bool:
    """Whether `a`'s data is a view of a memory map (walks the NumPy base chain)."""
    data = np.asarray(a)
    while data is not None:
        if isinstance(data, mmap.mmap):
            return True
        if isinstance(data, memoryview):
            data = data.obj
            continue
        data = getattr(data, "base", None)
    return False


def package_file(path: pathlib.Path, tensors: dict, alignment: int | None = None) -> None:
    """A GGUF file written by the `gguf` package: `tensors` maps names to arrays or to
    `(raw bytes, type)` for quantized data (rows of blocks as `gguf.quants.quantize` gives)."""
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    if alignment is not None:
        writer.add_custom_alignment(alignment)
    writer.add_uint32("llama.block_count", 2)
    writer.add_float32("eps", 1e-5)
    writer.add_bool("flag", True)
    writer.add_string("s", "text")
    writer.add_array("ints", [1, 2, 3])
    for name, t in tensors.items():
        if isinstance(t, tuple):
            writer.add_tensor(name, t[0], raw_dtype=t[1])
        else:
            writer.add_tensor(name, t)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
