// What the attention kernels share (attention.cu, paged_attention.cu): the running softmax
// state of one query row held by a warp (lane l owns dims l * E .. l * E + E - 1, E = D / 32),
// masked scores as the fallback rounds them, and the scan over keys.
#pragma once
#include "common.cuh"

namespace nuvec {
namespace attn {

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

// The score of key j after the mask (row `mrow` of the mask; kind 3: every key masked).
template <typename T>
__device__ __forceinline__ float masked(float dot, const unsigned char* mrow, int kind,
                                        unsigned j) {
  float s = round_to<T>(dot);
  if (kind == 1) return mrow[j] ? s : lowest<T>();
  if (kind == 2) return round_to<T>(s + to_float(reinterpret_cast<const T*>(mrow)[j]));
  if (kind == 3) return lowest<T>();
  return s;
}

// Query row i's keys end (exclusive) and its mask row.
__device__ __forceinline__ unsigned key_end(unsigned i, unsigned lq, unsigned lk, int causal) {
  return causal ? min(lk, i + lk - lq + 1) : lk;
}

// Query row i's first key: 0, or under `causal` with a sliding window w > 0 the first of
// the last w keys up to its end (key j is in the window of position p when j > p - w).
__device__ __forceinline__ unsigned key_start(unsigned i, unsigned lq, unsigned lk, int causal,
                                              int window) {
  if (!causal || window <= 0) return 0u;
  long long s = (long long)i + lk - lq + 1 - window;
  return s > 0 ? (unsigned)s : 0u;
}

// The query row (index into q and out) of a block of a (Lq, Hq, B) grid.
__device__ __forceinline__ unsigned grid_row(unsigned hq, unsigned lq) {
  return (blockIdx.z * hq + blockIdx.y) * lq + blockIdx.x;
}

template <typename T, int E>
__device__ __forceinline__ void load_query(float (&qv)[E], const T* qr, float scale) {
  unsigned lane = threadIdx.x % 32;
  for (int e = 0; e < E; ++e) qv[e] = round_to<T>(to_float(qr[lane * E + e]) * scale);
}

// Key j's row at j * D (contiguous keys).
template <int D> struct Dense {
  __device__ __forceinline__ unsigned operator()(unsigned j) const { return j * D; }
};

// Keys k0, k0 + step, ... below k1 (key j's row at kh + at(j), vh + at(j)): one key per
// step, the dot product split over lanes.
template <typename T, int D, typename At = Dense<D>>
__device__ void scan_keys(Row<D / 32>& st, const float (&qv)[D / 32], const T* kh, const T* vh,
                          const unsigned char* mrow, int kind, unsigned k0, unsigned k1,
                          unsigned step, At at = At()) {
  constexpr int E = D / 32;
  unsigned lane = threadIdx.x % 32;
  for (unsigned j = k0; j < k1; j += step) {
    const T* kr = kh + at(j) + lane * E;
    const T* vr = vh + at(j) + lane * E;
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

// Merges the states of the block's WARPS warps into warp 0's (`scratch`: WARPS * (D + 2)
// floats of shared memory); true in warp 0, whose state is then the block's.
template <int D>
__device__ __forceinline__ bool merge_warps(Row<D / 32>& st, float* scratch) {
  constexpr int E = D / 32;
  unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* s_m = scratch + WARPS * D;
  float* s_l = s_m + WARPS;
  for (int e = 0; e < E; ++e) scratch[warp * D + lane * E + e] = st.o[e];
  if (lane == 0) {
    s_m[warp] = st.m;
    s_l[warp] = st.l;
  }
  __syncthreads();
  if (warp != 0) return false;
  for (int w = 1; w < WARPS; ++w) st.merge(s_m[w], s_l[w], scratch + w * D + lane * E);
  return true;
}

}  // namespace attn
}  // namespace nuvec
