// RMS norm (optional) + RoPE at positions offset + l, written into a cache or a new array.
//
// Layout: x is C-contiguous [B, H, L, d] with d <= 1024; w is [d] (read when normalize = 1);
// freqs as rope.cu. out is [B, H, S, d] (the cache, S >= offset + L, already holding the
// other rows) or [B, H, L, d] (S = L, offset only moves the positions: out_offset = 0).
// Row (b, h, l) goes to out row (b * H + h) * S + out_offset + l.
// Launch: one block per row (grid = B * H * L), blockDim.x a multiple of 32 (at most 512: one
// thread per pair at least). The normalised row is staged in shared memory.
// Bounds: out's and x's element counts < 2^32 (32-bit offsets).
#include "rope.cuh"

using namespace nuvec;

template <typename T>
__global__ void __launch_bounds__(512) norm_rope(const T* __restrict__ x,
                                                 const T* __restrict__ w,
                                                 const float* __restrict__ freqs,
                                                 T* __restrict__ out, unsigned l_len,
                                                 unsigned d, unsigned dims, unsigned s_len,
                                                 unsigned out_offset, unsigned offset,
                                                 float eps, int normalize,
                                                 float log_base_over_half, float scale,
                                                 int traditional, int has_freqs) {
  __shared__ float row_values[1024];
  __shared__ float scratch[64];
  const unsigned row = blockIdx.x, l = row % l_len, half = dims / 2;
  const T* xr = x + row * d;
  T* orow = out + ((row / l_len) * s_len + out_offset + l) * d;
  float n = 1.f;
  if (normalize) {
    float ss = 0.f;
    for (unsigned i = threadIdx.x; i < d; i += blockDim.x) ss += to_float(xr[i]) * to_float(xr[i]);
    n = rsqrtf(block_sum(ss, scratch) / (float)d + eps);
  }
  for (unsigned i = threadIdx.x; i < d; i += blockDim.x) {
    float v = to_float(xr[i]);
    row_values[i] = normalize ? round_to<T>(round_to<T>(v * n) * to_float(w[i])) : v;
  }
  __syncthreads();
  const float pos = ((float)l + (float)offset) * scale;
  for (unsigned j = threadIdx.x; j < half + (d - dims); j += blockDim.x) {
    if (j < half) {
      uint2 at = pair_index(j, dims, traditional);
      float theta = pos * inv_frequency(j, freqs, has_freqs, log_base_over_half);
      float2 r = rotate<T>(row_values[at.x], row_values[at.y], theta, 1);
      orow[at.x] = from_float<T>(r.x);
      orow[at.y] = from_float<T>(r.y);
    } else {
      unsigned k = dims + (j - half);
      orow[k] = from_float<T>(row_values[k]);
    }
  }
}
