// The planner's tiled attention kernel (FlashAttention-2) for long query blocks, forward and
// fused backward. Launched by nuvec/backends/cuda/launchers/attention_tiled.py.
//
// Layout and bounds:
// - q [B, Hq, Lq, D], k and v [B, Hkv, Lk, D], out and dout like q, contiguous; lse and delta
//   [B, Hq, Lq] float32; dq [B, Hq, Lq, D] float32 (zeroed by the launcher, unscaled); dk, dv
//   like k. Query head h reads key head h / (Hq / Hkv).
// - mask: kind 0 none, 1 boolean (bytes, true attends), 2 additive (T); element (b, h, i, j) at
//   b·msb + h·msh + i·msq + j·msk (strides 0 where the op broadcasts it).
// - causal: query i sees keys j ≤ i + Lk − Lq (Lq ≤ Lk), and with window w > 0 only j > i +
//   Lk − Lq − w; the key tiles outside every row's range are skipped, masked keys of a tile
//   weigh exactly zero. A boolean-masked score is the dtype's lowest value (a row that sees no
//   key averages every key, as the fallback) and passes no gradient.
// - Scores as the fallback rounds them: q·scale in T, the dot product in float32 rounded to T,
//   the additive mask added in T; the softmax and every sum in float32. lse (with the sink as
//   one more logit) is what the backward recomputes the probabilities from.
// - Offsets are 32-bit (`unsigned`): the launcher sends larger shapes to the fallback.
// - `flash_attend` / `flash_attend_back` are the portable FMA kernels (float32, and the half
//   types before sm_80); the `_mma` kernels (half types, sm_80+) run a warp per 16 rows on
//   mma.sync with float32 accumulators.
#include "attention.cuh"
#include "flash.cuh"

namespace tiled {

using nuvec::from_float;
using nuvec::mma16816;
using nuvec::round_to;
using nuvec::to_float;
#define NEG_INF NUVEC_NEG_INF

// Which keys each query row sees (causal with the queries last, a sliding window).
struct Reach {
  unsigned lq, lk;
  int causal, window;
  __device__ __forceinline__ int offset() const { return (int)lk - (int)lq; }
  __device__ __forceinline__ bool seen(unsigned i, unsigned j) const {
    if (i >= lq || j >= lk) return false;
    if (!causal) return true;
    const int p = (int)i + offset();
    return (int)j <= p && (window == 0 || (int)j > p - window);
  }
  // The keys [lo, hi) rows [i0, i1) may see.
  __device__ __forceinline__ void keys(unsigned i0, unsigned i1, unsigned* lo, unsigned* hi) const {
    *lo = 0;
    *hi = lk;
    if (!causal) return;
    *hi = min(lk, (unsigned)max((int)i1 + offset(), 0));
    if (window > 0) *lo = (unsigned)max((int)i0 + offset() - window + 1, 0);
  }
  // The query rows [lo, hi) that may see keys [j0, j1).
  __device__ __forceinline__ void rows(unsigned j0, unsigned j1, unsigned* lo, unsigned* hi) const {
    *lo = 0;
    *hi = lq;
    if (!causal) return;
    *lo = (unsigned)max((int)j0 - offset(), 0);
    if (window > 0) *hi = min(lq, (unsigned)max((int)j1 - 1 + window - offset(), 0));
  }
};

// The mask rows of one (batch, query head).
template <typename T> struct Mask {
  const unsigned char* base;
  unsigned sq, sk;
  int kind;
  __device__ __forceinline__ Mask(const unsigned char* m, unsigned b, unsigned h, unsigned sb,
                                  unsigned sh, unsigned sq_, unsigned sk_, int kind_)
      : sq(sq_), sk(sk_), kind(kind_) {
    const unsigned at = b * sb + h * sh;
    base = kind == 2 ? reinterpret_cast<const unsigned char*>(reinterpret_cast<const T*>(m) + at)
                     : m + at;
  }
  // Score `s` (already rounded to T) of row i, key j after the mask; `blocked`: masked out
  // by a boolean mask (the fallback's `where`, which passes no gradient).
  __device__ __forceinline__ float apply(float s, unsigned i, unsigned j, bool* blocked) const {
    *blocked = false;
    if (kind == 1 && !base[i * sq + j * sk]) {
      *blocked = true;
      return nuvec::attn::lowest<T>();
    }
    if (kind == 2) return round_to<T>(s + to_float(reinterpret_cast<const T*>(base)[i * sq + j * sk]));
    return s;
  }
};

// The score of row i, key j from its float32 dot product: NEG_INF for keys the row never
// sees (or past the ends).
template <typename T>
__device__ __forceinline__ float score(float dot, const Reach& r, const Mask<T>& m, unsigned i,
                                       unsigned j, bool* blocked) {
  *blocked = false;
  if (!r.seen(i, j)) return NEG_INF;
  return m.apply(round_to<T>(dot), i, j, blocked);
}

// exp(s − m) for a score that may be NEG_INF (weight zero) under a max that may be NEG_INF.
__device__ __forceinline__ float weight(float s, float m) {
  return s == NEG_INF ? 0.f : expf(s - m);
}
// A probability recomputed from the row's lse. A row whose every key a boolean mask blocks
// (lse = the lowest score + log Lk, which float32 rounds to the lowest score) averages its Lk
// keys.
template <typename T>
__device__ __forceinline__ float probability(float s, float lse, bool blocked, unsigned lk) {
  if (blocked && lse < 0.5f * nuvec::attn::lowest<T>()) return 1.f / (float)lk;
  return weight(s, lse);
}

// The factor that moves sums taken under max `m` to max `mn` ≥ m.
__device__ __forceinline__ float rescale(float m, float mn) {
  return m == NEG_INF ? 0.f : expf(m - mn);
}

// A row's (max, sum) finished with the sink as one more logit: sets lse, returns the factor
// of the output sums (taken under the old max).
__device__ __forceinline__ float finish(float m, float l, float sink, int has_sinks,
                                        float* lse) {
  float c = 1.f;
  if (has_sinks) {
    const float mn = fmaxf(m, sink);
    c = rescale(m, mn);
    l = l * c + expf(sink - mn);
    m = mn;
  }
  *lse = m + logf(l);
  return c / l;
}

// Rows r0 .. r0 + R − 1 of a row-major [n, D] matrix into shared rows of stride LD as S
// (times `scale` in T when `scaled`, as the fallback scales q), zeros past row n. 128 threads.
template <typename T, typename S, int D, int R, int LD>
__device__ __forceinline__ void stage(S* dst, const T* src, unsigned r0, unsigned n, float scale,
                                      bool scaled) {
  for (unsigned e = threadIdx.x; e < R * D; e += 128) {
    const unsigned r = e / D, i = r0 + r;
    float x = i < n ? to_float(src[i * D + e % D]) : 0.f;
    if (scaled) x = round_to<T>(x * scale);
    dst[r * LD + e % D] = from_float<S>(x);
  }
}

// Keys and values j0 .. j0 + R − 1 (of n) into shared rows of stride LD as S.
template <typename T, typename S, int D, int R, int LD>
__device__ __forceinline__ void stage_kv(S* ks, S* vs, const T* k, const T* v, unsigned j0,
                                         unsigned n) {
  stage<T, S, D, R, LD>(ks, k, j0, n, 1.f, false);
  stage<T, S, D, R, LD>(vs, v, j0, n, 1.f, false);
}

// The backward's query tile: rows i0 .. i0 + R − 1 (of n) of q · scale and dO into shared
// rows of stride LD as S, their lse and delta into `rows` [2 R]; zeros past row n.
template <typename T, typename S, int D, int R, int LD>
__device__ __forceinline__ void stage_queries(S* qs, S* os, float* rows, const T* q,
                                              const T* dout, const float* lse,
                                              const float* delta, unsigned i0, unsigned n,
                                              float scale) {
  stage<T, S, D, R, LD>(qs, q, i0, n, scale, true);
  stage<T, S, D, R, LD>(os, dout, i0, n, 1.f, false);
  const unsigned u = threadIdx.x, i = i0 + u;
  if (u < R) {
    rows[u] = i < n ? lse[i] : 0.f;
    rows[R + u] = i < n ? delta[i] : 0.f;
  }
}

// What a forward block (blockIdx: query tile, query head, batch) reads: its head's queries,
// keys and values, which keys its rows see, its mask rows.
template <typename T, int D> struct Heads {
  const T *qh, *kh, *vh;
  Reach reach;
  Mask<T> mk;
  __device__ __forceinline__ Heads(const T* q, const T* k, const T* v, const unsigned char* m,
                                   unsigned hq, unsigned hkv, unsigned lq, unsigned lk,
                                   unsigned msb, unsigned msh, unsigned msq, unsigned msk,
                                   int kind, int causal, int window)
      : reach{lq, lk, causal, window},
        mk(m, blockIdx.z, blockIdx.y, msb, msh, msq, msk, kind) {
    const unsigned b = blockIdx.z, h = blockIdx.y, kvh = h / (hq / hkv);
    qh = q + (b * hq + h) * lq * D;
    kh = k + (b * hkv + kvh) * lk * D;
    vh = v + (b * hkv + kvh) * lk * D;
  }
  // Key tile j0 .. j0 + R − 1 (keys and values) into shared rows of stride LD as S, between
  // barriers.
  template <typename S, int R, int LD>
  __device__ __forceinline__ void stage_keys(S* ks, S* vs, unsigned j0) const {
    __syncthreads();
    stage_kv<T, S, D, R, LD>(ks, vs, kh, vh, j0, reach.lk);
    __syncthreads();
  }
};

// Accumulators of rows g and g + 8 times ea and eb (the online softmax's rescale).
template <int N>
__device__ __forceinline__ void scale_rows(float (&o)[N][4], float ea, float eb) {
  for (int n = 0; n < N; ++n) {
    o[n][0] *= ea;
    o[n][1] *= ea;
    o[n][2] *= eb;
    o[n][3] *= eb;
  }
}

// An mma accumulator (rows ra and ra + 8, columns d and d + 1) added into `dst` [n, D].
template <int D>
__device__ __forceinline__ void add_acc(float* dst, unsigned ra, unsigned n, int d,
                                        const float acc[4]) {
  if (ra < n) {
    atomicAdd(dst + ra * D + d, acc[0]);
    atomicAdd(dst + ra * D + d + 1, acc[1]);
  }
  if (ra + 8 < n) {
    atomicAdd(dst + (ra + 8) * D + d, acc[2]);
    atomicAdd(dst + (ra + 8) * D + d + 1, acc[3]);
  }
}

}  // namespace tiled

// One block per (tile of 16 query rows, query head, batch), 4 warps of 4 rows each; key tiles
// of 32 in shared float32, one key per lane for the scores, lane-strided dims for the output.
template <typename T, int D>
__global__ void __launch_bounds__(128)
flash_attend(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
             const unsigned char* __restrict__ mask, const T* __restrict__ sinks,
             T* __restrict__ out, float* __restrict__ lse, float scale, unsigned hq,
             unsigned hkv, unsigned lq, unsigned lk, unsigned msb, unsigned msh, unsigned msq,
             unsigned msk, int kind, int causal, int window, int has_sinks) {
  using namespace tiled;
  constexpr int R = 4, BR = 16, BC = 32, LD = D + 1, E = (D + 31) / 32;
  extern __shared__ __align__(16) unsigned char smem[];
  float* qs = reinterpret_cast<float*>(smem);  // [BR][D]
  float* ks = qs + BR * D;                      // [BC][LD]
  float* vs = ks + BC * LD;                     // [BC][LD]
  const unsigned u = threadIdx.x, lane = u % 32, warp = u / 32;
  const unsigned b = blockIdx.z, h = blockIdx.y, i0 = blockIdx.x * BR;
  const Heads<T, D> at(q, k, v, mask, hq, hkv, lq, lk, msb, msh, msq, msk, kind, causal, window);
  const Reach& reach = at.reach;
  stage<T, float, D, BR, D>(qs, at.qh, i0, lq, scale, true);
  float m[R], l[R], o[R][E];
  for (int r = 0; r < R; ++r) {
    m[r] = NEG_INF;
    l[r] = 0.f;
    for (int t = 0; t < E; ++t) o[r][t] = 0.f;
  }
  unsigned lo, hi;
  reach.keys(i0, min(i0 + BR, lq), &lo, &hi);
  for (unsigned j0 = lo / BC * BC; j0 < hi; j0 += BC) {
    at.template stage_keys<float, BC, LD>(ks, vs, j0);
    for (int r = 0; r < R; ++r) {
      const unsigned row = warp * R + r, i = i0 + row, j = j0 + lane;
      float dot = 0.f;
      for (int d = 0; d < D; ++d) dot += qs[row * D + d] * ks[lane * LD + d];
      bool blocked;
      const float s = score<T>(dot, reach, at.mk, i, j, &blocked);
      const float mn = fmaxf(m[r], nuvec::warp_max(s));
      const float c = rescale(m[r], mn), p = weight(s, mn);
      m[r] = mn;
      l[r] = l[r] * c + nuvec::warp_sum(p);
      for (int t = 0; t < E; ++t) o[r][t] *= c;
      for (int jj = 0; jj < BC; ++jj) {
        const float pj = __shfl_sync(nuvec::FULL, p, jj);
        for (int t = 0; t < E; ++t) {
          const int d = lane + 32 * t;
          if (d < D) o[r][t] += pj * vs[jj * LD + d];
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    const unsigned i = i0 + warp * R + r;
    if (i >= lq) continue;
    float row_lse;
    const float inv = finish(m[r], l[r], has_sinks ? to_float(sinks[h]) : 0.f, has_sinks,
                             &row_lse);
    for (int t = 0; t < E; ++t) {
      const int d = lane + 32 * t;
      if (d < D) out[((b * hq + h) * lq + i) * D + d] = from_float<T>(o[r][t] * inv);
    }
    if (lane == 0) lse[(b * hq + h) * lq + i] = row_lse;
  }
}

// `flash_attend` on the matrix units (half types, sm_80+): 64 query rows a block, a warp per
// 16 holding its Q fragments, scores, probabilities and outputs in registers over key tiles
// of 64 (padded half rows in shared memory); each row's softmax reduces over the four lanes
// that share it. The accumulators of 8-key blocks 2k and 2k + 1 are the A operand of P·V.
template <typename T, int D>
__global__ void __launch_bounds__(128)
flash_attend_mma(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                 const unsigned char* __restrict__ mask, const T* __restrict__ sinks,
                 T* __restrict__ out, float* __restrict__ lse, float scale, unsigned hq,
                 unsigned hkv, unsigned lq, unsigned lk, unsigned msb, unsigned msh,
                 unsigned msq, unsigned msk, int kind, int causal, int window, int has_sinks) {
  using namespace tiled;
  using namespace nuvec::flash;
  constexpr int BR = 64, BC = 64, LD = D + 8, KQ = D / 16, KD = D / 8, G = BC / 8;
  extern __shared__ __align__(16) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem);  // [BR][LD]
  T* ks = qs + BR * LD;                 // [BC][LD]
  T* vs = ks + BC * LD;                 // [BC][LD]
  const unsigned u = threadIdx.x;
  const int lane = u & 31, g = lane >> 2, qq = lane & 3, row0 = (u >> 5) * 16;
  const unsigned b = blockIdx.z, h = blockIdx.y, i0 = blockIdx.x * BR;
  const Heads<T, D> at(q, k, v, mask, hq, hkv, lq, lk, msb, msh, msq, msk, kind, causal, window);
  const Reach& reach = at.reach;
  stage<T, T, D, BR, LD>(qs, at.qh, i0, lq, scale, true);
  __syncthreads();
  unsigned qa[KQ][4];
  for (int kk = 0; kk < KQ; ++kk) load_a<T>(qa[kk], qs + row0 * LD + kk * 16, LD, g, qq);
  const unsigned ia = i0 + row0 + g, ib = ia + 8;
  float o[KD][4];
  for (int n = 0; n < KD; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float ma = NEG_INF, mb = NEG_INF, la = 0.f, lb = 0.f;
  unsigned lo, hi;
  reach.keys(i0, min(i0 + BR, lq), &lo, &hi);
  for (unsigned j0 = lo / BC * BC; j0 < hi; j0 += BC) {
    at.template stage_keys<T, BC, LD>(ks, vs, j0);
    float s[G][4];
    float xa = NEG_INF, xb = NEG_INF;
    for (int b8 = 0; b8 < G; ++b8) {
      s[b8][0] = s[b8][1] = s[b8][2] = s[b8][3] = 0.f;
      for (int kk = 0; kk < KQ; ++kk) {
        unsigned bk[2];
        load_b_nk<T>(bk, ks + b8 * 8 * LD + kk * 16, LD, g, qq);
        mma16816<T>(s[b8], qa[kk], bk);
      }
      for (int x = 0; x < 4; ++x) {
        bool blocked;
        s[b8][x] = score<T>(s[b8][x], reach, at.mk, x < 2 ? ia : ib, j0 + b8 * 8 + 2 * qq + (x & 1),
                            &blocked);
      }
      xa = fmaxf(xa, fmaxf(s[b8][0], s[b8][1]));
      xb = fmaxf(xb, fmaxf(s[b8][2], s[b8][3]));
    }
    for (int o2 = 1; o2 < 4; o2 <<= 1) {
      xa = fmaxf(xa, __shfl_xor_sync(nuvec::FULL, xa, o2));
      xb = fmaxf(xb, __shfl_xor_sync(nuvec::FULL, xb, o2));
    }
    xa = fmaxf(xa, ma);
    xb = fmaxf(xb, mb);
    const float ea = rescale(ma, xa), eb = rescale(mb, xb);
    ma = xa;
    mb = xb;
    float pa = 0.f, pb = 0.f;
    for (int b8 = 0; b8 < G; ++b8) {
      for (int x = 0; x < 4; ++x) s[b8][x] = weight(s[b8][x], x < 2 ? ma : mb);
      pa += s[b8][0] + s[b8][1];
      pb += s[b8][2] + s[b8][3];
    }
    for (int o2 = 1; o2 < 4; o2 <<= 1) {
      pa += __shfl_xor_sync(nuvec::FULL, pa, o2);
      pb += __shfl_xor_sync(nuvec::FULL, pb, o2);
    }
    la = la * ea + pa;
    lb = lb * eb + pb;
    scale_rows(o, ea, eb);
    for (int kk = 0; kk < BC / 16; ++kk) {
      unsigned a[4];
      acc_to_a<T>(a, s[2 * kk], s[2 * kk + 1]);
      for (int n = 0; n < KD; ++n) {
        unsigned bv[2];
        load_b_kn<T>(bv, vs + kk * 16 * LD + n * 8, LD, g, qq);
        mma16816<T>(o[n], a, bv);
      }
    }
  }
  const float sink = has_sinks ? to_float(sinks[h]) : 0.f;
  float lse_a, lse_b;
  const float inv_a = finish(ma, la, sink, has_sinks, &lse_a);
  const float inv_b = finish(mb, lb, sink, has_sinks, &lse_b);
  T* oh = out + (b * hq + h) * lq * D;
  for (int n = 0; n < KD; ++n) {
    const int d = n * 8 + 2 * qq;
    if (ia < lq) {
      oh[ia * D + d] = from_float<T>(o[n][0] * inv_a);
      oh[ia * D + d + 1] = from_float<T>(o[n][1] * inv_a);
    }
    if (ib < lq) {
      oh[ib * D + d] = from_float<T>(o[n][2] * inv_b);
      oh[ib * D + d + 1] = from_float<T>(o[n][3] * inv_b);
    }
  }
  if (qq == 0) {
    if (ia < lq) lse[(b * hq + h) * lq + ia] = lse_a;
    if (ib < lq) lse[(b * hq + h) * lq + ib] = lse_b;
  }
}

// delta[row] = Σ_d dout[row, d] · out[row, d]: a thread per row of [B, Hq, Lq].
template <typename T, int D>
__global__ void flash_delta(const T* __restrict__ out, const T* __restrict__ dout,
                            float* __restrict__ delta, unsigned rows) {
  const unsigned row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float acc = 0.f;
  for (int d = 0; d < D; ++d)
    acc += nuvec::to_float(out[row * D + d]) * nuvec::to_float(dout[row * D + d]);
  delta[row] = acc;
}

// dq (float32, unscaled) times `scale` as T: a thread per element.
template <typename T>
__global__ void flash_dq(const float* __restrict__ dq, T* __restrict__ out, float scale,
                         unsigned n) {
  const unsigned e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e < n) out[e] = nuvec::from_float<T>(dq[e] * scale);
}

// The backward (FlashAttention-2): one block per (tile of 32 keys, key head, batch) visits
// every query tile of 32 rows of every query head of its group that reaches it: P = exp(S −
// lse), dS = P ⊙ (dO Vᵀ − delta) (zero where a boolean mask blocks); dV += Pᵀ dO and dK +=
// dSᵀ (Q·scale) in shared float32, written once as T; dS K added into `dq` with float32
// atomics. Portable FMA kernel, 128 threads, tiles in float32 dynamic shared memory.
template <typename T, int D>
__global__ void __launch_bounds__(128)
flash_attend_back(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                  const unsigned char* __restrict__ mask, const T* __restrict__ dout,
                  const float* __restrict__ lse, const float* __restrict__ delta,
                  float* __restrict__ dq, T* __restrict__ dk, T* __restrict__ dv, float scale,
                  unsigned hq, unsigned hkv, unsigned lq, unsigned lk, unsigned msb,
                  unsigned msh, unsigned msq, unsigned msk, int kind, int causal, int window) {
  using namespace tiled;
  constexpr int B = 32, LD = D + 1, LS = B + 1;
  extern __shared__ __align__(16) unsigned char smem[];
  float* ks = reinterpret_cast<float*>(smem);  // [B][LD]
  float* vs = ks + B * LD;                      // [B][LD]
  float* qs = vs + B * LD;                      // [B][LD] queries · scale, rounded to T
  float* os = qs + B * LD;                      // [B][LD] dO
  float* gk = os + B * LD;                      // [B][LD] dK
  float* gv = gk + B * LD;                      // [B][LD] dV
  float* ps = gv + B * LD;                      // [B][LS] P, queries by keys
  float* ds = ps + B * LS;                      // [B][LS] dS
  float* rows = ds + B * LS;                    // [2 B] lse, delta
  const unsigned u = threadIdx.x;
  const unsigned b = blockIdx.z, kvh = blockIdx.y, j0 = blockIdx.x * B, rep = hq / hkv;
  const Reach reach{lq, lk, causal, window};
  const unsigned at_k = (b * hkv + kvh) * lk * D;
  stage_kv<T, float, D, B, LD>(ks, vs, k + at_k, v + at_k, j0, lk);
  for (unsigned e = u; e < B * LD; e += 128) gk[e] = gv[e] = 0.f;
  unsigned lo, hi;
  reach.rows(j0, min(j0 + B, lk), &lo, &hi);
  for (unsigned h = kvh * rep; h < (kvh + 1) * rep; ++h) {
    const Mask<T> mk(mask, b, h, msb, msh, msq, msk, kind);
    const unsigned at_q = (b * hq + h) * lq;
    for (unsigned i0 = lo / B * B; i0 < hi; i0 += B) {
      __syncthreads();
      stage_queries<T, float, D, B, LD>(qs, os, rows, q + at_q * D, dout + at_q * D,
                                        lse + at_q, delta + at_q, i0, lq, scale);
      __syncthreads();
      for (unsigned e = u; e < B * B; e += 128) {
        const unsigned r = e / B, c = e % B;
        float dot = 0.f, dp = 0.f;
        for (int d = 0; d < D; ++d) {
          dot += qs[r * LD + d] * ks[c * LD + d];
          dp += os[r * LD + d] * vs[c * LD + d];
        }
        bool blocked;
        const float s = score<T>(dot, reach, mk, i0 + r, j0 + c, &blocked);
        const float p = probability<T>(s, rows[r], blocked, lk);
        ps[r * LS + c] = p;
        ds[r * LS + c] = blocked ? 0.f : p * (dp - rows[B + r]);
      }
      __syncthreads();
      for (unsigned e = u; e < B * D; e += 128) {
        const unsigned c = e / D, d = e % D;
        float av = gv[c * LD + d], ak = gk[c * LD + d], aq = 0.f;
        for (int r = 0; r < B; ++r) {
          av += ps[r * LS + c] * os[r * LD + d];
          ak += ds[r * LS + c] * qs[r * LD + d];
          aq += ds[c * LS + r] * ks[r * LD + d];  // row c of dS against the keys
        }
        gv[c * LD + d] = av;
        gk[c * LD + d] = ak;
        if (i0 + c < lq) atomicAdd(dq + (at_q + i0 + c) * D + d, aq);
      }
    }
  }
  __syncthreads();
  for (unsigned e = u; e < B * D; e += 128) {
    const unsigned c = e / D, d = e % D, j = j0 + c;
    if (j >= lk) continue;
    dk[at_k + j * D + d] = from_float<T>(gk[c * LD + d]);
    dv[at_k + j * D + d] = from_float<T>(gv[c * LD + d]);
  }
}

// `flash_attend_back` on the matrix units (half types, sm_80+): 64 keys a block, a warp per 16
// keys holding Sᵀ, dPᵀ and its dK, dV accumulators in registers over the query tiles of 64
// rows (K, V, Q and dO staged as padded half rows); the accumulators of 8-query blocks 2k and
// 2k + 1 are the A operand of the 16-query step k. dSᵀ goes through shared memory once for
// dQ = dS K, a warp per 16 queries, added into `dq` with float32 atomics.
template <typename T, int D>
__global__ void __launch_bounds__(128)
flash_attend_back_mma(const T* __restrict__ q, const T* __restrict__ k,
                      const T* __restrict__ v, const unsigned char* __restrict__ mask,
                      const T* __restrict__ dout, const float* __restrict__ lse,
                      const float* __restrict__ delta, float* __restrict__ dq,
                      T* __restrict__ dk, T* __restrict__ dv, float scale, unsigned hq,
                      unsigned hkv, unsigned lq, unsigned lk, unsigned msb, unsigned msh,
                      unsigned msq, unsigned msk, int kind, int causal, int window) {
  using namespace tiled;
  using namespace nuvec::flash;
  constexpr int B = 64, LD = D + 8, LS = B + 8, KQ = D / 16, KD = D / 8, G = B / 8;
  extern __shared__ __align__(16) unsigned char smem[];
  T* ks = reinterpret_cast<T*>(smem);  // [B][LD]
  T* vs = ks + B * LD;                  // [B][LD]
  T* qs = vs + B * LD;                  // [B][LD] queries · scale
  T* os = qs + B * LD;                  // [B][LD] dO
  T* dst = os + B * LD;                 // [B][LS] dSᵀ, keys by queries
  float* rows = reinterpret_cast<float*>(dst + B * LS);  // [2 B] lse, delta
  const unsigned u = threadIdx.x;
  const int lane = u & 31, g = lane >> 2, qq = lane & 3, row0 = (u >> 5) * 16;
  const unsigned b = blockIdx.z, kvh = blockIdx.y, j0 = blockIdx.x * B, rep = hq / hkv;
  const Reach reach{lq, lk, causal, window};
  const unsigned at_k = (b * hkv + kvh) * lk * D;
  stage_kv<T, T, D, B, LD>(ks, vs, k + at_k, v + at_k, j0, lk);
  float gk[KD][4], gv[KD][4];
  for (int n = 0; n < KD; ++n)
    for (int x = 0; x < 4; ++x) gk[n][x] = gv[n][x] = 0.f;
  unsigned lo, hi;
  reach.rows(j0, min(j0 + B, lk), &lo, &hi);
  const unsigned ja = j0 + row0 + g, jb = ja + 8;
  for (unsigned h = kvh * rep; h < (kvh + 1) * rep; ++h) {
    const Mask<T> mk(mask, b, h, msb, msh, msq, msk, kind);
    const unsigned at_q = (b * hq + h) * lq;
    for (unsigned i0 = lo / B * B; i0 < hi; i0 += B) {
      __syncthreads();
      stage_queries<T, T, D, B, LD>(qs, os, rows, q + at_q * D, dout + at_q * D, lse + at_q,
                                    delta + at_q, i0, lq, scale);
      __syncthreads();
      float p[G][4], ds[G][4];
      for (int b8 = 0; b8 < G; ++b8) {
        for (int x = 0; x < 4; ++x) p[b8][x] = ds[b8][x] = 0.f;
        for (int kk = 0; kk < KQ; ++kk) {
          unsigned ka[4], va[4], bq[2], bo[2];
          load_a<T>(ka, ks + row0 * LD + kk * 16, LD, g, qq);
          load_a<T>(va, vs + row0 * LD + kk * 16, LD, g, qq);
          load_b_nk<T>(bq, qs + b8 * 8 * LD + kk * 16, LD, g, qq);
          load_b_nk<T>(bo, os + b8 * 8 * LD + kk * 16, LD, g, qq);
          mma16816<T>(p[b8], ka, bq);
          mma16816<T>(ds[b8], va, bo);
        }
        for (int x = 0; x < 4; ++x) {
          const int c = b8 * 8 + 2 * qq + (x & 1);
          bool blocked;
          const float s = score<T>(p[b8][x], reach, mk, i0 + c, x < 2 ? ja : jb, &blocked);
          const float pv = probability<T>(s, rows[c], blocked, lk);
          p[b8][x] = pv;
          ds[b8][x] = blocked ? 0.f : pv * (ds[b8][x] - rows[B + c]);
          dst[(row0 + g + (x < 2 ? 0 : 8)) * LS + c] = from_float<T>(ds[b8][x]);
        }
      }
      // dV += Pᵀ dO and dK += dSᵀ (Q·scale), 16 queries a step
      for (int kk = 0; kk < B / 16; ++kk) {
        unsigned ap[4], ad[4];
        acc_to_a<T>(ap, p[2 * kk], p[2 * kk + 1]);
        acc_to_a<T>(ad, ds[2 * kk], ds[2 * kk + 1]);
        for (int n = 0; n < KD; ++n) {
          unsigned bo[2], bq[2];
          load_b_kn<T>(bo, os + kk * 16 * LD + n * 8, LD, g, qq);
          load_b_kn<T>(bq, qs + kk * 16 * LD + n * 8, LD, g, qq);
          mma16816<T>(gv[n], ap, bo);
          mma16816<T>(gk[n], ad, bq);
        }
      }
      __syncthreads();
      // dQ = dS K for this warp's 16 queries
      for (int n = 0; n < KD; ++n) {
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
        for (int kk = 0; kk < B / 16; ++kk) {
          unsigned af[4], bk[2];
          load_a_t<T>(af, dst + kk * 16 * LS + row0, LS, g, qq);
          load_b_kn<T>(bk, ks + kk * 16 * LD + n * 8, LD, g, qq);
          mma16816<T>(acc, af, bk);
        }
        add_acc<D>(dq + at_q * D, i0 + row0 + g, lq, n * 8 + 2 * qq, acc);
      }
    }
  }
  for (int n = 0; n < KD; ++n) {
    for (int x = 0; x < 4; ++x) {
      const unsigned j = x < 2 ? ja : jb;
      const int d = n * 8 + 2 * qq + (x & 1);
      if (j >= lk) continue;
      dk[at_k + j * D + d] = from_float<T>(gk[n][x]);
      dv[at_k + j * D + d] = from_float<T>(gv[n][x]);
    }
  }
}

