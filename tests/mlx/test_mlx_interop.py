"""Zero-copy interop (issue 12, item 4): NumPy 2's `__array__`, `array`/`asarray(copy=)`, DLPack
both ways, the array API namespace and the buffer protocol."""

from __future__ import annotations

import importlib.util
import sys

import ml_dtypes
import numpy as np
import pytest

import nuvec as mx

DTYPES = [mx.bool_, mx.uint8, mx.uint16, mx.uint32, mx.uint64, mx.int8, mx.int16, mx.int32,
          mx.int64, mx.float16, mx.bfloat16, mx.float32, mx.float64, mx.complex64]


def _address(x: np.ndarray) -> int:
    return x.__array_interface__["data"][0]


def _host_address(a: mx.array) -> int:
    return _address(np.asarray(a))


def test_array_protocol_views_without_copy():
    a = mx.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    view = np.asarray(a)
    assert _address(view) == _address(np.asarray(a, copy=False))  # the same memory each time
    assert not view.flags.writeable and not view.flags.owndata
    copied = np.array(a)
    assert copied.flags.owndata and copied.flags.writeable and _address(copied) != _address(view)
    assert np.asarray(a + 1, copy=False).tolist() == [[1, 2, 3], [4, 5, 6]]  # evaluates
    with pytest.raises(ValueError, match="^__array__: converting float32 to float64 needs a copy"):
        np.asarray(a, dtype=np.float64, copy=False)
    assert np.asarray(a, dtype=np.float64).dtype == np.float64


def test_array_and_asarray_copy_argument():
    data = np.arange(4, dtype=np.float32)
    shared = mx.asarray(data)  # the array API's copy=None shares when the dtype is kept
    assert _host_address(shared) == _address(data)
    assert _host_address(mx.array(data, copy=False)) == _address(data)
    assert _host_address(mx.array(data)) != _address(data)  # MLX's array copies
    assert _host_address(mx.asarray(data, copy=True)) != _address(data)
    assert mx.asarray(np.arange(3.0)).dtype is mx.float32  # MLX's float64 rule: a copy
    with pytest.raises(ValueError, match="^array: float64 data cannot be shared"):
        mx.asarray(np.arange(3.0), copy=False)
    assert _host_address(mx.asarray(np.arange(3.0), mx.float64, copy=False)) != 0
    x = mx.array([1.0, 2.0])
    assert mx.asarray(x, copy=False) is not x and mx.asarray(x).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="^array: converting float32 to int32 needs a copy"):
        mx.asarray(x, mx.int32, copy=False)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_dlpack_round_trip_every_dtype(dtype):
    a = mx.array(np.arange(6).reshape(2, 3) % 2, dtype)
    assert a.__dlpack_device__() == (1, 0)
    back = mx.from_dlpack(_Producer(a))
    assert back.dtype is dtype and back.tolist() == a.tolist()
    assert _host_address(back) == _host_address(a)  # shared, not copied
    if dtype is not mx.bfloat16:  # NumPy's DLPack has no bfloat16
        out = np.from_dlpack(a)
        assert out.dtype == np.asarray(a).dtype and _address(out) == _host_address(a)


class _Producer:
    """A DLPack producer that is not an array library: only the protocol's two methods."""

    def __init__(self, inner):
        self.inner = inner

    def __dlpack__(self, **kwargs):
        return self.inner.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.inner.__dlpack_device__()


def test_dlpack_versions_and_devices():
    import ctypes

    name_of = ctypes.pythonapi.PyCapsule_GetName
    name_of.restype, name_of.argtypes = ctypes.c_char_p, [ctypes.py_object]
    a = mx.array([1.0, 2.0])
    assert np.from_dlpack(_Producer(a)).tolist() == [1.0, 2.0]
    for kwargs, name in (({}, b"dltensor"), ({"max_version": (1, 0)}, b"dltensor_versioned"),
                         ({"max_version": (0, 8)}, b"dltensor"), ({"stream": None}, b"dltensor")):
        assert name_of(a.__dlpack__(**kwargs)) == name
    with pytest.raises(BufferError, match="^__dlpack__: the array is on the CPU"):
        a.__dlpack__(dl_device=(2, 0))
    copied = np.from_dlpack(a, copy=True)
    assert _address(copied) != _host_address(a)


@pytest.mark.parametrize("make", [
    lambda: np.arange(24, dtype=np.float32).reshape(4, 6)[1:, ::2],  # offset and strided
    lambda: np.arange(24, dtype=np.int16).reshape(4, 6).T,
    lambda: np.arange(8, dtype=np.float64)[3:],
    lambda: np.array([True, False, True]),
    lambda: np.arange(4, dtype=np.float32).astype(ml_dtypes.bfloat16).view(np.uint16),
], ids=["offset-strided", "transposed", "offset-float64", "bool", "uint16"])
def test_from_dlpack_numpy_shares_memory(make):
    x = make()
    a = mx.from_dlpack(x)
    np.testing.assert_array_equal(np.asarray(a), x)
    assert _host_address(a) == _address(x)
    assert a.dtype is mx.float64 or x.dtype != np.float64  # the dtype is kept


def test_from_dlpack_converts_complex128_unless_copy_false():
    z = np.array([1 + 2j], np.complex128)
    assert mx.from_dlpack(z).dtype is mx.complex64
    with pytest.raises(BufferError, match="^from_dlpack: complex128 data needs a copy"):
        mx.from_dlpack(z, copy=False)
    with pytest.raises(TypeError, match="^from_dlpack: expected an object with __dlpack__"):
        mx.from_dlpack([1, 2])


TORCH = importlib.util.find_spec("torch") is not None
TORCH_CASES = ["float32", "bfloat16", "int64", "bool", "complex64", "float16"] if TORCH else []


@pytest.mark.parametrize("name", TORCH_CASES)
def test_torch_both_ways(name):
    import torch

    t = torch.arange(12).reshape(3, 4).to(getattr(torch, name))[:, 1::2]
    a = mx.from_dlpack(t)
    assert a.tolist() == t.tolist()
    t[0, 0] = 1  # shared memory: the nuvec array sees it
    assert a[0, 0].item() == 1
    back = torch.from_dlpack(mx.array(np.arange(6).reshape(2, 3)).astype(
        getattr(mx, "bool_" if name == "bool" else name)))
    assert back.dtype == getattr(torch, name) and back.shape == (2, 3)
    b = mx.ones((4,), getattr(mx, "bool_" if name == "bool" else name))
    assert torch.from_dlpack(b).data_ptr() == _host_address(b)


class _Bfloat16Producer:
    """A DLPack producer whose `__array__` refuses bfloat16, as PyTorch's tensors do
    (`mx.array(torch.tensor([1.5], dtype=torch.bfloat16))` takes the same path)."""

    def __init__(self, a):
        self._a = a

    def __array__(self, *args, **kwargs):
        raise TypeError("Got unsupported ScalarType BFloat16")

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_array_of_data_numpy_cannot_read_goes_through_dlpack():
    source = mx.array([1.5, -2.25, 3.0], mx.bfloat16)
    for convert in (mx.array, mx.asarray, lambda x: mx.array(x, mx.float32)):
        a = convert(_Bfloat16Producer(source))
        assert a.tolist() == [1.5, -2.25, 3.0]
    assert mx.array(_Bfloat16Producer(source)).dtype is mx.bfloat16
    shared = mx.asarray(_Bfloat16Producer(source))
    assert _host_address(shared) == _host_address(source)  # asarray shares, array copies


def test_array_of_a_dlpack_capsule():
    x = np.arange(8, dtype=np.int32).reshape(2, 4)
    assert mx.array(x.__dlpack__()).tolist() == x.tolist()
    assert mx.array(x.__dlpack__(), mx.float32).dtype is mx.float32
    shared = mx.asarray(x.__dlpack__(max_version=(1, 0)))
    assert shared.dtype is mx.int32 and _host_address(shared) == x.ctypes.data
    capsule = mx.array([1.5, -2.0], mx.bfloat16).__dlpack__()
    assert mx.array(capsule).dtype is mx.bfloat16
    with pytest.raises(BufferError, match="^array: not an unconsumed DLPack capsule"):
        mx.array(capsule)  # a capsule is read once, as in MLX


def test_array_namespace():
    a = mx.array([1.0, 4.0])
    xp = a.__array_namespace__()
    assert xp is mx and a.__array_namespace__(api_version="2023.12") is mx
    for name in ("asarray", "zeros", "ones", "arange", "linspace", "full", "eye", "exp", "sqrt",
                 "add", "multiply", "equal", "where", "abs", "sum", "matmul", "reshape"):
        assert callable(getattr(xp, name)), name
    assert xp.sqrt(xp.asarray([4.0, 9.0])).tolist() == [2.0, 3.0]


def test_buffer_protocol():
    a = mx.array(np.arange(6, dtype=np.int32).reshape(2, 3))
    view = a.__buffer__(0)
    assert view.format == "i" and view.shape == (2, 3) and view.readonly
    assert np.asarray(view).tolist() == a.tolist()
    b = mx.array([1.0, 2.0], mx.bfloat16).__buffer__(0)
    assert b.format == "H" and b.itemsize == 2
    if sys.version_info >= (3, 12):
        assert memoryview(a).tolist() == a.tolist()


def _cupy_with_gpu():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:  # noqa: BLE001  (no CuPy, no driver or no device: any failure means none)
        return None


@pytest.mark.gpu
@pytest.mark.skipif(_cupy_with_gpu() is None, reason="needs CuPy and an NVIDIA GPU")
def test_from_dlpack_cupy_copies_to_the_host():
    cupy = _cupy_with_gpu()
    x = cupy.arange(6, dtype=cupy.float32)
    assert mx.from_dlpack(x).tolist() == list(range(6))
    with pytest.raises(BufferError, match="^from_dlpack: data on device"):
        mx.from_dlpack(x, copy=False)


JAX = importlib.util.find_spec("jax") is not None


@pytest.mark.skipif(not JAX, reason="JAX is not installed (it is optional: pip install jax)")
@pytest.mark.parametrize("name", ["float32", "bfloat16", "int32"])
def test_jax_both_ways(name):
    import jax.numpy as jnp

    x = jnp.arange(12).reshape(3, 4).astype(getattr(jnp, name))
    a = mx.from_dlpack(x)
    assert a.dtype == getattr(mx, name) and a.tolist() == np.asarray(x).tolist()
    back = jnp.from_dlpack(mx.arange(6).astype(getattr(mx, name)))
    assert back.dtype == getattr(jnp, name) and np.asarray(back).tolist() == list(range(6))


@pytest.mark.skipif(not JAX, reason="JAX is not installed (it is optional: pip install jax)")
@pytest.mark.parametrize("make", [
    lambda: mx.ones((2, 3)),  # a broadcast scalar: stride 0
    lambda: mx.broadcast_to(mx.array([1.0, 2.0]), (3, 2)),
    lambda: (mx.arange(12.0) + 0)[::3],  # a step
    lambda: mx.ones((4,), dtype=mx.bfloat16),
], ids=["ones", "broadcast", "step", "bfloat16"])
def test_jax_takes_broadcast_and_strided_arrays(make):
    import jax

    a = make()
    got = jax.dlpack.from_dlpack(a)  # JAX's legacy call gets a compact copy of such layouts
    assert np.asarray(got).astype(np.float64).tolist() == np.asarray(a).astype(np.float64).tolist()

