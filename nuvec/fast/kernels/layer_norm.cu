// Layer norm and its VJP over the last axis.
//
// Layout: x, g, y, dx are C-contiguous [rows, d]; w and b are [d] when has_w / has_b = 1 (else
// the op's parameter is the scalar 1 or 0 and is not read). T is float, __half or
// __nv_bfloat16; sums are float. Launch: blockDim.x a multiple of 32, at most 1024; layer_norm
// one block per row (grid = rows); layer_norm_vjp `parts` blocks, each over rows
// blockIdx.x + k * parts, writing float partial gradients part[2, parts, d] (weight, then
// bias), summed by column_sum.
// Bounds: rows * d < 2^32 (32-bit offsets). VEC > 1 needs d % VEC == 0 and 16-byte aligned
// pointers.
#include "common.cuh"

using namespace nuvec;

// The row's mean and 1 / sqrt(var + eps), two passes over the row.
template <typename T, int VEC>
__device__ __forceinline__ float2 row_moments(const T* __restrict__ xr, unsigned d, float eps,
                                              float* scratch) {
  float s = 0.f;
  for (unsigned i = threadIdx.x * VEC; i < d; i += blockDim.x * VEC) {
    Vec<T, VEC> v = load_vec<T, VEC>(xr, i);
    for (int k = 0; k < VEC; ++k) s += to_float(v.v[k]);
  }
  float mean = block_sum(s, scratch) / (float)d, q = 0.f;
  for (unsigned i = threadIdx.x * VEC; i < d; i += blockDim.x * VEC) {
    Vec<T, VEC> v = load_vec<T, VEC>(xr, i);
    for (int k = 0; k < VEC; ++k) q += (to_float(v.v[k]) - mean) * (to_float(v.v[k]) - mean);
  }
  return make_float2(mean, rsqrtf(block_sum(q, scratch) / (float)d + eps));
}

// y = (T(xc * n) * w) + b, each step rounded to T as the fallback rounds.
template <typename T, int VEC>
__global__ void __launch_bounds__(1024) layer_norm(const T* __restrict__ x,
                                                   const T* __restrict__ w,
                                                   const T* __restrict__ b, T* __restrict__ y,
                                                   unsigned d, float eps, int has_w, int has_b) {
  __shared__ float scratch[64];
  const unsigned base = blockIdx.x * d;
  float2 mn = row_moments<T, VEC>(x + base, d, eps, scratch);
  for (unsigned i = threadIdx.x * VEC; i < d; i += blockDim.x * VEC) {
    Vec<T, VEC> v = load_vec<T, VEC>(x + base, i), o;
    for (int k = 0; k < VEC; ++k) {
      float f = round_to<T>((to_float(v.v[k]) - mn.x) * mn.y);
      if (has_w) f = round_to<T>(f * to_float(w[i + k]));
      if (has_b) f = f + to_float(b[i + k]);
      o.v[k] = from_float<T>(f);
    }
    store_vec<T, VEC>(y + base, i, o);
  }
}

// dx = (wg - mean(wg)) n - xc mean(wg xc) n^3 with wg = w g; partial dw = g xc n, db = g.
template <typename T, int VEC>
__global__ void __launch_bounds__(1024) layer_norm_vjp(const T* __restrict__ x,
                                                       const T* __restrict__ w,
                                                       const T* __restrict__ g,
                                                       T* __restrict__ dx,
                                                       float* __restrict__ part, unsigned rows,
                                                       unsigned d, float eps, int has_w) {
  __shared__ float scratch[64];
  ColumnSums<VEC> dw(part + blockIdx.x * d), db(part + (gridDim.x + blockIdx.x) * d);
  for (unsigned row = blockIdx.x; row < rows; row += gridDim.x) {
    const unsigned base = row * d;
    float2 mn = row_moments<T, VEC>(x + base, d, eps, scratch);
    float swg = 0.f, swgxc = 0.f;
    for (unsigned i = threadIdx.x * VEC; i < d; i += blockDim.x * VEC) {
      Vec<T, VEC> xv = load_vec<T, VEC>(x + base, i), gv = load_vec<T, VEC>(g + base, i);
      for (int k = 0; k < VEC; ++k) {
        float wg = (has_w ? to_float(w[i + k]) : 1.f) * to_float(gv.v[k]);
        swg += wg;
        swgxc += wg * (to_float(xv.v[k]) - mn.x);
      }
    }
    float2 sums = block_sum2(swg, swgxc, scratch);
    float mwg = sums.x / (float)d, mwgxc = sums.y / (float)d, n = mn.y, n3 = n * n * n;
    for (unsigned i = threadIdx.x * VEC; i < d; i += blockDim.x * VEC) {
      Vec<T, VEC> xv = load_vec<T, VEC>(x + base, i), gv = load_vec<T, VEC>(g + base, i), o;
      for (int k = 0; k < VEC; ++k) {
        float xc = to_float(xv.v[k]) - mn.x, gf = to_float(gv.v[k]);
        float wg = (has_w ? to_float(w[i + k]) : 1.f) * gf;
        o.v[k] = from_float<T>((wg - mwg) * n - xc * mwgxc * n3);
        dw.add(i, k, gf * xc * n, row == blockIdx.x);
        db.add(i, k, gf, row == blockIdx.x);
      }
      store_vec<T, VEC>(dx + base, i, o);
    }
  }
  dw.flush(d);
  db.flush(d);
}
