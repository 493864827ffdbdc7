// Packed variable-length attention with RoPE inside (the seed 002, hanzo-kernel): the forward
// (`attend`, `attend_mma`) and the FlashAttention-2 backward (`delta`, `attend_back`,
// `rotate_back`). Launched by nuvec/backends/cuda/launchers/packed_attention.py.
//
// Layout and bounds:
// - qkv [T, 3·H·D] row-major: token t's queries, keys, values, heads contiguous within each;
//   out, dout [T, H·D]; lse, delta [H, T] float32; dq [T, H·D] float32; dqkv like qkv.
// - cos, sin [P, D/2] by position within a sequence, qkv's type; pos [T] int32 (the position).
// - cu [S + 1] int32: each sequence's first token; tiles [NT, 2] int32: each tile's sequence and
//   first row (tiles of BR query rows for the forward, BC key rows for the backward).
// - window: 0 for every key of the sequence, else w + 1 (keys with |i − j| < window).
// - Offsets are 32-bit ints: the launcher checks T·3·H·D < 2^31 (the seed's guard).
// - A pair out of reach (past the sequence, out of the window) weighs exactly zero; rows past
//   the sequence are neither read nor written.
// - The scalar kernels run 2·BR (2·BC) threads and keep their tiles in float32 dynamic shared
//   memory; the mma kernels (sm_80+, half types) run one warp per 16 rows.

#include "mma.cuh"

namespace packed {

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// The mma helpers (nuvec/fast/kernels/mma.cuh).
using nuvec::mma16816;
using nuvec::pack2;

// Row `i` of a sequence rotated: (x1 c − x2 s, x1 s + x2 c) on the halves, times `scale`.
template <typename T, int D>
__device__ __forceinline__ void rotated(const T* x, const T* cos, const T* sin, int i, int j,
                                        float scale, float* y1, float* y2) {
  const float a = to_f(x[j]), b = to_f(x[j + D / 2]);
  const float c = to_f(cos[i * (D / 2) + j]), s = to_f(sin[i * (D / 2) + j]);
  *y1 = (a * c - b * s) * scale;
  *y2 = (a * s + b * c) * scale;
}

// Keys j0 .. j0 + BC - 1 of head `h` of the sequence at `start` (rotated by their positions)
// and their values, into shared tiles of row stride LD as S; rows past `len` are zeros.
// Threads u = 0 .. UNITS - 1 share the work; the caller places the barriers.
template <typename T, typename S, int D, int BC, int LD, int UNITS>
__device__ __forceinline__ void stage_keys(const T* qkv, const T* cos, const T* sin, int start,
                                           int len, int j0, int ld, int hd, int h, int u,
                                           S* ks, S* vs) {
  constexpr int HALF = D / 2;
  for (int e = u; e < BC * HALF; e += UNITS) {
    const int c = e / HALF, jj = e % HALF, j = j0 + c;
    float y1 = 0.f, y2 = 0.f, v1 = 0.f, v2 = 0.f;
    if (j < len) {
      const T* at = qkv + (start + j) * ld + hd + h * D;
      rotated<T, D>(at, cos, sin, j, jj, 1.f, &y1, &y2);
      v1 = to_f(at[hd + jj]);
      v2 = to_f(at[hd + jj + HALF]);
    }
    ks[c * LD + jj] = from_f<S>(y1);
    ks[c * LD + jj + HALF] = from_f<S>(y2);
    vs[c * LD + jj] = from_f<S>(v1);
    vs[c * LD + jj + HALF] = from_f<S>(v2);
  }
}

__device__ __forceinline__ bool near(int i, int j, int window) {
  const int gap = i > j ? i - j : j - i;
  return window == 0 || gap < window;
}

// The tiles of `size` rows that rows [r0, r0 + rows) of a sequence of `len` reach.
__device__ __forceinline__ void reach(int r0, int rows, int len, int window, int size,
                                      int* lo, int* hi) {
  *lo = 0;
  *hi = len;
  if (window > 0) {
    if (r0 + 1 > window) *lo = (r0 + 1 - window) / size * size;
    if (r0 + rows + window - 1 < len) *hi = r0 + rows + window - 1;
  }
}

}  // namespace packed

// One tile of BR queries of one head (blockIdx.y) against every key tile of BC its window
// reaches: scores in float32, the softmax online per row, the output product, lse per row.
template <typename T, int D, int BR, int BC>
__global__ void __launch_bounds__(2 * BR)
attend(const T* __restrict__ qkv, const T* __restrict__ cos, const T* __restrict__ sin,
       const int* __restrict__ cu, const int* __restrict__ tiles, T* __restrict__ out,
       float* __restrict__ lse, int heads, int window, int total, float scale) {
  using namespace packed;
  constexpr int UNITS = 2 * BR, HALF = D / 2;
  extern __shared__ __align__(16) unsigned char smem[];
  float* qs = reinterpret_cast<float*>(smem);  // [BR][D]
  float* ks = qs + BR * D;                      // [BC][D]
  float* vs = ks + BC * D;                      // [BC][D]
  float* sf = vs + BC * D;                      // [BR][BC]: scores, then probabilities
  float* of = sf + BR * BC;                     // [BR][D]
  float* row_m = of + BR * D;                   // [BR] running max (valid once row_l > 0)
  float* row_l = row_m + BR;                    // [BR] running sum
  float* row_a = row_l + BR;                    // [BR] this tile's rescale factor
  const int t = blockIdx.x, h = blockIdx.y, u = threadIdx.x;
  const int hd = heads * D, ld = 3 * hd;
  const int seq = tiles[2 * t], i0 = tiles[2 * t + 1];
  const int start = cu[seq], len = cu[seq + 1] - start;

  for (int e = u; e < BR * HALF; e += UNITS) {
    const int r = e / HALF, j = e % HALF, i = i0 + r;
    float y1 = 0.f, y2 = 0.f;
    if (i < len) rotated<T, D>(qkv + (start + i) * ld + h * D, cos, sin, i, j, scale, &y1, &y2);
    qs[r * D + j] = y1;
    qs[r * D + j + HALF] = y2;
  }
  for (int e = u; e < BR * D; e += UNITS) of[e] = 0.f;
  if (u < BR) {
    row_m[u] = 0.f;
    row_l[u] = 0.f;
  }
  int lo, hi;
  reach(i0, BR, len, window, BC, &lo, &hi);
  for (int j0 = lo; j0 < hi; j0 += BC) {
    __syncthreads();
    packed::stage_keys<T, float, D, BC, D, UNITS>(qkv, cos, sin, start, len, j0, ld, hd, h, u,
        ks, vs);
    __syncthreads();
    for (int e = u; e < BR * BC; e += UNITS) {
      const int r = e / BC, c = e % BC;
      float acc = 0.f;
      for (int k = 0; k < D; ++k) acc += qs[r * D + k] * ks[c * D + k];
      sf[e] = acc;
    }
    __syncthreads();
    if (u < BR) {
      // one thread a row: the tile's max over the pairs in reach, then the probabilities
      const int i = i0 + u;
      bool any = false;
      float m = 0.f;
      for (int c = 0; c < BC; ++c) {
        const int j = j0 + c;
        if (i < len && j < len && near(i, j, window) && (!any || sf[u * BC + c] > m)) {
          m = sf[u * BC + c];
          any = true;
        }
      }
      float alpha = 1.f;
      if (any && row_l[u] > 0.f && row_m[u] > m) m = row_m[u];
      if (any && row_l[u] > 0.f) alpha = expf(row_m[u] - m);
      float sum = 0.f;
      for (int c = 0; c < BC; ++c) {
        const int j = j0 + c;
        float p = 0.f;
        if (any && i < len && j < len && near(i, j, window)) p = expf(sf[u * BC + c] - m);
        sf[u * BC + c] = p;
        sum += p;
      }
      if (any) {
        row_l[u] = row_l[u] * alpha + sum;
        row_m[u] = m;
      }
      row_a[u] = alpha;
    }
    __syncthreads();
    for (int e = u; e < BR * D; e += UNITS) {
      const int r = e / D, dd = e % D;
      float acc = of[e] * row_a[r];
      for (int c = 0; c < BC; ++c) acc += sf[r * BC + c] * vs[c * D + dd];
      of[e] = acc;
    }
  }
  __syncthreads();
  for (int e = u; e < BR * D; e += UNITS) {
    const int r = e / D, i = i0 + r;
    if (i < len) out[(start + i) * hd + h * D + e % D] = from_f<T>(of[e] / row_l[r]);
  }
  if (u < BR && i0 + u < len) lse[h * total + start + i0 + u] = row_m[u] + logf(row_l[u]);
}

// `attend` on the matrix units (mma.sync m16n8k16, sm_80+, half types): a warp per 16 query
// rows holds its Q fragments, scores, probabilities and outputs in registers; each row's
// softmax reduces over the four lanes that share it. The accumulators of 8-key blocks 2k and
// 2k + 1 are the A operand of the 16-key step k of P·V.
template <typename T, int D, int BR, int BC>
__global__ void __launch_bounds__(2 * BR)
attend_mma(const T* __restrict__ qkv, const T* __restrict__ cos, const T* __restrict__ sin,
           const int* __restrict__ cu, const int* __restrict__ tiles, T* __restrict__ out,
           float* __restrict__ lse, int heads, int window, int total, float scale) {
  using namespace packed;
  constexpr int UNITS = 2 * BR, HALF = D / 2, LD = D + 8, KQ = D / 16, KD = D / 8, G = BC / 8;
  extern __shared__ __align__(16) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem);  // [BR][LD]
  T* ks = qs + BR * LD;                 // [BC][LD]
  T* vs = ks + BC * LD;                 // [BC][LD]
  const int t = blockIdx.x, h = blockIdx.y, u = threadIdx.x;
  const int lane = u & 31, g = lane >> 2, q = lane & 3, row0 = (u >> 5) * 16;
  const int hd = heads * D, ld = 3 * hd;
  const int seq = tiles[2 * t], i0 = tiles[2 * t + 1];
  const int start = cu[seq], len = cu[seq + 1] - start;

  for (int e = u; e < BR * HALF; e += UNITS) {
    const int r = e / HALF, j = e % HALF, i = i0 + r;
    float y1 = 0.f, y2 = 0.f;
    if (i < len) rotated<T, D>(qkv + (start + i) * ld + h * D, cos, sin, i, j, scale, &y1, &y2);
    qs[r * LD + j] = from_f<T>(y1);
    qs[r * LD + j + HALF] = from_f<T>(y2);
  }
  __syncthreads();
  unsigned qa[KQ][4];
  for (int kk = 0; kk < KQ; ++kk) {
    const T* a = qs + (row0 + g) * LD + kk * 16 + 2 * q;
    qa[kk][0] = pack2<T>(a[0], a[1]);
    qa[kk][1] = pack2<T>(a[8 * LD], a[8 * LD + 1]);
    qa[kk][2] = pack2<T>(a[8], a[9]);
    qa[kk][3] = pack2<T>(a[8 * LD + 8], a[8 * LD + 9]);
  }
  const int ia = i0 + row0 + g, ib = ia + 8;
  float o[KD][4];
  for (int n = 0; n < KD; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float ma = -1e30f, mb = -1e30f, la = 0.f, lb = 0.f;

  int lo, hi;
  reach(i0, BR, len, window, BC, &lo, &hi);
  for (int j0 = lo; j0 < hi; j0 += BC) {
    __syncthreads();
    packed::stage_keys<T, T, D, BC, LD, UNITS>(qkv, cos, sin, start, len, j0, ld, hd, h, u, ks, vs);
    __syncthreads();
    float s[G][4];
    float xa = -1e30f, xb = -1e30f;
    for (int b8 = 0; b8 < G; ++b8) {
      s[b8][0] = s[b8][1] = s[b8][2] = s[b8][3] = 0.f;
      for (int kk = 0; kk < KQ; ++kk) {
        const T* k = ks + (b8 * 8 + g) * LD + kk * 16 + 2 * q;
        const unsigned b[2] = {pack2<T>(k[0], k[1]), pack2<T>(k[8], k[9])};
        mma16816<T>(s[b8], qa[kk], b);
      }
      for (int x = 0; x < 4; ++x) {
        const int i = x < 2 ? ia : ib, j = j0 + b8 * 8 + 2 * q + (x & 1);
        const bool keep = i < len && j < len && near(i, j, window);
        s[b8][x] = keep ? s[b8][x] : -1e30f;
      }
      xa = fmaxf(xa, fmaxf(s[b8][0], s[b8][1]));
      xb = fmaxf(xb, fmaxf(s[b8][2], s[b8][3]));
    }
    xa = fmaxf(xa, __shfl_xor_sync(0xffffffffu, xa, 1));
    xa = fmaxf(xa, __shfl_xor_sync(0xffffffffu, xa, 2));
    xb = fmaxf(xb, __shfl_xor_sync(0xffffffffu, xb, 1));
    xb = fmaxf(xb, __shfl_xor_sync(0xffffffffu, xb, 2));
    xa = fmaxf(xa, ma);
    xb = fmaxf(xb, mb);
    const float ea = expf(ma - xa), eb = expf(mb - xb);
    ma = xa;
    mb = xb;
    float pa = 0.f, pb = 0.f;
    for (int b8 = 0; b8 < G; ++b8) {
      for (int x = 0; x < 4; ++x) {
        const float m = x < 2 ? ma : mb;
        s[b8][x] = s[b8][x] > -1e29f ? expf(s[b8][x] - m) : 0.f;
      }
      pa += s[b8][0] + s[b8][1];
      pb += s[b8][2] + s[b8][3];
    }
    pa += __shfl_xor_sync(0xffffffffu, pa, 1);
    pa += __shfl_xor_sync(0xffffffffu, pa, 2);
    pb += __shfl_xor_sync(0xffffffffu, pb, 1);
    pb += __shfl_xor_sync(0xffffffffu, pb, 2);
    la = la * ea + pa;
    lb = lb * eb + pb;
    for (int n = 0; n < KD; ++n) {
      o[n][0] *= ea;
      o[n][1] *= ea;
      o[n][2] *= eb;
      o[n][3] *= eb;
    }
    for (int kk = 0; kk < BC / 16; ++kk) {
      const unsigned a[4] = {pack2<T>(s[2 * kk][0], s[2 * kk][1]),
                             pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                             pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                             pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
      for (int n = 0; n < KD; ++n) {
        const T* v = vs + (kk * 16 + 2 * q) * LD + n * 8 + g;
        const unsigned b[2] = {pack2<T>(v[0], v[LD]), pack2<T>(v[8 * LD], v[9 * LD])};
        mma16816<T>(o[n], a, b);
      }
    }
  }
  for (int n = 0; n < KD; ++n) {
    const int at = h * D + n * 8 + 2 * q;
    if (ia < len) {
      out[(start + ia) * hd + at] = from_f<T>(o[n][0] / la);
      out[(start + ia) * hd + at + 1] = from_f<T>(o[n][1] / la);
    }
    if (ib < len) {
      out[(start + ib) * hd + at] = from_f<T>(o[n][2] / lb);
      out[(start + ib) * hd + at + 1] = from_f<T>(o[n][3] / lb);
    }
  }
  if (q == 0) {
    if (ia < len) lse[h * total + start + ia] = ma + logf(la);
    if (ib < len) lse[h * total + start + ib] = mb + logf(lb);
  }
}

// delta[h, t] = Σ_d dout[t, h, d] · out[t, h, d] − dlse[h, t] (dlse may be null): a thread
// per (token, head).
template <typename T, int D>
__global__ void delta(const T* __restrict__ out, const T* __restrict__ dout,
                      const float* __restrict__ dlse, float* __restrict__ delta_out, int heads,
                      int total) {
  using namespace packed;
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= total * heads) return;
  const int t = idx / heads, h = idx % heads, at = (t * heads + h) * D;
  float acc = 0.f;
  for (int k = 0; k < D; ++k) acc += to_f(out[at + k]) * to_f(dout[at + k]);
  if (dlse != nullptr) acc -= dlse[h * total + t];
  delta_out[h * total + t] = acc;
}

// One tile of BC keys of one head against every query tile of BC rows that reaches it
// (FlashAttention-2): P = exp(S − lse), dS = P ⊙ (dO Vᵀ − delta); dV and dK accumulated in
// float32 and written (dK rotated back) into dqkv; dQ added into `dq` with float32 atomics.
template <typename T, int D, int BC>
__global__ void __launch_bounds__(2 * BC)
attend_back(const T* __restrict__ qkv, const T* __restrict__ cos, const T* __restrict__ sin,
            const int* __restrict__ cu, const int* __restrict__ tiles,
            const T* __restrict__ dout, const float* __restrict__ lse,
            const float* __restrict__ delta, float* __restrict__ dq, T* __restrict__ dqkv,
            int heads, int window, int total, float scale) {
  using namespace packed;
  constexpr int UNITS = 2 * BC, HALF = D / 2;
  extern __shared__ __align__(16) unsigned char smem[];
  float* ks = reinterpret_cast<float*>(smem);  // [BC][D] keys (rotated)
  float* vs = ks + BC * D;                      // [BC][D]
  float* qs = vs + BC * D;                      // [BC][D] queries (rotated, scaled)
  float* os = qs + BC * D;                      // [BC][D] dO
  float* pm = os + BC * D;                      // [BC][BC] P, queries by keys
  float* dm = pm + BC * BC;                     // [BC][BC] dS
  float* dk = dm + BC * BC;                     // [BC][D]
  float* dv = dk + BC * D;                      // [BC][D]
  float* rows = dv + BC * D;                    // [2 BC] lse, delta
  const int t = blockIdx.x, h = blockIdx.y, u = threadIdx.x;
  const int hd = heads * D, ld = 3 * hd;
  const int seq = tiles[2 * t], j0 = tiles[2 * t + 1];
  const int start = cu[seq], len = cu[seq + 1] - start;

  packed::stage_keys<T, float, D, BC, D, UNITS>(qkv, cos, sin, start, len, j0, ld, hd, h, u,
      ks, vs);
  for (int e = u; e < BC * D; e += UNITS) dk[e] = dv[e] = 0.f;
  int lo, hi;
  reach(j0, BC, len, window, BC, &lo, &hi);
  for (int i0 = lo; i0 < hi; i0 += BC) {
    __syncthreads();
    for (int e = u; e < BC * HALF; e += UNITS) {
      const int r = e / HALF, j = e % HALF, i = i0 + r;
      float y1 = 0.f, y2 = 0.f, o1 = 0.f, o2 = 0.f;
      if (i < len) {
        rotated<T, D>(qkv + (start + i) * ld + h * D, cos, sin, i, j, scale, &y1, &y2);
        const T* g = dout + (start + i) * hd + h * D;
        o1 = to_f(g[j]);
        o2 = to_f(g[j + HALF]);
      }
      qs[r * D + j] = y1;
      qs[r * D + j + HALF] = y2;
      os[r * D + j] = o1;
      os[r * D + j + HALF] = o2;
    }
    if (u < BC) {
      const int i = i0 + u;
      rows[u] = i < len ? lse[h * total + start + i] : 0.f;
      rows[BC + u] = i < len ? delta[h * total + start + i] : 0.f;
    }
    __syncthreads();
    for (int e = u; e < BC * BC; e += UNITS) {
      const int r = e / BC, c = e % BC, i = i0 + r, j = j0 + c;
      float p = 0.f, ds = 0.f;
      if (i < len && j < len && near(i, j, window)) {
        float s = 0.f, dp = 0.f;
        for (int k = 0; k < D; ++k) {
          s += qs[r * D + k] * ks[c * D + k];
          dp += os[r * D + k] * vs[c * D + k];
        }
        p = expf(s - rows[r]);
        ds = p * (dp - rows[BC + r]);
      }
      pm[e] = p;
      dm[e] = ds;
    }
    __syncthreads();
    for (int e = u; e < BC * D; e += UNITS) {
      const int c = e / D, dd = e % D;
      float gv = dv[e], gk = dk[e], gq = 0.f;
      for (int r = 0; r < BC; ++r) {
        gv += pm[r * BC + c] * os[r * D + dd];
        gk += dm[r * BC + c] * qs[r * D + dd];
        gq += dm[c * BC + r] * ks[r * D + dd];  // row c of dS against the keys
      }
      dv[e] = gv;
      dk[e] = gk;
      const int i = i0 + c;
      if (i < len) atomicAdd(dq + (start + i) * hd + h * D + dd, gq);
    }
  }
  __syncthreads();
  for (int e = u; e < BC * HALF; e += UNITS) {
    const int c = e / HALF, jj = e % HALF, j = j0 + c;
    if (j >= len) continue;
    const float cs = to_f(cos[j * HALF + jj]), sn = to_f(sin[j * HALF + jj]);
    const float x1 = dk[c * D + jj], x2 = dk[c * D + jj + HALF];
    T* at = dqkv + (start + j) * ld + h * D;
    at[hd + jj] = from_f<T>(x1 * cs + x2 * sn);
    at[hd + jj + HALF] = from_f<T>(x2 * cs - x1 * sn);
    at[2 * hd + jj] = from_f<T>(dv[c * D + jj]);
    at[2 * hd + jj + HALF] = from_f<T>(dv[c * D + jj + HALF]);
  }
}

// `attend_back` on the matrix units (mma.sync m16n8k16, sm_80+, half types): a warp per 16 keys
// holds its K and V fragments, Sᵀ, dPᵀ and its dK, dV accumulators in registers over every
// query tile its keys reach; the accumulators of 8-query blocks 2k and 2k + 1 feed the
// 16-query step k as A operands. dSᵀ goes through shared memory once for dQ = dS K, a warp
// per 16 queries, added into `dq` with float32 atomics.
template <typename T, int D, int BC>
__global__ void __launch_bounds__(2 * BC)
attend_back_mma(const T* __restrict__ qkv, const T* __restrict__ cos, const T* __restrict__ sin,
                const int* __restrict__ cu, const int* __restrict__ tiles,
                const T* __restrict__ dout, const float* __restrict__ lse,
                const float* __restrict__ delta, float* __restrict__ dq, T* __restrict__ dqkv,
                int heads, int window, int total, float scale) {
  using namespace packed;
  constexpr int UNITS = 2 * BC, HALF = D / 2, LD = D + 8, LS = BC + 8, KQ = D / 16, KD = D / 8,
                G = BC / 8;
  extern __shared__ __align__(16) unsigned char smem[];
  T* ks = reinterpret_cast<T*>(smem);  // [BC][LD] keys (rotated)
  T* vs = ks + BC * LD;                 // [BC][LD]
  T* qs = vs + BC * LD;                 // [BC][LD] queries (rotated, scaled)
  T* os = qs + BC * LD;                 // [BC][LD] dO
  T* dst = os + BC * LD;                // [BC][LS] dSᵀ, keys by queries
  float* rows = reinterpret_cast<float*>(dst + BC * LS);  // [2 BC] lse, delta
  const int t = blockIdx.x, h = blockIdx.y, u = threadIdx.x;
  const int lane = u & 31, g = lane >> 2, q = lane & 3, row0 = (u >> 5) * 16;
  const int hd = heads * D, ld = 3 * hd;
  const int seq = tiles[2 * t], j0 = tiles[2 * t + 1];
  const int start = cu[seq], len = cu[seq + 1] - start;

  packed::stage_keys<T, T, D, BC, LD, UNITS>(qkv, cos, sin, start, len, j0, ld, hd, h, u, ks, vs);
  __syncthreads();
  unsigned ka[KQ][4], va[KQ][4];
  for (int kk = 0; kk < KQ; ++kk) {
    const T* a = ks + (row0 + g) * LD + kk * 16 + 2 * q;
    const T* b = vs + (row0 + g) * LD + kk * 16 + 2 * q;
    ka[kk][0] = pack2<T>(a[0], a[1]);
    ka[kk][1] = pack2<T>(a[8 * LD], a[8 * LD + 1]);
    ka[kk][2] = pack2<T>(a[8], a[9]);
    ka[kk][3] = pack2<T>(a[8 * LD + 8], a[8 * LD + 9]);
    va[kk][0] = pack2<T>(b[0], b[1]);
    va[kk][1] = pack2<T>(b[8 * LD], b[8 * LD + 1]);
    va[kk][2] = pack2<T>(b[8], b[9]);
    va[kk][3] = pack2<T>(b[8 * LD + 8], b[8 * LD + 9]);
  }
  float dk[KD][4], dv[KD][4];
  for (int n = 0; n < KD; ++n)
    for (int x = 0; x < 4; ++x) dk[n][x] = dv[n][x] = 0.f;
  const int ja = j0 + row0 + g, jb = ja + 8;

  int lo, hi;
  reach(j0, BC, len, window, BC, &lo, &hi);
  for (int i0 = lo; i0 < hi; i0 += BC) {
    __syncthreads();
    for (int e = u; e < BC * HALF; e += UNITS) {
      const int r = e / HALF, j = e % HALF, i = i0 + r;
      float y1 = 0.f, y2 = 0.f, o1 = 0.f, o2 = 0.f;
      if (i < len) {
        rotated<T, D>(qkv + (start + i) * ld + h * D, cos, sin, i, j, scale, &y1, &y2);
        const T* d = dout + (start + i) * hd + h * D;
        o1 = to_f(d[j]);
        o2 = to_f(d[j + HALF]);
      }
      qs[r * LD + j] = from_f<T>(y1);
      qs[r * LD + j + HALF] = from_f<T>(y2);
      os[r * LD + j] = from_f<T>(o1);
      os[r * LD + j + HALF] = from_f<T>(o2);
    }
    if (u < BC) {
      const int i = i0 + u;
      rows[u] = i < len ? lse[h * total + start + i] : 0.f;
      rows[BC + u] = i < len ? delta[h * total + start + i] : 0.f;
    }
    __syncthreads();
    float p[G][4], ds[G][4];
    for (int b8 = 0; b8 < G; ++b8) {
      for (int x = 0; x < 4; ++x) p[b8][x] = ds[b8][x] = 0.f;
      for (int kk = 0; kk < KQ; ++kk) {
        const T* a = qs + (b8 * 8 + g) * LD + kk * 16 + 2 * q;
        const T* b = os + (b8 * 8 + g) * LD + kk * 16 + 2 * q;
        const unsigned bq[2] = {pack2<T>(a[0], a[1]), pack2<T>(a[8], a[9])};
        const unsigned bo[2] = {pack2<T>(b[0], b[1]), pack2<T>(b[8], b[9])};
        mma16816<T>(p[b8], ka[kk], bq);
        mma16816<T>(ds[b8], va[kk], bo);
      }
      for (int x = 0; x < 4; ++x) {
        const int c = b8 * 8 + 2 * q + (x & 1), i = i0 + c, j = x < 2 ? ja : jb;
        const bool keep = i < len && j < len && near(i, j, window);
        const float pv = keep ? expf(p[b8][x] - rows[c]) : 0.f;
        p[b8][x] = pv;
        ds[b8][x] = pv * (ds[b8][x] - rows[BC + c]);
        dst[(row0 + g + (x < 2 ? 0 : 8)) * LS + c] = from_f<T>(ds[b8][x]);
      }
    }
    // dV += Pᵀ dO and dK += dSᵀ Q, 16 queries a step
    for (int kk = 0; kk < BC / 16; ++kk) {
      const unsigned ap[4] = {pack2<T>(p[2 * kk][0], p[2 * kk][1]),
                              pack2<T>(p[2 * kk][2], p[2 * kk][3]),
                              pack2<T>(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                              pack2<T>(p[2 * kk + 1][2], p[2 * kk + 1][3])};
      const unsigned ad[4] = {pack2<T>(ds[2 * kk][0], ds[2 * kk][1]),
                              pack2<T>(ds[2 * kk][2], ds[2 * kk][3]),
                              pack2<T>(ds[2 * kk + 1][0], ds[2 * kk + 1][1]),
                              pack2<T>(ds[2 * kk + 1][2], ds[2 * kk + 1][3])};
      for (int n = 0; n < KD; ++n) {
        const T* o = os + (kk * 16 + 2 * q) * LD + n * 8 + g;
        const T* x = qs + (kk * 16 + 2 * q) * LD + n * 8 + g;
        const unsigned bo[2] = {pack2<T>(o[0], o[LD]), pack2<T>(o[8 * LD], o[9 * LD])};
        const unsigned bq[2] = {pack2<T>(x[0], x[LD]), pack2<T>(x[8 * LD], x[9 * LD])};
        mma16816<T>(dv[n], ap, bo);
        mma16816<T>(dk[n], ad, bq);
      }
    }
    __syncthreads();
    // dQ = dS K for this warp's 16 queries
    const int ia = i0 + row0 + g, ib = ia + 8;
    for (int n = 0; n < KD; ++n) {
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
      for (int kk = 0; kk < BC / 16; ++kk) {
        const T* a = dst + (kk * 16 + 2 * q) * LS + row0 + g;
        const unsigned af[4] = {pack2<T>(a[0], a[LS]), pack2<T>(a[8], a[LS + 8]),
                                pack2<T>(a[8 * LS], a[9 * LS]),
                                pack2<T>(a[8 * LS + 8], a[9 * LS + 8])};
        const T* k = ks + (kk * 16 + 2 * q) * LD + n * 8 + g;
        const unsigned bk[2] = {pack2<T>(k[0], k[LD]), pack2<T>(k[8 * LD], k[9 * LD])};
        mma16816<T>(acc, af, bk);
      }
      const int at = h * D + n * 8 + 2 * q;
      if (ia < len) {
        atomicAdd(dq + (start + ia) * hd + at, acc[0]);
        atomicAdd(dq + (start + ia) * hd + at + 1, acc[1]);
      }
      if (ib < len) {
        atomicAdd(dq + (start + ib) * hd + at, acc[2]);
        atomicAdd(dq + (start + ib) * hd + at + 1, acc[3]);
      }
    }
  }
  // dK rotated back, and dV: dimensions jj and jj + D/2 sit in blocks n and n + D/16
  for (int n = 0; n < KD / 2; ++n) {
    for (int x = 0; x < 4; ++x) {
      const int j = x < 2 ? ja : jb, jj = n * 8 + 2 * q + (x & 1);
      if (j >= len) continue;
      const float cs = to_f(cos[j * HALF + jj]), sn = to_f(sin[j * HALF + jj]);
      const float x1 = dk[n][x], x2 = dk[n + KD / 2][x];
      T* at = dqkv + (start + j) * ld + h * D;
      at[hd + jj] = from_f<T>(x1 * cs + x2 * sn);
      at[hd + jj + HALF] = from_f<T>(x2 * cs - x1 * sn);
      at[2 * hd + jj] = from_f<T>(dv[n][x]);
      at[2 * hd + jj + HALF] = from_f<T>(dv[n + KD / 2][x]);
    }
  }
}

// dQ rotated back and scaled into dqkv: a thread per (token, head, dimension pair).
template <typename T, int D>
__global__ void rotate_back(const float* __restrict__ dq, const T* __restrict__ cos,
                            const T* __restrict__ sin, const int* __restrict__ pos,
                            T* __restrict__ dqkv, int heads, int total, float scale) {
  using namespace packed;
  constexpr int HALF = D / 2;
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= total * heads * HALF) return;
  const int j = idx % HALF, th = idx / HALF, h = th % heads, t = th / heads;
  const int at = (t * heads + h) * D, p = pos[t];
  const float x1 = dq[at + j], x2 = dq[at + j + HALF];
  const float cs = to_f(cos[p * HALF + j]), sn = to_f(sin[p * HALF + j]);
  T* o = dqkv + t * 3 * heads * D + h * D;
  o[j] = from_f<T>(scale * (x1 * cs + x2 * sn));
  o[j + HALF] = from_f<T>(scale * (x2 * cs - x1 * sn));
}
