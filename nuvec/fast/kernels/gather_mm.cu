// Gathered matrix products as tiled GEMMs: gather_mm (dense right operands), gather_qmm and
// quantized_matmul (packed right operands dequantized while they are staged). Launched by
// nuvec/backends/cuda/launchers/gather.py.
//
// Layout (C-contiguous, 32-bit element offsets: the launcher sends larger arrays to the
// fallback):
// - a [A, M, K] in T; lhs, rhs [R] uint32 (the batch of `a`, of the right operand); out
//   [R, M, N] in T. An index past its operand's batch reads zeros (the CPU fails instead).
// - KIND 0 (dense): b [E, K, N] in T. KIND 1 (packed, x·wᵀ): b [E, N, K·bits/32] uint32,
//   scales and biases [E, N, K/group] in T. KIND 2 (packed, x·w): b [E, K, N·bits/32],
//   scales and biases [E, K, N/group]. Codes are a little-endian bit stream per packed row
//   (3-, 5- and 6-bit codes straddle words); w = scale·q + bias per group.
// - offsets [E] int32 (gather_segments only, M = 1): rows offsets[e] .. offsets[e + 1] (the
//   last up to R) are sorted by rhs and take matrix e: each block computes one BM × BN tile of
//   one segment (a grouped GEMM). A row of a segment whose rhs is not e (unsorted indices
//   under the sorted hint) is computed by its block separately, so results never depend on
//   the hint.
// Launch: 128 threads (4 warps; launch bounds of 4 blocks per SM, which ptxas needs to keep
// the accumulators out of local memory); gather_segments grid (ceil(R / BM) + E,
// ceil(N / BN)), the row tiles past the segments' total return at once; gather_batched grid
// (R · ceil(M / BM), ceil(N / BN)). Dynamic shared memory: the tiles (BM + BN rows of BK +
// pad elements of T), then 32-bit row offsets (gather_segments: 3·BM + 4 words,
// gather_batched: 2·BM).
// Arithmetic: float accumulators. Half types run mma.sync m16n8k16 (sm_80+; warps 2 × 2 of
// 32 × 32 for BM = 64, 1 × 4 of 16 × 16 for BM = 16); float32 runs FMAs (thread tile 8 or 2
// rows × 4 columns). Packed weights are dequantized in float and stored in T for the mma.

#include "mma.cuh"

namespace gmm {

using nuvec::from_float;
using nuvec::to_float;

constexpr int BN = 64, BK = 32, THREADS = 128;
constexpr unsigned NONE = 0xffffffffu;
enum { DENSE = 0, PACKED_T = 1, PACKED = 2 };

// Row stride of the shared tiles, in elements: conflict-free fragment reads for the half
// types (20 words), conflict-free column reads for float (33 words).
template <typename T> __host__ __device__ constexpr int row_stride() { return sizeof(T) == 4 ? BK + 1 : BK + 8; }

// The right operand of the products: element (k, n) of matrix e as float.
template <typename T, int KIND>
struct Right {
  const void* b;
  const T* scales;
  const T* biases;
  unsigned K, N, bits, group;

  // Column `col` of packed row `row` (of `cols` codes) dequantized.
  __device__ __forceinline__ float packed(unsigned row, unsigned col, unsigned cols) const {
    const unsigned* w = static_cast<const unsigned*>(b) + row * (cols / 32 * bits);
    const unsigned bit = col * bits, off = bit & 31;
    unsigned long long window = w[bit >> 5];
    if (off + bits > 32) window |= static_cast<unsigned long long>(w[(bit >> 5) + 1]) << 32;
    const unsigned code = static_cast<unsigned>(window >> off) & ((1u << bits) - 1u);
    const unsigned g = row * (cols / group) + col / group;
    return to_float(scales[g]) * static_cast<float>(code) + to_float(biases[g]);
  }
  // Columns col .. col + 7 of packed row `row` (col a multiple of 8, within one group) into
  // dst[0], dst[stride], ...
  __device__ __forceinline__ void packed8(unsigned row, unsigned col, unsigned cols, T* dst,
                                          int stride) const {
    const unsigned* w = static_cast<const unsigned*>(b) + row * (cols / 32 * bits);
    const unsigned bit = col * bits, first = bit >> 5, off = bit & 31;
    const unsigned last = (bit + 8 * bits - 1) >> 5;
    const unsigned w0 = w[first], w1 = first + 1 <= last ? w[first + 1] : 0u;
    const unsigned w2 = first + 2 <= last ? w[first + 2] : 0u;
    const unsigned g = row * (cols / group) + col / group;
    const float scale = to_float(scales[g]), bias = to_float(biases[g]);
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const unsigned at = off + c * bits, word = at >> 5;
      const unsigned lo = word == 0 ? w0 : word == 1 ? w1 : w2, hi = word == 0 ? w1 : w2;
      const unsigned long long window = lo | (static_cast<unsigned long long>(hi) << 32);
      const unsigned code = static_cast<unsigned>(window >> (at & 31)) & ((1u << bits) - 1u);
      dst[c * stride] = from_float<T>(scale * static_cast<float>(code) + bias);
    }
  }
  __device__ __forceinline__ float value(unsigned e, unsigned k, unsigned n) const {
    if constexpr (KIND == DENSE) return to_float(static_cast<const T*>(b)[(e * K + k) * N + n]);
    else if constexpr (KIND == PACKED_T) return packed(e * N + n, k, K);
    else return packed(e * K + k, n, N);
  }
};

// The tile's rows: offsets of their `a` rows and of their output rows (NONE: zeros / not
// stored), in shared memory.
struct Rows {
  unsigned* a;
  unsigned* out;
};

// The dynamic shared memory of a block: the two tiles, then the row offsets.
template <typename T, int BM>
struct Shared {
  T* as;
  T* bs;
  unsigned* arows;
  unsigned* orows;
  __device__ __forceinline__ explicit Shared(unsigned char* p)
      : as(reinterpret_cast<T*>(p)), bs(as + BM * row_stride<T>()),
        arows(reinterpret_cast<unsigned*>(bs + BN * row_stride<T>())), orows(arows + BM) {}
};

// as[i][k] = a[rows.a[i] + k0 + k] (zeros past K or for NONE rows); VEC-wide loads when
// `vec` (K a multiple of VEC, `a` 16-byte aligned).
template <typename T, int BM>
__device__ __forceinline__ void stage_a(const T* a, Rows rows, unsigned k0, unsigned K,
                                        bool vec, T* as) {
  constexpr int LD = row_stride<T>(), VEC = 16 / sizeof(T);
  if (vec) {
    for (int e = threadIdx.x; e < BM * BK / VEC; e += THREADS) {
      const int i = e / (BK / VEC), c = (e % (BK / VEC)) * VEC;
      if (rows.a[i] != NONE && k0 + c < K) {
        const nuvec::Vec<T, VEC> v = nuvec::load_vec<T, VEC>(a, rows.a[i] + k0 + c);
#pragma unroll
        for (int j = 0; j < VEC; ++j) as[i * LD + c + j] = v.v[j];
      } else {
#pragma unroll
        for (int j = 0; j < VEC; ++j) as[i * LD + c + j] = from_float<T>(0.f);
      }
    }
    return;
  }
  for (int e = threadIdx.x; e < BM * BK; e += THREADS) {
    const int i = e / BK, c = e % BK;
    const bool in = rows.a[i] != NONE && k0 + c < K;
    as[i * LD + c] = in ? a[rows.a[i] + k0 + c] : from_float<T>(0.f);
  }
}

// bs[n][k] = B_e(k0 + k, n0 + n), zeros outside the matrix or when `e` is NONE. Dense rows
// load VEC columns at once when `vec` (N a multiple of VEC, `b` 16-byte aligned).
template <typename T, int KIND>
__device__ __forceinline__ void stage_b(const Right<T, KIND>& right, unsigned e, unsigned k0,
                                        unsigned n0, bool vec, T* bs) {
  constexpr int LD = row_stride<T>(), VEC = 16 / sizeof(T);
  const unsigned K = right.K, N = right.N;
  if (KIND == DENSE && vec) {
    const T* b = static_cast<const T*>(right.b);
#pragma unroll 1
    for (int i = threadIdx.x; i < BK * BN / VEC; i += THREADS) {
      const int k = i / (BN / VEC), n = (i % (BN / VEC)) * VEC;
      if (e != NONE && k0 + k < K && n0 + n < N) {
        const nuvec::Vec<T, VEC> v = nuvec::load_vec<T, VEC>(b, (e * K + k0 + k) * N + n0 + n);
#pragma unroll
        for (int j = 0; j < VEC; ++j) bs[(n + j) * LD + k] = v.v[j];
      } else {
#pragma unroll
        for (int j = 0; j < VEC; ++j) bs[(n + j) * LD + k] = from_float<T>(0.f);
      }
    }
    return;
  }
  if constexpr (KIND != DENSE) {
    // Eight codes of one packed row (one group) per unit, consecutive units along the row.
    for (int i = threadIdx.x; i < BK * BN / 8; i += THREADS) {
      const int n = KIND == PACKED_T ? i / (BK / 8) : (i % (BN / 8)) * 8;
      const int k = KIND == PACKED_T ? (i % (BK / 8)) * 8 : i / (BN / 8);
      T* dst = bs + n * LD + k;
      const int stride = KIND == PACKED_T ? 1 : LD;
      // The packed axis (K for x·wᵀ, N for x·w) is a multiple of 32: all eight in or none.
      if (e == NONE || k0 + k >= K || n0 + n >= N) {
#pragma unroll
        for (int c = 0; c < 8; ++c) dst[c * stride] = from_float<T>(0.f);
      } else if (KIND == PACKED_T) {
        right.packed8(e * N + n0 + n, k0 + k, K, dst, stride);
      } else {
        right.packed8(e * K + k0 + k, n0 + n, N, dst, stride);
      }
    }
    return;
  }
  for (int i = threadIdx.x; i < BK * BN; i += THREADS) {
    const int k = i / BN, n = i % BN;
    const bool in = e != NONE && k0 + k < K && n0 + n < N;
    bs[n * LD + k] = from_float<T>(in ? right.value(e, k0 + k, n0 + n) : 0.f);
  }
}

// Tile row and column of accumulator j of this thread (see the header).
template <typename T, int BM>
__device__ __forceinline__ void position(int j, int* row, int* col) {
  const int t = threadIdx.x;
  if constexpr (sizeof(T) == 4) {
    *row = t / 16 + 8 * (j / 4);
    *col = t % 16 + 16 * (j % 4);
  } else {
    constexpr int WM = BM >= 32 ? 2 : 1, WN = 4 / WM, RM = BM / WM, CN = BN / WN, NT = CN / 8;
    const int warp = t / 32, lane = t % 32, g = lane >> 2, q = lane & 3;
    const int mt = j / (4 * NT), nt = (j / 4) % NT, c = j % 4;
    *row = (warp / WN) * RM + mt * 16 + g + 8 * (c >> 1);
    *col = (warp % WN) * CN + nt * 8 + 2 * q + (c & 1);
  }
}

// acc += as · bsᵀ over one BK step.
template <typename T, int BM>
__device__ __forceinline__ void multiply(const T* as, const T* bs, float* acc) {
  constexpr int LD = row_stride<T>();
  const int t = threadIdx.x;
  if constexpr (sizeof(T) == 4) {
    const int tr = t / 16, tc = t % 16;
    for (int k = 0; k < BK; ++k) {
      float bv[4];
      for (int j = 0; j < 4; ++j) bv[j] = to_float(bs[(tc + 16 * j) * LD + k]);
      for (int i = 0; i < BM / 8; ++i) {
        const float av = to_float(as[(tr + 8 * i) * LD + k]);
        for (int j = 0; j < 4; ++j) acc[i * 4 + j] += av * bv[j];
      }
    }
  } else {
    constexpr int WM = BM >= 32 ? 2 : 1, WN = 4 / WM, RM = BM / WM, CN = BN / WN;
    constexpr int MT = RM / 16, NT = CN / 8;
    const int warp = t / 32, lane = t % 32, g = lane >> 2, q = lane & 3;
    const T* arow = as + ((warp / WN) * RM + g) * LD + 2 * q;
    const T* brow = bs + ((warp % WN) * CN + g) * LD + 2 * q;
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned af[MT][4];
      for (int mt = 0; mt < MT; ++mt) {
        const T* p = arow + mt * 16 * LD + kk;
        af[mt][0] = nuvec::pair_at(p);
        af[mt][1] = nuvec::pair_at(p + 8 * LD);
        af[mt][2] = nuvec::pair_at(p + 8);
        af[mt][3] = nuvec::pair_at(p + 8 * LD + 8);
      }
      for (int nt = 0; nt < NT; ++nt) {
        const T* p = brow + nt * 8 * LD + kk;
        const unsigned bf[2] = {nuvec::pair_at(p), nuvec::pair_at(p + 8)};
        for (int mt = 0; mt < MT; ++mt) nuvec::mma16816<T>(acc + (mt * NT + nt) * 4, af[mt], bf);
      }
    }
  }
}

// One BM × BN output tile: rows from `rows`, columns n0 .. n0 + BN of matrix `e`.
template <typename T, int BM, int KIND>
__device__ __forceinline__ void tile(const T* a, const Right<T, KIND>& right, Rows rows,
                                     unsigned e, unsigned n0, bool vec_a, bool vec_b, T* out,
                                     T* as, T* bs) {
  constexpr int ACC = BM * BN / THREADS;
  float acc[ACC];
  for (int j = 0; j < ACC; ++j) acc[j] = 0.f;
  for (unsigned k0 = 0; k0 < right.K; k0 += BK) {
    stage_a<T, BM>(a, rows, k0, right.K, vec_a, as);
    stage_b<T, KIND>(right, e, k0, n0, vec_b, bs);
    __syncthreads();
    multiply<T, BM>(as, bs, acc);
    __syncthreads();
  }
  for (int j = 0; j < ACC; ++j) {
    int row, col;
    position<T, BM>(j, &row, &col);
    if (rows.out[row] != NONE && n0 + col < right.N)
      out[rows.out[row] + n0 + col] = from_float<T>(acc[j]);
  }
}

// Row `r` (one row of `a`, matrix `e`), columns n0 .. n0 + BN, one thread per column: the
// rows of a segment whose index is not the segment's.
template <typename T, int KIND>
__device__ __forceinline__ void lone_row(const T* a, const Right<T, KIND>& right, unsigned arow,
                                         unsigned e, unsigned n0, T* out) {
  const unsigned n = n0 + threadIdx.x;
  if (threadIdx.x >= BN || n >= right.N) return;
  float s = 0.f;
  if (arow != NONE && e != NONE)
    for (unsigned k = 0; k < right.K; ++k) s += to_float(a[arow + k]) * right.value(e, k, n);
  out[n] = from_float<T>(s);
}

// Warp 0 finds row tile `t` among the segments' tiles of BM rows: seg = {matrix, first row,
// end}, matrix -1 past the last tile.
template <int BM>
__device__ __forceinline__ void find_tile(const int* offsets, unsigned rows, unsigned experts,
                                          unsigned t, int* seg) {
  const unsigned lane = threadIdx.x;
  bool found = false;
  unsigned base = 0;
  for (unsigned e0 = 0; e0 < experts && base <= t; e0 += 32) {
    const unsigned e = e0 + lane;
    unsigned start = 0, end = 0;
    if (e < experts) {
      start = min(static_cast<unsigned>(max(offsets[e], 0)), rows);
      end = e + 1 < experts ? min(static_cast<unsigned>(max(offsets[e + 1], 0)), rows) : rows;
      end = max(end, start);
    }
    const unsigned count = (end - start + BM - 1) / BM;
    unsigned inclusive = count;
    for (unsigned o = 1; o < 32; o <<= 1) {
      const unsigned v = __shfl_up_sync(nuvec::FULL, inclusive, o);
      if (lane >= o) inclusive += v;
    }
    if (t >= base + inclusive - count && t < base + inclusive) {
      found = true;
      seg[0] = static_cast<int>(e);
      seg[1] = static_cast<int>(start + (t - base - (inclusive - count)) * BM);
      seg[2] = static_cast<int>(end);
    }
    base += __shfl_sync(nuvec::FULL, inclusive, 31);
  }
  if (__ballot_sync(nuvec::FULL, found) == 0 && lane == 0) seg[0] = -1;
}

}  // namespace gmm

// Sorted one-row products as a grouped GEMM over each matrix's segment (see the header).
template <typename T, int BM, int KIND>
__global__ void __launch_bounds__(128, 4)
gather_segments(const T* __restrict__ a, const void* __restrict__ b,
                const T* __restrict__ scales, const T* __restrict__ biases,
                const unsigned* __restrict__ lhs, const unsigned* __restrict__ rhs,
                const int* __restrict__ offsets, T* __restrict__ out, unsigned rows,
                unsigned experts, unsigned a_count, unsigned K, unsigned N, unsigned bits,
                unsigned group, int vec_a, int vec_b) {
  using namespace gmm;
  extern __shared__ __align__(16) unsigned char smem[];
  const Shared<T, BM> sh(smem);
  unsigned* lone = sh.orows + BM;
  int* seg = reinterpret_cast<int*>(lone + BM);
  if (threadIdx.x < 32) find_tile<BM>(offsets, rows, experts, blockIdx.x, seg);
  if (threadIdx.x == 32) seg[3] = 0;
  __syncthreads();
  const int e = seg[0];
  if (e < 0) return;
  const unsigned n0 = blockIdx.y * BN;
  if (threadIdx.x < BM) {
    const unsigned r = seg[1] + threadIdx.x, l = r < static_cast<unsigned>(seg[2]) ? lhs[r] : 0;
    sh.arows[threadIdx.x] = sh.orows[threadIdx.x] = NONE;
    if (r < static_cast<unsigned>(seg[2]) && rhs[r] == static_cast<unsigned>(e)) {
      sh.arows[threadIdx.x] = l < a_count ? l * K : NONE;
      sh.orows[threadIdx.x] = r * N;
    } else if (r < static_cast<unsigned>(seg[2])) {
      lone[atomicAdd(&seg[3], 1)] = r;
    }
  }
  __syncthreads();
  const Right<T, KIND> right{b, scales, biases, K, N, bits, group};
  tile<T, BM, KIND>(a, right, Rows{sh.arows, sh.orows}, e, n0, vec_a, vec_b, out, sh.as, sh.bs);
  for (int i = 0; i < seg[3]; ++i) {
    const unsigned r = lone[i], l = lhs[r], m = rhs[r];
    lone_row<T, KIND>(a, right, l < a_count ? l * K : NONE, m < experts ? m : NONE, n0,
                      out + r * N);
  }
}

// out[i] = a[lhs[i]] · B[rhs[i]] for every i, one BM-row tile of one product per block.
template <typename T, int BM, int KIND>
__global__ void __launch_bounds__(128, 4)
gather_batched(const T* __restrict__ a, const void* __restrict__ b,
               const T* __restrict__ scales, const T* __restrict__ biases,
               const unsigned* __restrict__ lhs, const unsigned* __restrict__ rhs,
               T* __restrict__ out, unsigned M, unsigned K, unsigned N, unsigned a_count,
               unsigned b_count, unsigned bits, unsigned group, int vec_a, int vec_b) {
  using namespace gmm;
  extern __shared__ __align__(16) unsigned char smem[];
  const Shared<T, BM> sh(smem);
  const unsigned tiles = (M + BM - 1) / BM, i = blockIdx.x / tiles;
  const unsigned m0 = (blockIdx.x % tiles) * BM, n0 = blockIdx.y * BN;
  const unsigned l = lhs[i], e = rhs[i] < b_count ? rhs[i] : NONE;
  if (threadIdx.x < BM) {
    const unsigned m = m0 + threadIdx.x;
    sh.arows[threadIdx.x] = m < M && l < a_count ? (l * M + m) * K : NONE;
    sh.orows[threadIdx.x] = m < M ? (i * M + m) * N : NONE;
  }
  __syncthreads();
  const Right<T, KIND> right{b, scales, biases, K, N, bits, group};
  tile<T, BM, KIND>(a, right, Rows{sh.arows, sh.orows}, e, n0, vec_a, vec_b, out, sh.as, sh.bs);
}
