"""`save`, `savez`, `savez_compressed` and `load` against NumPy's own `.npy`/`.npz` files."""

from __future__ import annotations

import io
import pathlib
import tracemalloc

import ml_dtypes
import numpy as np
import pytest
from helpers import ids, int_pair
from io_helpers import mapped

import nuvec as mx
from nuvec.graph import dtypes as dt
from nuvec.testing import assert_allclose


@pytest.mark.parametrize("dtype", dt.ALL_DTYPES, ids=ids)
def test_save_load_roundtrip_keeps_dtype(tmp_path: pathlib.Path, dtype):
    a, x = int_pair((2, 3), dtype)
    mx.save(tmp_path / "a.npy", a)
    b = mx.load(tmp_path / "a.npy")
    assert_allclose(b, x, dtype=dtype, rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(), (0,), (1,), (2, 0, 3), (3, 4)], ids=str)
def test_save_load_shapes(tmp_path: pathlib.Path, shape):
    a, x = int_pair(shape, mx.float32)
    mx.save(str(tmp_path / "a.npy"), a)
    assert_allclose(mx.load(str(tmp_path / "a.npy")), x, dtype=mx.float32, rtol=0, atol=0)


def test_save_appends_the_npy_extension(tmp_path: pathlib.Path):
    mx.save(str(tmp_path / "weights"), mx.arange(3))
    assert (tmp_path / "weights.npy").exists()
    assert mx.load(str(tmp_path / "weights.npy")).tolist() == [0, 1, 2]


def test_save_evaluates_views_and_lazy_results(tmp_path: pathlib.Path):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = mx.exp(mx.array(x)).T[::2]
    mx.save(tmp_path / "v.npy", a)
    np.testing.assert_allclose(np.load(tmp_path / "v.npy"), np.exp(x).T[::2], rtol=1e-6)


def test_numpy_reads_nuvec_files_and_nuvec_reads_numpy_files(tmp_path: pathlib.Path):
    mx.save(tmp_path / "a.npy", mx.array([[1, 2], [3, 4]], dtype=mx.int16))
    got = np.load(tmp_path / "a.npy")
    assert got.dtype == np.int16 and got.tolist() == [[1, 2], [3, 4]]
    np.save(tmp_path / "b.npy", np.asfortranarray(np.arange(6.0).reshape(2, 3)))
    assert_allclose(mx.load(tmp_path / "b.npy"), np.arange(6.0).reshape(2, 3), dtype=mx.float64)


def test_load_big_endian_data():
    f = io.BytesIO()
    np.save(f, np.arange(4, dtype=">i4"))
    f.seek(0)
    assert_allclose(mx.load(f, format="npy"), np.arange(4), dtype=mx.int32, rtol=0, atol=0)


def test_bfloat16_is_stored_as_two_byte_void_like_mlx():
    f = io.BytesIO()
    mx.save(f, mx.array([1.5, -2.0], dtype=mx.bfloat16))
    assert b"'descr': '<V2'" in f.getvalue()
    f.seek(0)
    assert np.load(f).view(ml_dtypes.bfloat16).tolist() == [1.5, -2.0]


def test_save_and_load_through_file_objects(tmp_path: pathlib.Path):
    with open(tmp_path / "a.npy", "wb") as f:
        mx.save(f, mx.array([1.0, 2.0]))
    with open(tmp_path / "a.npy", "rb") as f:  # the format comes from the file's name
        assert mx.load(f).tolist() == [1.0, 2.0]


def test_savez_names_and_load_dict(tmp_path: pathlib.Path):
    a, x = int_pair((2, 2), mx.float32)
    b, y = int_pair((3,), mx.int64, seed=1)
    mx.savez(tmp_path / "archive", a, b, w=a)
    out = mx.load(tmp_path / "archive.npz")
    assert sorted(out) == ["arr_0", "arr_1", "w"]
    assert_allclose(out["arr_0"], x, dtype=mx.float32, rtol=0, atol=0)
    assert_allclose(out["arr_1"], y, dtype=mx.int64, rtol=0, atol=0)
    assert_allclose(out["w"], x, dtype=mx.float32, rtol=0, atol=0)
    with np.load(tmp_path / "archive.npz") as z:  # NumPy reads the archive too
        np.testing.assert_array_equal(z["w"], x)


def test_savez_compressed_is_smaller_and_loads(tmp_path: pathlib.Path):
    zeros = mx.zeros((4096,))
    mx.savez(tmp_path / "plain.npz", z=zeros)
    mx.savez_compressed(tmp_path / "small.npz", z=zeros)
    assert (tmp_path / "small.npz").stat().st_size < (tmp_path / "plain.npz").stat().st_size
    assert_allclose(mx.load(tmp_path / "small.npz")["z"], np.zeros(4096), dtype=mx.float32)


def test_savez_of_a_flattened_tree(tmp_path: pathlib.Path):
    params = {"layers": [{"w": mx.ones((2, 2))}, {"w": mx.zeros((2,))}]}
    mx.savez(tmp_path / "model.npz", **dict(mx.utils.tree_flatten(params)))
    loaded = mx.utils.tree_unflatten(list(mx.load(tmp_path / "model.npz").items()))
    assert loaded["layers"][0]["w"].tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert loaded["layers"][1]["w"].tolist() == [0.0, 0.0]


def test_load_uses_the_given_format_over_the_extension(tmp_path: pathlib.Path):
    mx.savez(tmp_path / "x.npz", a=mx.ones((1,)))
    (tmp_path / "x.npz").rename(tmp_path / "x.bin")
    assert mx.load(tmp_path / "x.bin", format="npz")["a"].tolist() == [1.0]


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda p: mx.save(p / "a.npy", np.ones(2)), TypeError, "^save: expected an array"),
        (lambda p: mx.savez(p / "a", [1, 2]), TypeError, "^savez: expected an array"),
        (lambda p: mx.savez_compressed(p / "a", x=3), TypeError,
         "^savez_compressed: expected an array"),
        (lambda p: mx.savez(p / "a", mx.ones(1), arr_0=mx.ones(1)), ValueError,
         "^savez: cannot use un-named variables and keyword arr_0"),
        (lambda p: mx.load(p / "noextension"), ValueError, "^load: cannot infer the file format"),
        (lambda p: mx.load(io.BytesIO(b"")), ValueError, "^load: cannot infer the file format"),
        (lambda p: mx.load(p / "w.bin"), ValueError, "^load: unsupported format 'bin'"),
        (lambda p: mx.load(p / "w.npy", format="pt"), ValueError, "^load: unsupported format"),
        (lambda p: mx.load(p / "missing.npy"), ValueError,
         r"^load: '.*missing.npy': cannot be opened \(No such file"),
        (lambda p: mx.load(p / "w.npy", return_metadata=True), ValueError,
         "^load: metadata is not supported for the npy format"),
        (lambda p: mx.load(p / "w.npy", stream="cpu"), TypeError, "stream must be a Stream"),
    ],
    ids=["save-numpy", "savez-list", "savez_compressed-int", "savez-name-clash", "no-extension",
         "nameless-file", "bin", "pt", "missing", "metadata", "bad-stream"],
)
def test_io_rejects(tmp_path: pathlib.Path, call, error, message):
    with pytest.raises(error, match=message):
        call(tmp_path)


@pytest.mark.parametrize("data", [np.array([1 + 2j]), np.array(["a"]), np.array([1], "<m8[s]")],
                         ids=["complex128", "str", "timedelta"])
def test_load_rejects_dtypes_nuvec_lacks(tmp_path: pathlib.Path, data):
    np.save(tmp_path / "a.npy", data)
    with pytest.raises(TypeError, match="^load: '.*a.npy': unsupported dtype"):
        mx.load(tmp_path / "a.npy")


def test_npy_and_uncompressed_npz_files_are_memory_mapped(tmp_path: pathlib.Path):
    big = np.arange(4 * 2**20, dtype=np.float32)  # 16 MiB
    fortran = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    np.save(tmp_path / "big.npy", big)
    np.savez(tmp_path / "plain.npz", big=big, f=fortran)
    np.savez_compressed(tmp_path / "small.npz", c=big[:5])
    tracemalloc.start()
    try:
        single, plain = mx.load(tmp_path / "big.npy"), mx.load(tmp_path / "plain.npz")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20, f"loading allocated {peak} bytes"
    assert mapped(single) and mapped(plain["big"]) and mapped(plain["f"])
    assert_allclose(plain["f"], fortran, dtype=mx.float64, rtol=0, atol=0)
    assert plain["big"][-1].item() == big[-1] and single[-1].item() == big[-1]
    compressed = mx.load(tmp_path / "small.npz")["c"]  # compressed members are read
    assert not mapped(compressed) and compressed.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("name, cut", [("a.npy", -8), ("a.npz", -30), ("a.npz", 40)])
def test_truncated_numpy_files_raise(tmp_path: pathlib.Path, name, cut):
    path = tmp_path / name
    (np.save if name.endswith("npy") else np.savez)(path, np.arange(100.0))
    path.write_bytes(path.read_bytes()[:cut])
    with pytest.raises(ValueError, match=rf"^load: '.*{name}': is not a valid \.np[yz]"):
        mx.load(path)


def test_mislabelled_numpy_files_raise(tmp_path: pathlib.Path):
    mx.save_safetensors(tmp_path / "w.safetensors", {"w": mx.ones((2,))})
    for name in ("w.npy", "w.npz"):
        (tmp_path / name).write_bytes((tmp_path / "w.safetensors").read_bytes())
        with pytest.raises(ValueError, match=rf"^load: '.*{name}': is not a valid"):
            mx.load(tmp_path / name)
    np.save(tmp_path / "x.npy", np.ones(2))
    (tmp_path / "x.npy").rename(tmp_path / "x.npz")
    with pytest.raises(ValueError, match=r"^load: '.*x.npz': is a .npy file, not a .npz"):
        mx.load(tmp_path / "x.npz")


@pytest.mark.parametrize("fmt", ["npy", "npz", "safetensors", "gguf"])
def test_saving_over_the_file_arrays_are_mapped_from(tmp_path: pathlib.Path, fmt):
    """The old file stays intact under its mapped arrays until the new one replaces it."""
    path = tmp_path / f"w.{fmt}"
    x = np.arange(2**16, dtype=np.float32)
    save = {"npy": lambda a: mx.save(path, a), "npz": lambda a: mx.savez(path, w=a),
            "safetensors": lambda a: mx.save_safetensors(path, {"w": a}),
            "gguf": lambda a: mx.save_gguf(path, {"w": a})}[fmt]
    save(mx.array(x))
    loaded = mx.load(path)
    w = loaded if fmt == "npy" else loaded["w"]
    save(w * 2)  # reads the mapped data while writing the same path
    again = mx.load(path)
    assert_allclose(again if fmt == "npy" else again["w"], 2 * x, dtype=mx.float32, rtol=0, atol=0)
    assert_allclose(w, x, dtype=mx.float32, rtol=0, atol=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary left


def test_a_failed_save_leaves_no_file(tmp_path: pathlib.Path):
    with pytest.raises(TypeError):
        mx.save_gguf(tmp_path / "w.gguf", {"a": mx.ones(2), "b": mx.ones(2, dtype=mx.uint8)})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("dtype", dt.ALL_DTYPES, ids=ids)
@pytest.mark.parametrize("save", [mx.savez, mx.savez_compressed], ids=["plain", "compressed"])
def test_every_dtype_round_trips_through_npz(tmp_path: pathlib.Path, dtype, save):
    a, x = int_pair((3, 2), dtype)
    save(tmp_path / "z.npz", a=a)
    b = mx.load(tmp_path / "z.npz")["a"]
    assert_allclose(b, x, dtype=dtype, rtol=0, atol=0)
