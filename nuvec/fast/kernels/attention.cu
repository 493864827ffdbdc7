// The vector attention kernels (at most 8 queries per node) of the attention planner.
//
// Layout (C-contiguous): q [B, Hq, Lq, D], k and v [B, Hkv, Lk, D], out [B, Hq, Lq, D];
// mask [B, Hq, Lq, Lk] when mask_kind is 1 (bytes, nonzero attends) or 2 (T, added to the
// scores); sinks [Hq] (T) when has_sinks = 1. Query head h reads key head h / (Hq / Hkv).
// Under `causal` query i sees keys 0..i + Lk - Lq (queries aligned at the end, Lq <= Lk).
// Scores are q * scale rounded to T, dotted with k in float, rounded to T (as the fallback's
// matmul), masked (a false boolean entry takes T's lowest value); the softmax (with the sink
// as one more logit) and the weighted sum of v are float32.
//
// A warp owns one query row; lane l holds dims l * E .. l * E + E - 1 (E = D / 32). Kernels:
// - sdpa_vector<T, D>: one pass; grid (Lq, Hq, B), block WARPS * 32, warps stride the keys
//   and merge through dynamic shared memory (WARPS * (D + 2) floats).
// - sdpa_vector_2pass_1<T, D, TK1>: first of two passes; grid (blocks, Lq, B * Hq), block 32;
//   block p scans key chunk p (ceil(Lk / blocks) keys) and writes the float partial
//   (o[D], m, l) to part[((b * Hq + h) * Lq + i) * blocks + p]. TK1: one key per lane and
//   step (q in shared memory), for chunks of at most 32 keys; else the warp takes one key per
//   step with the dims split over lanes.
// - sdpa_gqa_decode_1<T, D, GQA>: the grouped-query decode first pass (Lq = 1, no mask or
//   sinks); grid (blocks, Hkv, B), block GQA * 32; the block stages 32-key tiles of k and v
//   in dynamic shared memory (2 * 32 * D elements) once for the GQA query heads of its key
//   head (one warp each).
// - sdpa_vector_2pass_2<T, D>: merges the partials (and the sink); grid (Lq, Hq, B), block 32.
// Bounds: every buffer under 2^32 elements (32-bit offsets); D in 64, 96, 128, 256, 512.
#include "common.cuh"

using namespace nuvec;

namespace {

constexpr int WARPS = 8;

template <typename T> __device__ __forceinline__ float lowest();
template <> __device__ __forceinline__ float lowest<float>() { return -3.4028234663852886e38f; }
template <> __device__ __forceinline__ float lowest<__half>() { return -65504.f; }
template <> __device__ __forceinline__ float lowest<__nv_bfloat16>() { return -3.3895313892515355e38f; }

// The running softmax state of one query row: max, sum of exp and the lane's output dims.
template <int E> struct Row {
  float m, l, o[E];
  __device__ __forceinline__ void clear() {
    m = NUVEC_NEG_INF;
    l = 0.f;
    for (int e = 0; e < E; ++e) o[e] = 0.f;
  }
  // Rescales to the new max `mn`; returns the factor (1 while nothing was seen).
  __device__ __forceinline__ float rescale(float mn) {
    float c = m == NUVEC_NEG_INF ? 0.f : expf(m - mn);
    if (mn == NUVEC_NEG_INF) c = 1.f;
    m = mn;
    l *= c;
    for (int e = 0; e < E; ++e) o[e] *= c;
    return c;
  }
  __device__ __forceinline__ void merge(float m2, float l2, const float* o2) {
    float mn = fmaxf(m, m2);
    rescale(mn);
    float c = (m2 == NUVEC_NEG_INF || mn == NUVEC_NEG_INF) ? 0.f : expf(m2 - mn);
    l += l2 * c;
    for (int e = 0; e < E; ++e) o[e] += o2[e] * c;
  }
};

// The score of key j after the mask (row `mrow` of the mask).
template <typename T>
__device__ __forceinline__ float masked(float dot, const unsigned char* mrow, int kind,
                                        unsigned j) {
  float s = round_to<T>(dot);
  if (kind == 1) return mrow[j] ? s : lowest<T>();
  if (kind == 2) return round_to<T>(s + to_float(reinterpret_cast<const T*>(mrow)[j]));
  return s;
}

// Query row i's keys end (exclusive) and its mask row.
__device__ __forceinline__ unsigned key_end(unsigned i, unsigned lq, unsigned lk, int causal) {
  return causal ? min(lk, i + lk - lq + 1) : lk;
}

template <typename T, int E>
__device__ __forceinline__ void load_query(float (&qv)[E], const T* qr, float scale) {
  unsigned lane = threadIdx.x % 32;
  for (int e = 0; e < E; ++e) qv[e] = round_to<T>(to_float(qr[lane * E + e]) * scale);
}

// Keys k0, k0 + step, ... below k1: one key per step, the dot product split over lanes.
template <typename T, int D>
__device__ void scan_keys(Row<D / 32>& st, const float (&qv)[D / 32], const T* kh, const T* vh,
                          const unsigned char* mrow, int kind, unsigned k0, unsigned k1,
                          unsigned step) {
  constexpr int E = D / 32;
  unsigned lane = threadIdx.x % 32;
  for (unsigned j = k0; j < k1; j += step) {
    const T* kr = kh + j * D + lane * E;
    const T* vr = vh + j * D + lane * E;
    float d = 0.f;
    for (int e = 0; e < E; ++e) d += qv[e] * to_float(kr[e]);
    float s = masked<T>(warp_sum(d), mrow, kind, j);
    st.rescale(fmaxf(st.m, s));
    float p = st.m == NUVEC_NEG_INF ? 0.f : expf(s - st.m);
    st.l += p;
    for (int e = 0; e < E; ++e) st.o[e] += p * to_float(vr[e]);
  }
}

// Writes a finished row (with the sink as one more logit) as T.
template <typename T, int E>
__device__ __forceinline__ void write_row(Row<E>& st, const T* sinks, int has_sinks, unsigned h,
                                          T* orow) {
  if (has_sinks) {
    float sink = to_float(sinks[h]);
    st.rescale(fmaxf(st.m, sink));
    st.l += expf(sink - st.m);
  }
  unsigned lane = threadIdx.x % 32;
  float inv = 1.f / st.l;
  for (int e = 0; e < E; ++e) orow[lane * E + e] = from_float<T>(st.o[e] * inv);
}

// Stores a partial row (o, m, l) to `slot` (D + 2 floats).
template <int E>
__device__ __forceinline__ void write_part(const Row<E>& st, float* slot) {
  unsigned lane = threadIdx.x % 32;
  for (int e = 0; e < E; ++e) slot[lane * E + e] = st.o[e];
  if (lane == 0) {
    slot[32 * E] = st.m;
    slot[32 * E + 1] = st.l;
  }
}

}  // namespace

template <typename T, int D>
__global__ void __launch_bounds__(WARPS * 32) sdpa_vector(
    const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
    const unsigned char* __restrict__ mask, const T* __restrict__ sinks, T* __restrict__ out,
    float scale, unsigned hq, unsigned hkv, unsigned lq, unsigned lk, int mask_kind, int causal,
    int has_sinks) {
  constexpr int E = D / 32;
  extern __shared__ float4 s_dyn[];  // WARPS * (D + 2) floats
  float* s_o = reinterpret_cast<float*>(s_dyn);
  float* s_m = s_o + WARPS * D;
  float* s_l = s_m + WARPS;
  unsigned i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  unsigned row = (b * hq + h) * lq + i;
  unsigned kvh = b * hkv + h / (hq / hkv);
  float qv[E];
  load_query<T, E>(qv, q + row * D, scale);
  unsigned mstride = mask_kind == 2 ? (unsigned)sizeof(T) : 1u;
  const unsigned char* mrow = mask + row * lk * mstride;
  Row<E> st;
  st.clear();
  scan_keys<T, D>(st, qv, k + kvh * lk * D, v + kvh * lk * D, mrow, mask_kind, warp,
                  key_end(i, lq, lk, causal), WARPS);
  for (int e = 0; e < E; ++e) s_o[warp * D + lane * E + e] = st.o[e];
  if (lane == 0) {
    s_m[warp] = st.m;
    s_l[warp] = st.l;
  }
  __syncthreads();
  if (warp != 0) return;
  for (int w = 1; w < WARPS; ++w) st.merge(s_m[w], s_l[w], s_o + w * D + lane * E);
  write_row<T, E>(st, sinks, has_sinks, h, out + row * D);
}

template <typename T, int D, int TK1>
__global__ void __launch_bounds__(32) sdpa_vector_2pass_1(
    const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
    const unsigned char* __restrict__ mask, float* __restrict__ part, float scale, unsigned hq,
    unsigned hkv, unsigned lq, unsigned lk, unsigned blocks, int mask_kind, int causal) {
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
  unsigned chunk = (lk + blocks - 1) / blocks;
  unsigned k0 = p * chunk, k1 = min(k0 + chunk, key_end(i, lq, lk, causal));
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
    float* __restrict__ part, float scale, unsigned hkv, unsigned lk, unsigned blocks) {
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
  unsigned chunk = (lk + blocks - 1) / blocks;
  unsigned k0 = min(p * chunk, lk), k1 = min(k0 + chunk, lk);
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
  unsigned i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  unsigned lane = threadIdx.x % 32;
  unsigned row = (b * hq + h) * lq + i;
  Row<E> st;
  st.clear();
  for (unsigned p = 0; p < blocks; ++p) {
    const float* slot = part + (row * blocks + p) * (D + 2);
    st.merge(slot[D], slot[D + 1], slot + lane * E);
  }
  write_row<T, E>(st, sinks, has_sinks, h, out + row * D);
}
