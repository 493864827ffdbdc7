"""`save_gguf` and `load` of `.gguf` files, against the `gguf` package (llama.cpp's own)."""

from __future__ import annotations

import io
import pathlib
import struct
import tracemalloc

import numpy as np
import pytest
from helpers import ids, int_data
from io_helpers import mapped, package_file, same_bits

import nuvec as mx
from nuvec.graph import dtypes as dt

gguf = pytest.importorskip("gguf")

TENSOR_DTYPES = (dt.float32, dt.float16, dt.bfloat16, dt.float64, dt.int8, dt.int16, dt.int32,
                 dt.int64)
METADATA_DTYPES = (dt.bool_, dt.uint8, dt.int8, dt.uint16, dt.int16, dt.uint32, dt.int32,
                   dt.uint64, dt.int64, dt.float32, dt.float64)


@pytest.mark.parametrize("dtype", TENSOR_DTYPES, ids=ids)
def test_every_tensor_dtype_round_trips(tmp_path: pathlib.Path, dtype):
    x = int_data((3, 5), dtype)
    mx.save_gguf(tmp_path / "a", {"x": mx.array(x, dtype), "v": mx.array(x[0], dtype)})
    out = mx.load(tmp_path / "a.gguf")
    assert out["x"].dtype is dtype and out["v"].dtype is dtype
    same_bits(out["x"], x)
    same_bits(out["v"], x[0])


def test_metadata_round_trips_as_mlx_returns_it(tmp_path: pathlib.Path):
    meta = {"name": "tiny", "tokens": ["a", "é", ""], "empty": []}
    for d in METADATA_DTYPES:
        meta[f"s.{d.name}"] = mx.array(int_data((), d))
        meta[f"v.{d.name}"] = mx.array(int_data((3,), d))
    mx.save_gguf(tmp_path / "m.gguf", {}, meta)
    arrays, got = mx.load(tmp_path / "m.gguf", return_metadata=True)
    assert arrays == {} and list(got) == list(meta)
    for key, value in meta.items():
        if isinstance(value, mx.array):
            assert got[key].dtype is value.dtype and got[key].shape == value.shape, key
            assert got[key].tolist() == value.tolist(), key
        else:
            assert got[key] == value


def test_the_gguf_package_reads_nuvec_files(tmp_path: pathlib.Path):
    w = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    h = int_data((7,), dt.float16)
    mx.save_gguf(tmp_path / "n.gguf", {"w": mx.array(w), "h": mx.array(h)},
                 {"general.architecture": "llama", "n": mx.array(5, dtype=mx.uint32),
                  "xs": mx.array([1.5, 2.5]), "words": ["x", "y"]})
    r = gguf.GGUFReader(tmp_path / "n.gguf")
    assert r.fields["general.architecture"].contents() == "llama"
    assert r.fields["n"].contents() == 5 and r.fields["n"].types == [gguf.GGUFValueType.UINT32]
    assert r.fields["xs"].contents() == [1.5, 2.5] and r.fields["words"].contents() == ["x", "y"]
    tensors = {t.name: t for t in r.tensors}
    assert tensors["w"].tensor_type == gguf.GGMLQuantizationType.F32
    assert list(tensors["w"].shape) == [4, 3, 2]  # GGUF lists dimensions fastest first
    np.testing.assert_array_equal(np.asarray(tensors["w"].data).reshape(w.shape), w)
    np.testing.assert_array_equal(np.asarray(tensors["h"].data), h)


@pytest.mark.parametrize("alignment", [None, 64])
def test_nuvec_reads_the_packages_files(tmp_path: pathlib.Path, alignment):
    x = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)
    package_file(tmp_path / "p.gguf", {"x": x, "i": np.arange(3, dtype=np.int32),
                                        "h": x.astype(np.float16)}, alignment)
    out, meta = mx.load(tmp_path / "p.gguf", return_metadata=True)
    same_bits(out["x"], x)
    same_bits(out["i"], np.arange(3, dtype=np.int32))
    same_bits(out["h"], x.astype(np.float16))
    assert meta["llama.block_count"].item() == 2 and meta["llama.block_count"].dtype is mx.uint32
    assert meta["flag"].item() is True and meta["s"] == "text"
    assert meta["ints"].tolist() == [1, 2, 3] and meta["general.architecture"] == "llama"


def test_unquantized_tensors_are_memory_mapped(tmp_path: pathlib.Path):
    big = np.ones((2048, 2048), dtype=np.float32)  # 16 MiB
    package_file(tmp_path / "big.gguf", {"big": big})
    del big
    tracemalloc.start()
    try:
        out = mx.load(tmp_path / "big.gguf")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20, f"loading allocated {peak} bytes"
    assert mapped(out["big"]) and mx.sum(out["big"]).item() == 2048 * 2048


def test_file_objects():
    f = io.BytesIO()
    mx.save_gguf(f, {"a": mx.arange(3)}, {"k": "v"})
    f.seek(0)
    arrays, meta = mx.load(f, format="gguf", return_metadata=True)
    assert arrays["a"].tolist() == [0, 1, 2] and meta == {"k": "v"}


def test_zero_dimensional_arrays_keep_their_shape(tmp_path: pathlib.Path):
    mx.save_gguf(tmp_path / "z.gguf", {"z": mx.array(3.5)})
    z = mx.load(tmp_path / "z.gguf")["z"]
    assert z.shape == () and z.item() == 3.5


def _valid() -> bytes:
    f = io.BytesIO()
    mx.save_gguf(f, {"a": mx.arange(8, dtype=mx.float32)}, {"name": "x", "v": mx.array([1, 2])})
    return f.getvalue()


@pytest.mark.parametrize("cut", [0, 3, 6, 20, 40, 70, 100, -20, -1])
def test_truncated_files_raise(tmp_path: pathlib.Path, cut):
    path = tmp_path / "cut.gguf"
    path.write_bytes(_valid()[:cut])
    with pytest.raises(ValueError, match=r"^load: '.*cut.gguf': (is truncated|declares)"):
        mx.load(path)


def _header(version: int = 3, tensors: int = 0, kvs: int = 0) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, tensors, kvs)


def _kv(key: str, kind: int, payload: bytes) -> bytes:
    return struct.pack("<Q", len(key)) + key.encode() + struct.pack("<I", kind) + payload


def _info(name: str, dims: tuple, kind: int, offset: int = 0) -> bytes:
    return (struct.pack("<Q", len(name)) + name.encode()
            + struct.pack(f"<I{len(dims)}Q", len(dims), *dims) + struct.pack("<IQ", kind, offset))


def _pad(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 32)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\x93NUMPY" + b"\0" * 40, r"is not a GGUF file \(it starts with b'\\x93NUM'"),
        (_header(version=1), "has GGUF version 1; nuvec reads versions 2 and 3"),
        (b"GGUF" + struct.pack(">IQQ", 3, 0, 0), "is a big-endian GGUF file"),
        (_header(tensors=2**40), "declares 1099511627776 tensors, more than"),
        (_header(kvs=2**62), "declares 4611686018427387904 metadata entries"),
        (_header(kvs=1) + _kv("k", 77, b"\0" * 8), "metadata 'k' has an unknown value type 77"),
        (_header(kvs=1) + _kv("k", 8, struct.pack("<Q", 2**50)), "is truncated: metadata 'k'"),
        (_header(kvs=1) + _kv("k", 9, struct.pack("<IQ", 4, 2**40)),
         "declares 1099511627776 values in metadata 'k'"),
        (_header(kvs=1) + _kv("k", 8, struct.pack("<Q", 2) + b"\xff\xfe"),
         "metadata 'k' is not UTF-8 text"),
        (_header(kvs=1) + _kv("general.alignment", 4, struct.pack("<I", 3)),
         "has an invalid general.alignment 3"),
        (_pad(_header(tensors=1) + _info("t", (4,), 0)) + b"\0" * 8,
         r"is truncated: tensor 't' needs bytes 64 to 80"),
        (_pad(_header(tensors=1) + _info("t", (4,), 16)) + b"\0" * 66,
         "tensor 't' has type IQ2_XXS, which nuvec cannot load"),
        (_pad(_header(tensors=1) + _info("t", (4,), 99)) + b"\0" * 16,
         r"tensor 't' has type unknown \(99\)"),
        (_pad(_header(tensors=1) + _info("t", (40,), 2)) + b"\0" * 64,
         "tensor 't' of type Q4_0 has rows of 40 values, not a multiple of its block of 32"),
        (_pad(_header(tensors=1) + _info("t", (1,) * 9, 0)) + b"\0" * 64,
         "tensor 't' has 9 dimensions"),
        (_pad(_header(tensors=2) + _info("t", (1,), 0) + _info("t", (1,), 0)) + b"\0" * 32,
         "has two tensors named 't'"),
    ],
    ids=["npy-named-gguf", "version-1", "big-endian", "huge-tensor-count", "huge-kv-count",
         "unknown-value-type", "long-string", "huge-array", "not-utf8", "bad-alignment",
         "short-data", "iq2", "unknown-type", "partial-block", "rank", "duplicate"],
)
def test_malformed_files_raise(tmp_path: pathlib.Path, content, message):
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=rf"^load: '.*bad.gguf': {message}"):
        mx.load(path)


def test_mislabelled_safetensors_file_raises(tmp_path: pathlib.Path):
    mx.save_safetensors(tmp_path / "w.safetensors", {"w": mx.ones((2,))})
    (tmp_path / "w.safetensors").rename(tmp_path / "w.gguf")
    with pytest.raises(ValueError, match=r"^load: '.*w.gguf': is not a GGUF file"):
        mx.load(tmp_path / "w.gguf")


@pytest.mark.parametrize(
    "arrays, metadata, error, message",
    [
        ({"a": mx.ones(2, dtype=mx.uint8)}, None, TypeError,
         "^save_gguf: GGUF has no tensor type for uint8 \\(array 'a'\\)"),
        ({"a": mx.ones(2, dtype=mx.complex64)}, None, TypeError,
         "^save_gguf: GGUF has no tensor type for complex64"),
        ({"a": np.ones(2)}, None, TypeError, "^save_gguf: expected an array, got ndarray"),
        ({}, {"h": mx.ones(2, dtype=mx.float16)}, TypeError,
         "^save_gguf: GGUF metadata cannot hold float16 \\(metadata 'h'\\)"),
        ({}, {"m": mx.ones((2, 2))}, ValueError,
         r"^save_gguf: metadata 'm' must be a scalar or 1-D array, got shape \(2, 2\)"),
        ({}, {"n": 3}, TypeError,
         "^save_gguf: metadata 'n' must be a str, a list of str or an array, got int"),
        ({}, {1: "x"}, TypeError, "^save_gguf: metadata keys must be strings, got 1"),
        ([], None, TypeError, "^save_gguf: arrays must be a dict, got list"),
        ({}, [], TypeError, "^save_gguf: metadata must be a dict, got list"),
    ],
    ids=["uint8", "complex", "numpy", "f16-metadata", "2d-metadata", "int-metadata", "int-key",
         "list", "list-metadata"],
)
def test_save_rejects(arrays, metadata, error, message):
    with pytest.raises(error, match=message):
        mx.save_gguf(io.BytesIO(), arrays, metadata)
