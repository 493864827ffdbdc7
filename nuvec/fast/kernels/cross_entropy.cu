// Cross-entropy of logits against integer targets, and its gradient for the logits.
//
// Layout: x, dx are C-contiguous [rows, d]; targets (int32), loss and g (float32) are [rows].
// A negative target counts from the end (t + d); a target still outside [0, d) gives a NaN
// loss and gradient row (never a plausible value; the public op rejects such targets at the
// call when their values are known). T is float, __half or __nv_bfloat16; all arithmetic is float.
// Launch: blockDim.x a multiple of 32, at most 1024; cross_entropy one block per row
// (grid = rows); cross_entropy_vjp grid (ceil(d / (blockDim.x * VEC)), rows).
// Bounds: rows * d < 2^32 (32-bit offsets). VEC > 1 needs d % VEC == 0 and 16-byte aligned
// pointers.
#include "common.cuh"

using namespace nuvec;

__device__ __forceinline__ int wrap_target(int t, unsigned d) {
  if (t < 0) t += (int)d;
  return (t >= 0 && (unsigned)t < d) ? t : -1;
}

template <typename T, int VEC>
__global__ void __launch_bounds__(1024) cross_entropy(const T* __restrict__ x,
                                                      const int* __restrict__ targets,
                                                      float* __restrict__ loss, unsigned d) {
  __shared__ float scratch[64];
  const T* xr = x + blockIdx.x * d;
  MaxSum a{NUVEC_NEG_INF, 0.f};
  for (unsigned i = threadIdx.x * VEC; i < d; i += blockDim.x * VEC) {
    Vec<T, VEC> v = load_vec<T, VEC>(xr, i);
    for (int k = 0; k < VEC; ++k) a = add_value(a, to_float(v.v[k]));
  }
  a = block_merge(a, scratch);
  if (threadIdx.x == 0) {
    int t = wrap_target(targets[blockIdx.x], d);
    float lse = isinf(a.m) ? a.m : a.m + logf(a.s);
    loss[blockIdx.x] = t >= 0 ? lse - to_float(xr[t]) : NUVEC_NAN;
  }
}

// dx = T(g * (exp(x - lse) - onehot)) with lse = loss + x[target].
template <typename T, int VEC>
__global__ void __launch_bounds__(1024) cross_entropy_vjp(const T* __restrict__ x,
                                                          const int* __restrict__ targets,
                                                          const float* __restrict__ loss,
                                                          const float* __restrict__ g,
                                                          T* __restrict__ dx, unsigned d) {
  const unsigned row = blockIdx.y, i = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
  if (i >= d) return;
  const T* xr = x + row * d;
  int t = wrap_target(targets[row], d);
  float lse = loss[row] + (t >= 0 ? to_float(xr[t]) : NUVEC_NAN), gr = g[row];
  Vec<T, VEC> v = load_vec<T, VEC>(xr, i), o;
  for (int k = 0; k < VEC; ++k) {
    float p = expf(to_float(v.v[k]) - lse) - ((int)(i + k) == t ? 1.f : 0.f);
    o.v[k] = from_float<T>(gr * p);
  }
  store_vec<T, VEC>(dx + row * d, i, o);
}
