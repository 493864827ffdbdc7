// Softmax and log-sum-exp over the last axis, for any row length.
//
// Layout: x, y are C-contiguous [rows, d]; logsumexp's out is [rows]. T is float, __half or
// __nv_bfloat16; the running max and sum are float. Launch: blockDim.x a multiple of 32, at
// most 1024.
// - Rows that one block takes: softmax / logsumexp, grid = rows.
// - Longer rows, split in `chunks` chunks of `chunk` elements (a multiple of VEC):
//   row_stats, grid (chunks, rows), writes each chunk's (max, sum) to part[rows, chunks, 2];
//   then softmax_finish, grid (chunks, rows), or logsumexp_finish, grid rows, merge a row's
//   partials (no block waits for another: two launches).
// Bounds: rows * d < 2^32 (32-bit offsets). VEC > 1 needs d % VEC == 0 and 16-byte aligned
// pointers.
#include "common.cuh"

using namespace nuvec;

template <typename T, int VEC>
__device__ __forceinline__ MaxSum chunk_stats(const T* __restrict__ xr, unsigned lo, unsigned hi,
                                              float* scratch) {
  MaxSum a{NUVEC_NEG_INF, 0.f};
  for (unsigned i = lo + threadIdx.x * VEC; i < hi; i += blockDim.x * VEC) {
    Vec<T, VEC> v = load_vec<T, VEC>(xr, i);
    for (int k = 0; k < VEC; ++k) a = add_value(a, to_float(v.v[k]));
  }
  return block_merge(a, scratch);
}

// y = T(exp(x - m) / s) over [lo, hi) of a row.
template <typename T, int VEC>
__device__ __forceinline__ void write_softmax(const T* __restrict__ xr, T* __restrict__ yr,
                                              unsigned lo, unsigned hi, MaxSum st) {
  for (unsigned i = lo + threadIdx.x * VEC; i < hi; i += blockDim.x * VEC) {
    Vec<T, VEC> v = load_vec<T, VEC>(xr, i), o;
    for (int k = 0; k < VEC; ++k) o.v[k] = from_float<T>(expf(to_float(v.v[k]) - st.m) / st.s);
    store_vec<T, VEC>(yr, i, o);
  }
}

__device__ __forceinline__ float lse_of(MaxSum st) {
  return isinf(st.m) ? st.m : st.m + logf(st.s);
}

template <typename T, int VEC>
__global__ void __launch_bounds__(1024) softmax(const T* __restrict__ x, T* __restrict__ y,
                                                unsigned d) {
  __shared__ float scratch[64];
  const unsigned base = blockIdx.x * d;
  MaxSum st = chunk_stats<T, VEC>(x + base, 0, d, scratch);
  write_softmax<T, VEC>(x + base, y + base, 0, d, st);
}

template <typename T, int VEC>
__global__ void __launch_bounds__(1024) logsumexp(const T* __restrict__ x, T* __restrict__ out,
                                                  unsigned d) {
  __shared__ float scratch[64];
  MaxSum st = chunk_stats<T, VEC>(x + blockIdx.x * d, 0, d, scratch);
  if (threadIdx.x == 0) out[blockIdx.x] = from_float<T>(lse_of(st));
}

template <typename T, int VEC>
__global__ void __launch_bounds__(1024) row_stats(const T* __restrict__ x,
                                                  float* __restrict__ part, unsigned d,
                                                  unsigned chunk) {
  __shared__ float scratch[64];
  const unsigned row = blockIdx.y, lo = blockIdx.x * chunk, hi = min(d, lo + chunk);
  MaxSum st = chunk_stats<T, VEC>(x + row * d, lo, hi, scratch);
  if (threadIdx.x == 0) {
    part[2 * (row * gridDim.x + blockIdx.x)] = st.m;
    part[2 * (row * gridDim.x + blockIdx.x) + 1] = st.s;
  }
}

// The merged (max, sum) of a row's `chunks` partials.
__device__ __forceinline__ MaxSum merge_parts(const float* __restrict__ part, unsigned row,
                                              unsigned chunks, float* scratch) {
  MaxSum a{NUVEC_NEG_INF, 0.f};
  for (unsigned c = threadIdx.x; c < chunks; c += blockDim.x)
    a = merge(a, MaxSum{part[2 * (row * chunks + c)], part[2 * (row * chunks + c) + 1]});
  return block_merge(a, scratch);
}

template <typename T, int VEC>
__global__ void __launch_bounds__(1024) softmax_finish(const T* __restrict__ x,
                                                       const float* __restrict__ part,
                                                       T* __restrict__ y, unsigned d,
                                                       unsigned chunk) {
  __shared__ float scratch[64];
  const unsigned row = blockIdx.y, lo = blockIdx.x * chunk, hi = min(d, lo + chunk);
  MaxSum st = merge_parts(part, row, gridDim.x, scratch);
  write_softmax<T, VEC>(x + row * d, y + row * d, lo, hi, st);
}

template <typename T>
__global__ void __launch_bounds__(1024) logsumexp_finish(const float* __restrict__ part,
                                                         T* __restrict__ out, unsigned chunks) {
  __shared__ float scratch[64];
  MaxSum st = merge_parts(part, blockIdx.x, chunks, scratch);
  if (threadIdx.x == 0) out[blockIdx.x] = from_float<T>(lse_of(st));
}
