// The rotation of RoPE, shared by rope.cu and norm_rope.cu: angles in float, each product and
// sum rounded to T as the fallback graph (which computes in T) rounds.
#pragma once
#include "common.cuh"

namespace nuvec {

// 1 / frequency of pair i: 1 / freqs[i], or base^(-i / half) as exp(-i * log(base) / half).
__device__ __forceinline__ float inv_frequency(unsigned i, const float* freqs, int has_freqs,
                                               float log_base_over_half) {
  return has_freqs ? 1.0f / freqs[i] : expf(-(float)i * log_base_over_half);
}

// The rotated pair (a, b) of (x1, x2) at angle theta (forward, or the inverse rotation).
template <typename T>
__device__ __forceinline__ float2 rotate(float x1, float x2, float theta, int forward) {
  float c = round_to<T>(cosf(theta)), s = round_to<T>(sinf(theta));
  float x1c = round_to<T>(x1 * c), x1s = round_to<T>(x1 * s);
  float x2c = round_to<T>(x2 * c), x2s = round_to<T>(x2 * s);
  if (forward) return make_float2(x1c - x2s, x1s + x2c);
  return make_float2(x2s + x1c, x2c - x1s);
}

// Feature indices of pair i: (2i, 2i + 1) when traditional, else (i, i + dims / 2).
__device__ __forceinline__ uint2 pair_index(unsigned i, unsigned dims, int traditional) {
  return traditional ? make_uint2(2 * i, 2 * i + 1) : make_uint2(i, i + dims / 2);
}

}  // namespace nuvec
