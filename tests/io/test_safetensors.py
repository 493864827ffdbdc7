"""`save_safetensors` and `load` of `.safetensors` files, against the `safetensors` library."""

from __future__ import annotations

import io
import json
import pathlib
import struct
import tracemalloc

import numpy as np
import pytest
from helpers import ids, int_data
from io_helpers import mapped, same_bits

import nuvec as mx
from nuvec.graph import dtypes as dt

st_numpy = pytest.importorskip("safetensors.numpy")


@pytest.mark.parametrize("dtype", dt.ALL_DTYPES, ids=ids)
def test_every_dtype_round_trips(tmp_path: pathlib.Path, dtype):
    x = int_data((3, 4), dtype)
    mx.save_safetensors(tmp_path / "a", {"x": mx.array(x, dtype), "empty": mx.zeros((0, 2), dtype)})
    out = mx.load(tmp_path / "a.safetensors")
    assert sorted(out) == ["empty", "x"]
    assert out["x"].dtype is dtype and out["empty"].shape == (0, 2)
    same_bits(out["x"], x)


def test_bfloat16_keeps_every_bit_pattern(tmp_path: pathlib.Path):
    bits = np.arange(0, 65536, 7, dtype=np.uint16)
    a = mx.view(mx.array(bits), mx.bfloat16)
    mx.save_safetensors(tmp_path / "b.safetensors", {"b": a})
    same_bits(mx.load(tmp_path / "b.safetensors")["b"], bits)


def test_metadata_round_trips_with_mlx_format_key(tmp_path: pathlib.Path):
    mx.save_safetensors(tmp_path / "m", {"w": mx.ones((1,))}, {"step": "10", "note": "é"})
    _, meta = mx.load(tmp_path / "m.safetensors", return_metadata=True)
    assert meta == {"step": "10", "note": "é"}
    assert st_numpy.safe_open(str(tmp_path / "m.safetensors"), "np").metadata() == meta


def test_zero_dimensional_arrays_keep_their_shape(tmp_path: pathlib.Path):
    mx.save_safetensors(tmp_path / "s", {"s": mx.array(3), "h": mx.array(1.5, mx.bfloat16)})
    out = mx.load(tmp_path / "s.safetensors")
    assert out["s"].shape == () and out["s"].item() == 3  # as MLX (an optimizer's `step`)
    assert out["h"].shape == () and out["h"].item() == 1.5
    assert st_numpy.load_file(str(tmp_path / "s.safetensors"))["s"].shape == ()


@pytest.mark.parametrize("dtype", [d for d in dt.ALL_DTYPES], ids=ids)
def test_the_library_reads_nuvec_files(tmp_path: pathlib.Path, dtype):
    x = int_data((2, 5), dtype)
    mx.save_safetensors(tmp_path / "n.safetensors", {"x": mx.array(x, dtype)})
    got = st_numpy.load_file(str(tmp_path / "n.safetensors"))["x"]
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("dtype", dt.ALL_DTYPES, ids=ids)
def test_nuvec_reads_the_librarys_numpy_files(tmp_path: pathlib.Path, dtype):
    x = int_data((4, 3), dtype)
    st_numpy.save_file({"x": x, "y": x[:1]}, str(tmp_path / "l.safetensors"), {"k": "v"})
    out, meta = mx.load(str(tmp_path / "l.safetensors"), return_metadata=True)
    assert meta == {"k": "v"} and out["x"].dtype is dtype
    same_bits(out["x"], x)
    same_bits(out["y"], x[:1])


def test_torch_files_load_and_nuvec_files_load_in_torch(tmp_path: pathlib.Path):
    torch = pytest.importorskip("torch")
    st_torch = pytest.importorskip("safetensors.torch")
    g = torch.Generator().manual_seed(0)
    tensors = {"f32": torch.randn(3, 4, generator=g),
               "bf16": torch.randn(5, generator=g).bfloat16(),
               "f16": torch.randn(2, 2, generator=g).half(), "i64": torch.arange(6).reshape(2, 3),
               "u8": torch.arange(4, dtype=torch.uint8), "b": torch.tensor([True, False])}
    st_torch.save_file(tensors, str(tmp_path / "t.safetensors"))
    out = mx.load(tmp_path / "t.safetensors")
    for name, t in tensors.items():
        raw = t.view(torch.int16).numpy() if t.dtype == torch.bfloat16 else t.numpy()
        same_bits(out[name], raw)
    mx.save_safetensors(tmp_path / "back.safetensors", out)
    back = st_torch.load_file(str(tmp_path / "back.safetensors"))
    for name, t in tensors.items():
        assert back[name].dtype == t.dtype and torch.equal(back[name], t)


def test_large_files_are_memory_mapped_without_a_copy(tmp_path: pathlib.Path):
    big = np.arange(8 * 2**20, dtype=np.float32)  # 32 MiB
    st_numpy.save_file({"big": big, "small": big[:3].copy()}, str(tmp_path / "big.safetensors"))
    del big
    tracemalloc.start()
    try:
        out = mx.load(tmp_path / "big.safetensors")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20, f"loading allocated {peak} bytes"
    assert mapped(out["big"]) and mapped(out["small"])
    small = out.pop("small")
    del out  # the arrays keep the map open
    assert small.tolist() == [0.0, 1.0, 2.0]
    assert mx.sum(small * 2).item() == 6.0


def test_file_objects(tmp_path: pathlib.Path):
    f = io.BytesIO()
    mx.save_safetensors(f, {"a": mx.arange(3)})
    f.seek(0)
    assert mx.load(f, format="safetensors")["a"].tolist() == [0, 1, 2]
    with open(tmp_path / "f.safetensors", "wb") as g:
        mx.save_safetensors(g, {"a": mx.arange(2)})
    with open(tmp_path / "f.safetensors", "rb") as g:  # a real file object is mapped too
        assert mapped(mx.load(g)["a"])


def _file(header: dict, data: bytes = b"", size: int | None = None) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text) if size is None else size) + text + data


def _valid() -> bytes:
    f = io.BytesIO()
    mx.save_safetensors(f, {"a": mx.arange(4, dtype=mx.float32), "b": mx.ones((2, 2))})
    return f.getvalue()


@pytest.mark.parametrize("cut", [0, 5, 8, 20, -40, -1])
def test_truncated_files_raise(tmp_path: pathlib.Path, cut):
    path = tmp_path / "cut.safetensors"
    path.write_bytes(_valid()[:cut])
    with pytest.raises(ValueError, match=r"^load: '.*cut.safetensors': is truncated"):
        mx.load(path)


@pytest.mark.parametrize(
    "content, message",
    [
        (_file({}, size=2**40), "has an oversized header: 1099511627776 bytes declared"),
        (b"\x93NUMPY\x01\x00v\x00{'descr'", "has an oversized header"),
        (_file({}, size=50), "is truncated: the header declares 50 bytes"),
        (struct.pack("<Q", 4) + b"\xff\xfe{}", "has a header that is not JSON"),
        (_file([1, 2]), "has a header that is not a JSON object"),
        (_file({"a": {"dtype": "F32", "shape": [2]}}), "tensor 'a' lacks dtype, shape or data"),
        (_file({"a": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4),
         "tensor 'a' has an unknown dtype 'Q4'"),
        (_file({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4),
         r"tensor 'a' has an invalid shape \[-1\]"),
        (_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}, b"\0" * 4),
         "tensor 'a' has invalid data_offsets"),
        (_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4),
         r"tensor 'a' of dtype F32 and shape \(2,\) needs 8 bytes"),
        (_file({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                "b": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}}, b"\0" * 3),
         "tensor 'b' starts at data byte 1, expected 2"),
        (_file({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}}, b"\0" * 3),
         "has 1 bytes after the last tensor's data"),
        (_file({"__metadata__": {"k": 1}}), "the header's __metadata__ is not a dict of strings"),
    ],
    ids=["oversized", "npy-named-safetensors", "short-header", "not-utf8", "not-object",
         "missing-keys", "unknown-dtype", "negative-shape", "reversed-offsets", "size-mismatch",
         "overlap", "trailing", "bad-metadata"],
)
def test_malformed_files_raise(tmp_path: pathlib.Path, content, message):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=rf"^load: '.*bad.safetensors': {message}"):
        mx.load(path)


def test_mislabelled_gguf_file_raises(tmp_path: pathlib.Path):
    mx.save_gguf(tmp_path / "w.gguf", {"w": mx.ones((2,))})
    (tmp_path / "w.gguf").rename(tmp_path / "w.safetensors")
    with pytest.raises(ValueError, match=r"^load: '.*w.safetensors': has an oversized header"):
        mx.load(tmp_path / "w.safetensors")


def test_float8_tensors_raise_type_error(tmp_path: pathlib.Path):
    path = tmp_path / "f8.safetensors"
    path.write_bytes(_file({"a": {"dtype": "F8_E4M3", "shape": [8], "data_offsets": [0, 8]}},
                           b"\0" * 8))
    with pytest.raises(TypeError, match=r"^load: '.*f8.safetensors': tensor 'a' has dtype F8_E4M3"):
        mx.load(path)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda f: mx.save_safetensors(f, [mx.ones(1)]), TypeError,
         "^save_safetensors: arrays must be a dict, got list"),
        (lambda f: mx.save_safetensors(f, {"a": np.ones(1)}), TypeError,
         "^save_safetensors: expected an array, got ndarray"),
        (lambda f: mx.save_safetensors(f, {1: mx.ones(1)}), TypeError,
         "^save_safetensors: names must be strings, got 1"),
        (lambda f: mx.save_safetensors(f, {"__metadata__": mx.ones(1)}), ValueError,
         "^save_safetensors: '__metadata__' is reserved"),
        (lambda f: mx.save_safetensors(f, {}, {"a": 1}), TypeError,
         "^save_safetensors: metadata must be a dict of strings to strings"),
        (lambda f: mx.save_safetensors(3, {}), TypeError,
         "^save_safetensors: file must be a path or a binary file object, got int"),
    ],
    ids=["list", "numpy", "int-name", "reserved-name", "int-metadata", "bad-file"],
)
def test_save_rejects(call, error, message):
    with pytest.raises(error, match=message):
        call(io.BytesIO())
