"""The kernel emulator's CUDA semantics: indices, barriers, warps, atomics, shared memory,
half types, and failures it must show (a missing barrier, a deadlock)."""

import ml_dtypes
import numpy as np
import pytest

from nuvec.backends.cuda import emulator

SOURCE = r"""
template <int B, bool SYNC>
__global__ void block_sum(const float* x, float* out, int n) {
  __shared__ float s[B];
  float v = 0.f;
  for (int i = threadIdx.x; i < n; i += B) v += x[blockIdx.x * n + i];
  s[threadIdx.x] = v;
  if (SYNC) __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.f;
    for (int i = 0; i < B; ++i) t += s[i];
    out[blockIdx.x] = t;
  }
}

// Per lane: xor-butterfly sum, down-shift sum, up-shifted value, broadcast of lane 3, ballot
// of odd lanes, any/all of lane < 40.
__global__ void warps(const float* x, float* out, unsigned* votes) {
  int t = threadIdx.x, lane = t % 32;
  float v = x[t], a = v, d = v;
  for (int o = 16; o; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
  for (int o = 16; o; o >>= 1) d += __shfl_down_sync(0xffffffffu, d, o);
  float u = __shfl_up_sync(0xffffffffu, v, 1);
  float b = __shfl_sync(0xffffffffu, v, 3);
  out[4 * t + 0] = a; out[4 * t + 1] = d; out[4 * t + 2] = u; out[4 * t + 3] = b;
  unsigned ballot = __ballot_sync(0xffffffffu, lane & 1);
  int any = __any_sync(0xffffffffu, t < 40), all = __all_sync(0xffffffffu, t < 40);
  votes[3 * t] = ballot; votes[3 * t + 1] = any; votes[3 * t + 2] = all;
}

__global__ void indices(int* out) {
  int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  int n = blockDim.x * blockDim.y * blockDim.z;
  out[b * n + t] = 1000 * b + t;
}

__global__ void atomics(int* counter, float* total, int* top) {
  atomicAdd(counter, 1);
  atomicAdd(total, 0.5f);
  atomicMax(top, (int)(threadIdx.x * 7 % 100));
}

// Dynamic shared memory is per block: every block sees garbage, never an earlier block's data.
__global__ void dynamic_shared(float* out) {
  extern __shared__ float buf[];
  if (threadIdx.x == 0) out[blockIdx.x] = buf[1];
  __syncthreads();
  buf[threadIdx.x] = (float)blockIdx.x;
}

__global__ void deadlock(float* out) {
  if (threadIdx.x == 0) return;
  for (int i = 0; i < 2; ++i) {
    if (threadIdx.x < 8) __syncthreads(); else __syncwarp();
  }
  out[threadIdx.x] = 1.f;
}

template <typename T>
__global__ void convert(const float* x, T* y, float* back, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { y[i] = static_cast<T>(x[i]); back[i] = static_cast<float>(y[i]); }
}
"""
VARIANTS = ["block_sum<256, true>", "block_sum<256, false>", "warps", "indices", "atomics",
            "dynamic_shared", "deadlock", "convert<__half>", "convert<__nv_bfloat16>"]


@pytest.fixture(scope="module")
def module():
    return emulator.build("emulator_semantics", VARIANTS, source=SOURCE)


def test_block_reduction(module):
    x = np.random.default_rng(0).random((5, 1000), np.float32)
    out = np.zeros(5, np.float32)
    module.launch("block_sum<256, true>", (5,), (256,), 0, [x, out, np.int32(1000)])
    np.testing.assert_allclose(out, x.astype(np.float64).sum(1), rtol=1e-5)


def test_missing_barrier_changes_the_result(module):
    x = np.ones((4, 256), np.float32)
    wrong = 0
    for seed in range(3):
        out = np.zeros(4, np.float32)
        module.launch("block_sum<256, false>", (4,), (256,), 0, [x, out, np.int32(256)],
                      seed=seed)
        wrong += int(np.any(out != 256))
    assert wrong == 3


def test_warp_collectives(module):
    x = np.arange(64, dtype=np.float32)
    out, votes = np.zeros(256, np.float32), np.zeros(192, np.uint32)
    module.launch("warps", (1,), (64,), 0, [x, out, votes])
    out, votes = out.reshape(64, 4), votes.reshape(64, 3)
    for t in range(64):
        w = x[t // 32 * 32: t // 32 * 32 + 32]
        lane = t % 32
        assert out[t, 0] == w.sum()
        # shfl_down: lane l adds lanes l+o (its own value where l+o is past the warp).
        d = w.copy()
        for o in (16, 8, 4, 2, 1):
            d = d + np.where(np.arange(32) + o < 32, np.roll(d, -o), d)
        assert out[t, 1] == d[lane]
        assert out[t, 2] == (w[lane - 1] if lane else w[0])
        assert out[t, 3] == w[3]
        assert votes[t, 0] == 0xAAAAAAAA
        assert votes[t, 1] == 1 and votes[t, 2] == (1 if t < 32 else 0)


def test_grid_and_block_indices(module):
    out = np.zeros(2 * 3 * 2 * 24, np.int32)
    module.launch("indices", (2, 3, 2), (4, 3, 2), 0, [out])
    b, t = np.divmod(np.arange(out.size), 24)
    np.testing.assert_array_equal(out, 1000 * b + t)


def test_atomics(module):
    counter, total, top = np.zeros(1, np.int32), np.zeros(1, np.float32), np.zeros(1, np.int32)
    module.launch("atomics", (3,), (100,), 0, [counter, total, top])
    assert counter[0] == 300 and total[0] == 150.0 and top[0] == 99


def test_dynamic_shared_memory_is_per_block(module):
    out = np.zeros(3, np.float32)
    module.launch("dynamic_shared", (3,), (32,), 32 * 4, [out])
    assert np.isnan(out).all()  # 0xff bytes: a NaN


def test_deadlock_is_reported(module):
    with pytest.raises(emulator.EmulatorError, match="deadlock"):
        module.launch("deadlock", (1,), (64,), 0, [np.zeros(64, np.float32)])


@pytest.mark.parametrize("kind,dtype", [("__half", np.float16),
                                        ("__nv_bfloat16", ml_dtypes.bfloat16)])
def test_half_types_round_as_numpy(module, kind, dtype):
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(200).astype(np.float32) * 1e3,
                        np.float32([0.0, -0.0, np.inf, -np.inf, 1e-8, 65504.0, 70000.0])])
    y, back = np.zeros(x.size, dtype), np.zeros(x.size, np.float32)
    with np.errstate(over="ignore"):
        want = x.astype(dtype)
    module.launch(f"convert<{kind}>", (2,), (128,), 0, [x, y, back, np.int32(x.size)])
    np.testing.assert_array_equal(y.view(np.uint16), want.view(np.uint16))
    np.testing.assert_array_equal(back, want.astype(np.float32))


def test_bad_arguments(module):
    with pytest.raises(emulator.EmulatorError, match="argument 2 must be a NumPy array or NumPy"):
        module.launch("block_sum<256, true>", (1,), (256,), 0,
                      [np.zeros(4, np.float32), np.zeros(1, np.float32), 4])
    with pytest.raises(emulator.EmulatorError, match="no variant nope"):
        module.launch("nope", (1,), (1,), 0, [])
    with pytest.raises(emulator.EmulatorError, match="1 to 1024 threads"):
        module.launch("indices", (1,), (2048,), 0, [np.zeros(2048, np.int32)])
    with pytest.raises(emulator.EmulatorError, match="not C-contiguous"):
        module.launch("indices", (1,), (2,), 0, [np.zeros((4, 4), np.int32)[:, 0]])


def test_compile_error_shows_the_compiler_messages():
    with pytest.raises(emulator.EmulatorError, match="kernel broken failed to compile"):
        emulator.build("broken", ["k"], source="__global__ void k() { undefined_call(); }")
