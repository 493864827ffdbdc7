"""The NVRTC loader: compile, resources, memory and disk caches, damaged entries, errors."""

import os
import subprocess
import sys

import pytest

from nuvec.backends.cuda import cache, loader, nvrtc

pytestmark = pytest.mark.skipif(not nvrtc.available(), reason="NVRTC wheel missing")

SOURCE = r"""
#include <cuda_fp16.h>
template <typename T, int B>
__global__ void __launch_bounds__(B) scale(const T* x, T* y, float a, int n) {
  __shared__ float s[B];
  int i = blockIdx.x * B + threadIdx.x;
  s[threadIdx.x] = i < n ? static_cast<float>(x[i]) : 0.f;
  __syncthreads();
  if (i < n) y[i] = static_cast<T>(a * s[threadIdx.x]);
}
"""
VARIANTS = ["scale<float, 128>", "scale<__half, 256>"]


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NUVEC_KERNEL_CACHE", str(tmp_path))
    loader.clear_memory_cache()
    yield tmp_path
    loader.clear_memory_cache()


def test_compiles_with_resources(fresh_cache):
    m = loader.load("scale", VARIANTS, "sm_80", source=SOURCE)
    assert m.cubin[:4] == b"\x7fELF"
    assert set(m.lowered) == set(VARIANTS) and all(v.startswith("_Z") for v in m.lowered.values())
    r = m.resources["scale<__half, 256>"]
    assert r.shared == 256 * 4 and r.spill_stores == 0 and 0 < r.registers < 64
    assert m.resources["scale<float, 128>"].shared == 128 * 4


def test_memory_then_disk_cache(fresh_cache):
    before = dict(loader.stats)
    a = loader.load("scale", VARIANTS, "sm_90", source=SOURCE)
    assert loader.load("scale", VARIANTS, "sm_90", source=SOURCE) is a
    loader.clear_memory_cache()
    b = loader.load("scale", VARIANTS, "sm_90", source=SOURCE)
    assert b is not a and b.cubin == a.cubin and b.resources == a.resources
    assert loader.stats["compiled"] == before["compiled"] + 1
    assert loader.stats["from_disk"] == before["from_disk"] + 1
    # Another architecture or option is another entry.
    c = loader.load("scale", VARIANTS, "sm_80", source=SOURCE)
    assert c.cubin != a.cubin


def test_second_process_compiles_nothing(fresh_cache):
    loader.load("scale", VARIANTS, "sm_90", source=SOURCE)
    code = ("import sys; from nuvec.backends.cuda import loader;"
            "loader.load('scale', sys.argv[1:], 'sm_90', source=open(sys.argv[0]).read());"
            "print(loader.stats['compiled'], loader.stats['from_disk'])")
    src = fresh_cache / "scale.cu"
    src.write_text(SOURCE)
    env = dict(os.environ, NUVEC_KERNEL_CACHE=str(fresh_cache))
    out = subprocess.run([sys.executable, "-c", code.replace("sys.argv[0]", repr(str(src))),
                          *VARIANTS], capture_output=True, text=True, env=env, cwd=os.getcwd())
    assert out.stdout.split() == ["0", "1"], out.stderr


def test_damaged_entry_is_rebuilt(fresh_cache):
    a = loader.load("scale", VARIANTS, "sm_90", source=SOURCE)
    a.path.write_bytes(a.cubin[: len(a.cubin) // 2])
    loader.clear_memory_cache()
    before = dict(loader.stats)
    b = loader.load("scale", VARIANTS, "sm_90", source=SOURCE)
    assert b.cubin == a.cubin and b.path.read_bytes() == a.cubin
    assert loader.stats["rebuilt"] == before["rebuilt"] + 1
    assert loader.stats["compiled"] == before["compiled"] + 1


def test_env_var_and_function_set_the_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("NUVEC_KERNEL_CACHE", raising=False)
    cache.set_cache_dir(tmp_path / "f")
    try:
        assert cache.cache_dir() == tmp_path / "f" and (tmp_path / "f").is_dir()
        monkeypatch.setenv("NUVEC_KERNEL_CACHE", str(tmp_path / "k"))
        assert cache.cache_dir() == tmp_path / "k" and (tmp_path / "k").is_dir()
    finally:
        cache.set_cache_dir(None)


def test_compile_error_names_kernel_variant_and_log(fresh_cache):
    bad = SOURCE.replace("a * s", "a * undefined_name * s")
    with pytest.raises(loader.KernelCompileError,
                       match=r"kernel scale \(variants scale<float, 128>.*sm_90\) failed") as e:
        loader.load("scale", VARIANTS, "sm_90", source=bad)
    assert "undefined_name" in str(e.value)


def test_parse_resources():
    log = """ptxas info    : Compiling entry function '_Z1kv' for 'sm_90'
ptxas info    : Function properties for _Z1kv
ptxas         .     8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem
ptxas info    : Compiling entry function '_Z1jv' for 'sm_90'
ptxas         .     32 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 32 bytes cumulative stack size, 4224 bytes smem
"""
    found = loader.parse_resources(log)
    r, j = found["_Z1kv"], found["_Z1jv"]
    assert (r.registers, r.spill_stores, r.spill_loads, r.stack, r.shared, r.barriers) == (
        40, 4, 12, 8, 2048, 1)
    assert (j.registers, j.stack, j.shared) == (32, 32, 4224)
