// Rotary position embeddings of the first `dims` features, forward or inverse.
//
// Layout: x, y are C-contiguous [B, M, T, d] (M: every axis between the first and the last
// two), rows = B * M * T, per_batch = M * T. offsets: int32 (or uint32, offset_unsigned = 1),
// one value (n_offsets = 1) or one per batch row (n_offsets = B). freqs: float [dims / 2] when
// has_freqs, else base^(-i / half) with log_base_over_half = float32(log(base) / half).
// Position of row l: (l + offset) * scale in float. Features past dims are copied.
// Launch: one block per row (grid = rows), blockDim.x a multiple of 32, each thread over pairs
// and copied features.
// Bounds: rows * d < 2^32 (32-bit offsets).
#include "rope.cuh"

using namespace nuvec;

template <typename T>
__global__ void __launch_bounds__(1024) rope(const T* __restrict__ x,
                                             const int* __restrict__ offsets,
                                             const float* __restrict__ freqs,
                                             T* __restrict__ y, unsigned t, unsigned d,
                                             unsigned dims, unsigned per_batch, int n_offsets,
                                             int offset_unsigned, float log_base_over_half,
                                             float scale, int traditional, int forward,
                                             int has_freqs) {
  const unsigned row = blockIdx.x, base = row * d, half = dims / 2;
  const int raw = offsets[n_offsets == 1 ? 0 : row / per_batch];
  const float offset = offset_unsigned ? (float)(unsigned)raw : (float)raw;
  const float pos = ((float)(row % t) + offset) * scale;
  for (unsigned j = threadIdx.x; j < half + (d - dims); j += blockDim.x) {
    if (j < half) {
      uint2 at = pair_index(j, dims, traditional);
      float theta = pos * inv_frequency(j, freqs, has_freqs, log_base_over_half);
      float2 r = rotate<T>(to_float(x[base + at.x]), to_float(x[base + at.y]), theta, forward);
      y[base + at.x] = from_float<T>(r.x);
      y[base + at.y] = from_float<T>(r.y);
    } else {
      unsigned k = dims + (j - half);
      y[base + k] = x[base + k];
    }
  }
}
