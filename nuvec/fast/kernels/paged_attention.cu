// Paged attention: attention of q over keys and values read through a block table.
//
// Layout (C-contiguous): q and out [B, Hq, L, D]; k_cache and v_cache [blocks, Hkv, bs, D]
// (bs a power of two); tables [B, M] and lengths [B] int32. Sequence b's position p lives in
// block tables[b, p / bs] (clamped to 0..blocks - 1) at row p % bs; its length is clamped to
// 0..M * bs; query l sees positions below length - L + 1 + l, and a query seeing none
// averages every listed position (the fallback's boolean mask leaves all scores at T's
// lowest). Scores and softmax as attention.cu's.
// Launch: grid (L, Hq, B), block WARPS * 32 (warps stride the positions), dynamic shared
// memory WARPS * (D + 2) floats. Bounds: buffers under 2^32 elements; D in 64, 128, 256.
#include "attention.cuh"

using namespace nuvec;
using namespace nuvec::attn;

namespace {

// Position p's row in a cache: block id clamped, then the row of key head `kvh`.
template <int D> struct Paged {
  const int* table;
  unsigned blocks, hkv, kvh, shift;
  __device__ __forceinline__ unsigned operator()(unsigned p) const {
    int id = table[p >> shift];
    unsigned blk = id < 0 ? 0u : min((unsigned)id, blocks - 1);
    return ((blk * hkv + kvh) << shift | (p & ((1u << shift) - 1))) * D;
  }
};

}  // namespace

template <typename T, int D>
__global__ void __launch_bounds__(WARPS * 32) paged_attention(
    const T* __restrict__ q, const T* __restrict__ k_cache, const T* __restrict__ v_cache,
    const int* __restrict__ tables, const int* __restrict__ lengths, T* __restrict__ out,
    float scale, unsigned hq, unsigned hkv, unsigned lq, unsigned blocks, unsigned shift,
    unsigned max_blocks) {
  constexpr int E = D / 32;
  unsigned b = blockIdx.z, cap = max_blocks << shift;
  int len = lengths[b];
  unsigned n = len < 0 ? 0u : min((unsigned)len, cap);
  // Positions below n - lq + 1 + i; none (every position averaged) when that is not positive.
  long long end = (long long)n - lq + 1 + blockIdx.x;
  unsigned h = blockIdx.y, warp = threadIdx.x / 32, row = grid_row(hq, lq);
  extern __shared__ float4 s_dyn[];  // WARPS * (D + 2) floats
  float qv[E];
  load_query<T, E>(qv, q + row * D, scale);
  Paged<D> at{tables + b * max_blocks, blocks, hkv, h / (hq / hkv), shift};
  Row<E> st;
  st.clear();
  if (end > 0)
    scan_keys<T, D>(st, qv, k_cache, v_cache, nullptr, 0, warp, (unsigned)end, WARPS, at);
  else
    scan_keys<T, D>(st, qv, k_cache, v_cache, nullptr, 3, warp, cap, WARPS, at);
  if (merge_warps<D>(st, reinterpret_cast<float*>(s_dyn)))
    write_row<T, E>(st, q, 0, h, out + row * D);
}
