"""Opt-in (`NUVEC_SANITIZE=1`): the emulator under AddressSanitizer and ThreadSanitizer finds
a planted out-of-bounds write and a planted race, and reports nothing for correct kernels."""

import os
import subprocess
import sys
import textwrap

import pytest

from nuvec.backends.cuda import emulator

pytestmark = pytest.mark.sanitize

SOURCE = r"""
__global__ void write(float* y, int n, int extra) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n + extra) y[i] = 1.f;  // extra > 0 writes past the end
}
template <bool SYNC>
__global__ void reverse(const float* x, float* y) {
  __shared__ float s[128];
  s[threadIdx.x] = x[threadIdx.x];
  if (SYNC) __syncthreads();
  y[threadIdx.x] = s[127 - threadIdx.x];  // without the barrier: reads another thread's write
}
"""

SCRIPT = textwrap.dedent("""
    import sys, numpy as np
    from nuvec.backends.cuda import emulator
    m = emulator.build("planted", ["write", "reverse<true>", "reverse<false>"],
                       source=open(sys.argv[1]).read(), sanitize=sys.argv[2])
    x = np.arange(128, dtype=np.float32)
    if sys.argv[3] == "oob":
        m.launch("write", (2,), (256,), 0, [np.zeros(500, np.float32), np.int32(500),
                                            np.int32(int(sys.argv[4]))])
    else:
        m.launch(f"reverse<{sys.argv[4]}>", (1,), (128,), 0, [x, np.zeros(128, np.float32)])
    print("finished")
""")


def run(tmp_path, sanitize, *case):
    src, script = tmp_path / "planted.cu", tmp_path / "run.py"
    src.write_text(SOURCE)
    script.write_text(SCRIPT)
    env = dict(os.environ, LD_PRELOAD=emulator.sanitizer_runtime(sanitize),
               ASAN_OPTIONS="detect_leaks=0", TSAN_OPTIONS="report_bugs=1 exitcode=66",
               PYTHONPATH=os.getcwd())
    return subprocess.run([sys.executable, str(script), str(src), sanitize, *case],
                          capture_output=True, text=True, env=env, timeout=300)


def test_address_sanitizer_finds_the_out_of_bounds_write(tmp_path):
    clean = run(tmp_path, "address", "oob", "0")
    assert clean.returncode == 0 and "finished" in clean.stdout, clean.stderr[-3000:]
    bad = run(tmp_path, "address", "oob", "4")
    assert "heap-buffer-overflow" in bad.stderr and bad.returncode != 0, bad.stderr[-3000:]


def test_thread_sanitizer_finds_the_race(tmp_path):
    clean = run(tmp_path, "thread", "race", "true")
    assert "data race" not in clean.stderr and "finished" in clean.stdout, clean.stderr[-3000:]
    bad = run(tmp_path, "thread", "race", "false")
    assert "ThreadSanitizer: data race" in bad.stderr, bad.stderr[-3000:]


KERNELS_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    from kernel_checks import cases, check
    from nuvec.backends.cuda.runner import EmulatorRunner
    import kernel_checks
    kernel_checks.RUNNER = EmulatorRunner(sanitize=sys.argv[2])
    for name, p, inputs in cases():
        check(p, *inputs)
    from nuvec.backends.cuda import emulator
    assert all(m.path.read_bytes().count(b"__" + sys.argv[2][0].encode() + b"san")
               for m in emulator.built())
    print("finished")
""")


@pytest.mark.parametrize("sanitize", ["address", "thread"])
def test_every_kernel_case_is_clean_under_the_sanitizers(tmp_path, sanitize):
    script = tmp_path / "kernels.py"
    script.write_text(KERNELS_SCRIPT)
    env = dict(os.environ, LD_PRELOAD=emulator.sanitizer_runtime(sanitize),
               ASAN_OPTIONS="detect_leaks=0", TSAN_OPTIONS="exitcode=66",
               PYTHONPATH=os.getcwd())
    done = subprocess.run([sys.executable, str(script), os.path.dirname(__file__), sanitize],
                          capture_output=True, text=True, env=env, timeout=1200, check=False)
    assert done.returncode == 0 and "finished" in done.stdout, done.stderr[-4000:]
    assert "ERROR: AddressSanitizer" not in done.stderr and "data race" not in done.stderr
