// Helpers shared by nuvec's kernels: dtype conversion, aligned vectors, warp and block
// reductions, the column sums of the norm VJPs.
//
// Compiled by NVRTC (with cuda_fp16.h / cuda_bf16.h from the CUDA runtime wheel) and by the
// kernel emulator (whose prelude defines the same names). Headers take shared memory as
// pointers: the emulator rewrites `__shared__` declarations of kernel files only.
// Offsets are 32-bit (`unsigned`): the launchers send larger shapes to the fallback.
#pragma once
#ifndef NUVEC_EMULATOR
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif

namespace nuvec {

constexpr unsigned FULL = 0xffffffffu;
#define NUVEC_NEG_INF __int_as_float(0xff800000)
#define NUVEC_NAN __int_as_float(0x7fc00000)
constexpr int MAX_BLOCK = 1024;

template <typename T> __device__ __forceinline__ float to_float(T v) { return static_cast<float>(v); }
template <typename T> __device__ __forceinline__ T from_float(float v) { return static_cast<T>(v); }
// `v` rounded to T and back: what a graph computing in T holds after one operation.
template <typename T> __device__ __forceinline__ float round_to(float v) { return to_float(from_float<T>(v)); }

// N elements of T loaded or stored as one aligned access (16 bytes when N = 16 / sizeof(T)).
template <typename T, int N> struct __align__(sizeof(T) * N) Vec { T v[N]; };

template <typename T, int N>
__device__ __forceinline__ Vec<T, N> load_vec(const T* p, unsigned i) {
  return *reinterpret_cast<const Vec<T, N>*>(p + i);
}
template <typename T, int N>
__device__ __forceinline__ void store_vec(T* p, unsigned i, const Vec<T, N>& v) {
  *reinterpret_cast<Vec<T, N>*>(p + i) = v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL, v, o));
  return v;
}

// A block-wide reduction of float pairs with `Op::warp` (a warp-wide reduction), returned to
// every thread; lanes past the block's warps contribute `identity`. `scratch`: 64 floats of
// shared memory. Starts with a barrier, so `scratch` may be reused by consecutive calls.
template <typename Op>
__device__ __forceinline__ float2 block_reduce(float2 v, float2 identity, float* scratch) {
  v = Op::warp(v);
  if (blockDim.x <= 32) return v;
  unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();
  if (lane == 0) { scratch[warp] = v.x; scratch[32 + warp] = v.y; }
  __syncthreads();
  bool in = lane < (blockDim.x + 31) / 32;
  return Op::warp(in ? make_float2(scratch[lane], scratch[32 + lane]) : identity);
}

struct SumOp {
  static __device__ __forceinline__ float2 warp(float2 v) { return make_float2(warp_sum(v.x), warp_sum(v.y)); }
};
struct MaxOp {
  static __device__ __forceinline__ float2 warp(float2 v) { return make_float2(warp_max(v.x), v.y); }
};

// The sum over the block (`scratch`: 64 floats).
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  return block_reduce<SumOp>(make_float2(v, 0.f), make_float2(0.f, 0.f), scratch).x;
}
__device__ __forceinline__ float block_max(float v, float* scratch) {
  return block_reduce<MaxOp>(make_float2(v, 0.f), make_float2(NUVEC_NEG_INF, 0.f), scratch).x;
}
// Two sums at once.
__device__ __forceinline__ float2 block_sum2(float a, float b, float* scratch) {
  return block_reduce<SumOp>(make_float2(a, b), make_float2(0.f, 0.f), scratch);
}

// A running (max, sum of exp(x - max)) pair, merged without overflow.
struct MaxSum {
  float m, s;
};
__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  float m = fmaxf(a.m, b.m);
  if (m == NUVEC_NEG_INF) return {m, 0.f};
  float s = (a.s == 0.f ? 0.f : a.s * expf(a.m - m)) + (b.s == 0.f ? 0.f : b.s * expf(b.m - m));
  return {m, s};
}
__device__ __forceinline__ MaxSum add_value(MaxSum a, float v) {
  if (v > a.m) return {v, a.s * (a.m == NUVEC_NEG_INF ? 0.f : expf(a.m - v)) + 1.f};
  return {a.m, a.s + (v == NUVEC_NEG_INF ? 0.f : expf(v - a.m))};
}
struct MergeOp {
  static __device__ __forceinline__ float2 warp(float2 v) {
    MaxSum a{v.x, v.y};
    for (int o = 16; o > 0; o >>= 1)
      a = merge(a, MaxSum{__shfl_xor_sync(FULL, a.m, o), __shfl_xor_sync(FULL, a.s, o)});
    return make_float2(a.m, a.s);
  }
};
// The block's merged pair, returned to every thread (`scratch`: 64 floats).
__device__ __forceinline__ MaxSum block_merge(MaxSum a, float* scratch) {
  float2 r = block_reduce<MergeOp>(make_float2(a.m, a.s), make_float2(NUVEC_NEG_INF, 0.f), scratch);
  return MaxSum{r.x, r.y};
}

// Per-column sums over the rows a block visits (the norm VJPs' weight and bias gradients):
// a thread's first VEC columns (i < blockDim.x * VEC) in registers, the others read-modify-
// written in `part` (global, this block's row of it). `flush` stores the registers.
template <int VEC>
struct ColumnSums {
  float first[VEC];
  float* part;
  __device__ __forceinline__ explicit ColumnSums(float* p) : part(p) {
    for (int k = 0; k < VEC; ++k) first[k] = 0.f;
  }
  __device__ __forceinline__ void add(unsigned i, int k, float v, bool first_row) {
    if (i < blockDim.x * VEC) first[k] += v;
    else part[i + k] = first_row ? v : part[i + k] + v;
  }
  __device__ __forceinline__ void flush(unsigned d) {
    unsigned i = threadIdx.x * VEC;
    if (i < d)
      for (int k = 0; k < VEC; ++k) part[i + k] = first[k];
  }
};

}  // namespace nuvec

// out[c] = sum over p of part[p * d + c] (float partial sums of the norm VJPs' weight and
// bias gradients), cast to T. Grid: ceil(d / blockDim.x) blocks.
template <typename T>
__global__ void column_sum(const float* __restrict__ part, T* __restrict__ out, unsigned parts,
                           unsigned d) {
  unsigned c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= d) return;
  float s = 0.f;
  for (unsigned p = 0; p < parts; ++p) s += part[p * d + c];
  out[c] = nuvec::from_float<T>(s);
}
