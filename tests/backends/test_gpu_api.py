"""The GPU's availability and MLX's device, memory, `cuda` and `metal` functions, without a GPU."""

from __future__ import annotations

import subprocess
import sys

import pytest

import nuvec as mx
from nuvec.backends.cupy import CupyBackend
from nuvec.graph import memory
from nuvec.graph.device import backend_for, loaded_backends


def test_import_nuvec_imports_no_cupy():
    code = "import nuvec as mx, sys; (mx.ones(2) * 2).tolist(); mx.default_device(); " \
           "print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_without_cupy_the_reason_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy then raises ImportError
    backend = CupyBackend()
    assert not backend.available()
    reason = backend.unavailable_reason()
    assert reason.startswith("CuPy is not installed")
    assert 'pip install "nuvec[gpu]"' in reason and 'pip install "nuvec[gpu-cuda12]"' in reason


def test_with_cupy_and_no_device_the_reason_says_so():
    pytest.importorskip("cupy", reason="CuPy is not installed here")
    backend = CupyBackend()
    if backend.available():
        pytest.skip("a CUDA device is present")
    assert backend.unavailable_reason().startswith("CuPy is installed but finds no CUDA device")


def test_a_gpu_stream_without_a_gpu_raises_with_the_reason():
    if mx.is_available(mx.gpu):
        pytest.skip("a GPU is available")
    with pytest.raises(RuntimeError, match="the gpu device is not available: CuPy is"):
        mx.add(1, 2, stream=mx.gpu)
    with pytest.raises(RuntimeError, match="the gpu device is not available"):
        backend_for(mx.gpu)
    assert mx.device_count(mx.gpu) == 0 and not mx.cuda.is_available()


def test_device_count_and_info():
    assert mx.device_count(mx.cpu) == 1
    info = mx.device_info(mx.cpu)
    assert {"name", "architecture", "memory_size"} <= set(info) and info["memory_size"] > 0
    assert mx.device_info() == mx.device_info(mx.default_device())
    with pytest.raises(TypeError, match="device_count: expected a DeviceType, got str"):
        mx.device_count("gpu")


def test_metal_is_never_available_and_its_functions_are_harmless(monkeypatch):
    assert mx.metal.is_available() is False and mx.metal.device_info() == {}
    assert mx.metal.start_capture("x.gputrace") is None and mx.metal.stop_capture() is None
    assert mx.metal.get_active_memory() == mx.get_active_memory()
    monkeypatch.setattr(memory, "get_cache_memory", lambda: 7)
    assert mx.metal.get_cache_memory() == 7  # forwarded
    old = mx.metal.set_cache_limit(123)
    assert mx.metal.set_cache_limit(old) == 123


def test_memory_limits_return_the_previous_value():
    old = mx.set_memory_limit(1 << 30)
    assert old > 0
    assert mx.set_memory_limit(old) == 1 << 30
    old_cache = mx.set_cache_limit(0)
    assert mx.set_cache_limit(old_cache) == 0
    assert mx.set_wired_limit(5) == 0 and mx.set_wired_limit(0) == 5


@pytest.mark.parametrize("fn", [mx.set_memory_limit, mx.set_cache_limit, mx.set_wired_limit])
@pytest.mark.parametrize("bad", [-1, 1.5, True, "1"])
def test_memory_limits_reject_bad_values(fn, bad):
    with pytest.raises(ValueError, match=f"{fn.__name__}: limit must be a non-negative int"):
        fn(bad)


def test_cache_functions_reach_every_loaded_backend(monkeypatch):
    calls = []
    for backend in loaded_backends():
        monkeypatch.setattr(backend, "cache_memory", lambda: 5)
        monkeypatch.setattr(backend, "clear_cache", lambda: calls.append("clear"))
    mx.clear_cache()
    assert mx.get_cache_memory() == 5 * len(loaded_backends())
    assert calls == ["clear"] * len(loaded_backends())
