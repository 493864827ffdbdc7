// The vector attention kernels (at most 8 queries per node) of the attention planner.
//
// Layout (C-contiguous): q [B, Hq, Lq, D], k and v [B, Hkv, Lk, D], out [B, Hq, Lq, D];
// mask [B, Hq, Lq, Lk] when mask_kind is 1 (bytes, nonzero attends) or 2 (T, added to the
// scores); sinks [Hq] (T) when has_sinks = 1. Query head h reads key head h / (Hq / Hkv).
// Under `causal` query i sees keys 0..i + Lk - Lq (queries aligned at the end, Lq <= Lk), and
// with a sliding window w > 0 (`window`) only the last w of them (keys i + Lk - Lq - w + 1..).
// Scores are q * scale rounded to T, dotted with k in float, rounded to T (as the fallback's
// matmul), masked (a false boolean entry takes T's lowest value); the softmax (with the sink
// as one more logit) and the weighted sum of v are float32.
//
// A warp owns one query row; lane l holds dims l * E .. l * E + E - 1 (E = D / 32). Kernels:
// - sdpa_vector<T, D>: one pass; grid (Lq, Hq, B), block WARPS * 32, warps stride the keys
//   and merge through dynamic shared memory (WARPS * (D + 2) floats).
// - sdpa_vector_2pass_1<T, D, TK1>: first of two passes; grid (blocks, Lq, B * Hq), block 32;
//   block p scans key chunk p (ceil((Lk - k_base) / blocks) keys from k_base, the first key
//   of query 0's window, else 0) and writes the float partial
//   (o[D], m, l) to part[((b * Hq + h) * Lq + i) * blocks + p]. TK1: one key per lane and
//   step (q in shared memory), for chunks of at most 32 keys; else the warp takes one key per
//   step with the dims split over lanes.
// - sdpa_gqa_decode_1<T, D, GQA>: the grouped-query decode first pass (Lq = 1, no mask or
//   sinks); grid (blocks, Hkv, B), block GQA * 32, the chunks over keys k_base..Lk (the
//   launcher's start of the window, else 0); the block stages 32-key tiles of k and v
//   in dynamic shared memory (2 * 32 * D elements) once for the GQA query heads of its key
//   head (one warp each).
// - sdpa_vector_2pass_2<T, D>: merges the partials (and the sink); grid (Lq, Hq, B), block 32.
// Bounds: every buffer under 2^32 elements (32-bit offsets); D in 64, 96, 128, 256, 512.
#include "attention.cuh"

using namespace nuvec;
using namespace nuvec::attn;

template <typename T, int D>
__global__ void __launch_bounds__(WARPS * 32) sdpa_vector(
    const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
    const unsigned char* __restrict__ mask, const T* __restrict__ sinks, T* __restrict__ out,
    float scale, unsigned hq, unsigned hkv, unsigned lq, unsigned lk, int mask_kind, int causal,
    int has_sinks, int window) {
  constexpr int E = D / 32;
  extern __shared__ float4 s_dyn[];  // WARPS * (D + 2) floats
  unsigned i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  unsigned warp = threadIdx.x / 32;
  unsigned row = grid_row(hq, lq);
  unsigned kvh = b * hkv + h / (hq / hkv);
  float qv[E];
  load_query<T, E>(qv, q + row * D, scale);
  unsigned mstride = mask_kind == 2 ? (unsigned)sizeof(T) : 1u;
  const unsigned char* mrow = mask + row * lk * mstride;
  Row<E> st;
  st.clear();
  scan_keys<T, D>(st, qv, k + kvh * lk * D, v + kvh * lk * D, mrow, mask_kind,
                  key_start(i, lq, lk, causal, window) + warp, key_end(i, lq, lk, causal),
                  WARPS);
  if (merge_warps<D>(st, reinterpret_cast<float*>(s_dyn)))
    write_row<T, E>(st, sinks, has_sinks, h, out + row * D);
}

template <typename T, int D, int TK1>
__global__ void __launch_bounds__(32) sdpa_vector_2pass_1(
    const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
    const unsigned char* __restrict__ mask, float* __restrict__ part, float scale, unsigned hq,
    unsigned hkv, unsigned lq, unsigned lk, unsigned blocks, int mask_kind, int causal,
    int window) {
  constexpr int E = D / 32;
  __shared__ float s_q[D];
  unsigned p = blockIdx.x, i = blockIdx.y, bh = blockIdx.z;
  unsigned h = bh % hq, lane = threadIdx.x % 32;
  unsigned row = bh * lq + i;
  unsigned kvh = (bh / hq) * hkv + h / (hq / hkv);
  const T* kh = k + kvh * lk * D;
  const T* vh = v + kvh * lk * D;
  float qv[E];
  load_query<T, E>(qv, q + row * D, scale);
  unsigned mstride = mask_kind == 2 ? (unsigned)sizeof(T) : 1u;
  const unsigned char* mrow = mask + row * lk * mstride;
  // Chunks over the keys from query 0's first one; each row cut to its own keys.
  unsigned base = key_start(0, lq, lk, causal, window);
  unsigned chunk = (lk - base + blocks - 1) / blocks;
  unsigned k0 = base + p * chunk, k1 = min(k0 + chunk, key_end(i, lq, lk, causal));
  k0 = max(k0, key_start(i, lq, lk, causal, window));
  Row<E> st;
  st.clear();
  if (!TK1) {
    scan_keys<T, D>(st, qv, kh, vh, mrow, mask_kind, k0, k1, 1);
  } else {
    for (int e = 0; e < E; ++e) s_q[lane * E + e] = qv[e];
    __syncwarp();
    for (unsigned base = k0; base < k1; base += 32) {
      unsigned j = base + lane;
      float s = NUVEC_NEG_INF;
      if (j < k1) {
        float d = 0.f;
        for (int c = 0; c < D; ++c) d += s_q[c] * to_float(kh[j * D + c]);
        s = masked<T>(d, mrow, mask_kind, j);
      }
      st.rescale(fmaxf(st.m, warp_max(s)));
      float pj = (j < k1 && st.m != NUVEC_NEG_INF) ? expf(s - st.m) : 0.f;
      st.l += warp_sum(pj);
      unsigned n = min(32u, k1 - base);
      for (unsigned t = 0; t < 32; ++t) {
        float pt = __shfl_sync(FULL, pj, t);
        if (t < n)
          for (int e = 0; e < E; ++e) st.o[e] += pt * to_float(vh[(base + t) * D + lane * E + e]);
      }
    }
  }
  write_part<E>(st, part + (row * blocks + p) * (D + 2));
}

template <typename T, int D, int GQA>
__global__ void __launch_bounds__(GQA * 32) sdpa_gqa_decode_1(
    const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
    float* __restrict__ part, float scale, unsigned hkv, unsigned lk, unsigned blocks,
    unsigned k_base) {
  constexpr int E = D / 32;
  extern __shared__ float4 s_tiles[];  // 2 * 32 * D elements of T
  T* s_k = reinterpret_cast<T*>(s_tiles);
  T* s_v = s_k + 32 * D;
  unsigned p = blockIdx.x, g = blockIdx.y, b = blockIdx.z;
  unsigned warp = threadIdx.x / 32;
  unsigned hq = hkv * GQA, h = g * GQA + warp;
  unsigned row = b * hq + h;  // Lq = 1
  unsigned kvh = b * hkv + g;
  const T* kh = k + kvh * lk * D;
  const T* vh = v + kvh * lk * D;
  float qv[E];
  load_query<T, E>(qv, q + row * D, scale);
  unsigned chunk = (lk - k_base + blocks - 1) / blocks;
  unsigned k0 = min(k_base + p * chunk, lk), k1 = min(k0 + chunk, lk);
  Row<E> st;
  st.clear();
  for (unsigned base = k0; base < k1; base += 32) {
    unsigned n = min(32u, k1 - base);
    __syncthreads();  // the previous tile is read
    for (unsigned x = threadIdx.x; x < n * D; x += GQA * 32) {
      s_k[x] = kh[base * D + x];
      s_v[x] = vh[base * D + x];
    }
    __syncthreads();
    scan_keys<T, D>(st, qv, s_k, s_v, nullptr, 0, 0, n, 1);
  }
  write_part<E>(st, part + (row * blocks + p) * (D + 2));
}

template <typename T, int D>
__global__ void __launch_bounds__(32) sdpa_vector_2pass_2(
    const float* __restrict__ part, const T* __restrict__ sinks, T* __restrict__ out,
    unsigned hq, unsigned lq, unsigned blocks, int has_sinks) {
  constexpr int E = D / 32;
  unsigned h = blockIdx.y, lane = threadIdx.x % 32;
  unsigned row = grid_row(hq, lq);
  Row<E> st;
  st.clear();
  for (unsigned p = 0; p < blocks; ++p) {
    const float* slot = part + (row * blocks + p) * (D + 2);
    st.merge(slot[D], slot[D + 1], slot + lane * E);
  }
  write_row<T, E>(st, sinks, has_sinks, h, out + row * D);
}
