// RMS norm, residual add + RMS norm, and the RMS norm VJP over the last axis.
//
// Layout: x, r, g, y, h, dx are C-contiguous [rows, d]; w is [d] when has_w = 1 (has_w = 0: the
// op's weight is the scalar 1 and w is not read). T is float, __half or __nv_bfloat16; sums are
// float. Launch: blockDim.x a multiple of 32, at most 1024; rms_norm and add_rms_norm one block
// per row (grid = rows); rms_norm_vjp `parts` blocks, each over rows blockIdx.x + k * parts,
// writing float partial weight gradients part[parts, d], summed by column_sum.
// Bounds: rows * d < 2^32 (32-bit offsets; larger shapes take the fallback). VEC > 1 needs
// d % VEC == 0 and 16-byte aligned pointers.
#include "common.cuh"

using namespace nuvec;

// 1 / sqrt(mean + eps) from a thread's share `ss` of a row's sum of squares.
__device__ __forceinline__ float inv_rms(float ss, unsigned d, float eps, float* scratch) {
  return rsqrtf(block_sum(ss, scratch) / (float)d + eps);
}

// y = T(x * n) * w with n = 1 / sqrt(mean(x^2) + eps), as the fallback rounds.
template <typename T, int VEC>
__device__ __forceinline__ void normalize_row(const T* __restrict__ xr, const T* __restrict__ w,
                                              T* __restrict__ yr, unsigned d, float n, int has_w) {
  for (unsigned i = threadIdx.x * VEC; i < d; i += blockDim.x * VEC) {
    Vec<T, VEC> v = load_vec<T, VEC>(xr, i), o;
    if (has_w) {
      Vec<T, VEC> wv = load_vec<T, VEC>(w, i);
      for (int k = 0; k < VEC; ++k)
        o.v[k] = from_float<T>(round_to<T>(to_float(v.v[k]) * n) * to_float(wv.v[k]));
    } else {
      for (int k = 0; k < VEC; ++k) o.v[k] = from_float<T>(to_float(v.v[k]) * n);
    }
    store_vec<T, VEC>(yr, i, o);
  }
}

template <typename T, int VEC>
__global__ void __launch_bounds__(1024) rms_norm(const T* __restrict__ x, const T* __restrict__ w,
                                                 T* __restrict__ y, unsigned d, float eps,
                                                 int has_w) {
  __shared__ float scratch[64];
  const T* xr = x + blockIdx.x * d;
  float ss = 0.f;
  for (unsigned i = threadIdx.x * VEC; i < d; i += blockDim.x * VEC) {
    Vec<T, VEC> v = load_vec<T, VEC>(xr, i);
    for (int k = 0; k < VEC; ++k) ss += to_float(v.v[k]) * to_float(v.v[k]);
  }
  normalize_row<T, VEC>(xr, w, y + blockIdx.x * d, d, inv_rms(ss, d, eps, scratch), has_w);
}

// h = T(x + r); y = rms_norm(h).
template <typename T, int VEC>
__global__ void __launch_bounds__(1024) add_rms_norm(const T* __restrict__ x,
                                                     const T* __restrict__ r,
                                                     const T* __restrict__ w, T* __restrict__ h,
                                                     T* __restrict__ y, unsigned d, float eps,
                                                     int has_w) {
  __shared__ float scratch[64];
  const unsigned base = blockIdx.x * d;
  float ss = 0.f;
  for (unsigned i = threadIdx.x * VEC; i < d; i += blockDim.x * VEC) {
    Vec<T, VEC> a = load_vec<T, VEC>(x + base, i), b = load_vec<T, VEC>(r + base, i), s;
    for (int k = 0; k < VEC; ++k) s.v[k] = from_float<T>(to_float(a.v[k]) + to_float(b.v[k]));
    for (int k = 0; k < VEC; ++k) ss += to_float(s.v[k]) * to_float(s.v[k]);
    store_vec<T, VEC>(h + base, i, s);  // read back below by this same thread
  }
  normalize_row<T, VEC>(h + base, w, y + base, d, inv_rms(ss, d, eps, scratch), has_w);
}

// dx = g w n - x mean(g w x) n^3; part[blockIdx.x, :] = sum over this block's rows of g x n.
template <typename T, int VEC>
__global__ void __launch_bounds__(1024) rms_norm_vjp(const T* __restrict__ x,
                                                     const T* __restrict__ w,
                                                     const T* __restrict__ g, T* __restrict__ dx,
                                                     float* __restrict__ part, unsigned rows,
                                                     unsigned d, float eps, int has_w) {
  __shared__ float scratch[64];
  ColumnSums<VEC> dw(part + blockIdx.x * d);
  for (unsigned row = blockIdx.x; row < rows; row += gridDim.x) {
    const unsigned base = row * d;
    float ss = 0.f, t = 0.f;
    for (unsigned i = threadIdx.x * VEC; i < d; i += blockDim.x * VEC) {
      Vec<T, VEC> xv = load_vec<T, VEC>(x + base, i), gv = load_vec<T, VEC>(g + base, i);
      for (int k = 0; k < VEC; ++k) {
        float xf = to_float(xv.v[k]), wf = has_w ? to_float(w[i + k]) : 1.f;
        ss += xf * xf;
        t += to_float(gv.v[k]) * wf * xf;
      }
    }
    float2 sums = block_sum2(ss, t, scratch);
    float n = rsqrtf(sums.x / (float)d + eps), mt = sums.y / (float)d, n3 = n * n * n;
    for (unsigned i = threadIdx.x * VEC; i < d; i += blockDim.x * VEC) {
      Vec<T, VEC> xv = load_vec<T, VEC>(x + base, i), gv = load_vec<T, VEC>(g + base, i), o;
      for (int k = 0; k < VEC; ++k) {
        float xf = to_float(xv.v[k]), gf = to_float(gv.v[k]);
        float wf = has_w ? to_float(w[i + k]) : 1.f;
        o.v[k] = from_float<T>(gf * wf * n - xf * mt * n3);
        dw.add(i, k, gf * xf * n, row == blockIdx.x);
      }
      store_vec<T, VEC>(dx + base, i, o);
    }
  }
  dw.flush(d);
}
