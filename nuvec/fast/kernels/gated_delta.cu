// The gated delta rule: per step t and value head, S = S * g_t, S += k_t (beta_t (v_t -
// S k_t))^T, y_t = S q_t, with the state S [Dv, Dk] held in float32 registers for the whole
// pass over time (one read of the initial state, one write of the final one).
//
// Layout (C-contiguous): q and k [B, T, Hk, Dk] and v [B, T, Hv, Dv] of type T; g and beta
// [B, T, Hv] of any kernel float type (g_kind, beta_kind: 0 float, 1 __half, 2 bfloat16);
// y [B, T, Hv, Dv] of type T. Value head h reads key head h / (Hv / Hk). State (type S):
// - gated_delta<T, S, N>: state_in and state_out [B, Hv, Dv, Dk] (the final state);
// - gated_delta_steps<T, S, N>: state_in [B, Hv, Dv, Dk], state_out [B, T, Hv, Dv, Dk] (the
//   state after every step);
// - gated_delta_slots<T, S, N>: pool_in and pool_out [P, Hv, Dv, Dk], slots [B] int32:
//   sequence b reads pool_in[slots[b]] and writes pool_out[slots[b]] (pool_out is a copy of
//   pool_in made by the launcher). A negative slot counts from the end once; a slot outside
//   [-P, P) reads a zero state and writes nothing; of sequences sharing a slot the last one
//   writes (as the fallback's scatter).
// Every value is computed in float32 as the fallback graph does (y rounded to T, a stored state
// rounded to S); only the order of the sums over Dk differs.
//
// Launch: grid (ceil(Dv / ROWS_PER_BLOCK) * Hv * B), block WARPS * 32, no shared memory.
// Warp w of a block owns ROWS consecutive state rows (Dv indices); lane l holds elements
// l, l + 32, ... of each row (N >= Dk / 32 registers per row, so each load and store of the
// warp touches 32 consecutive elements). Bounds: every buffer under 2^32 elements; Dk a
// multiple of 32, at most 32 * N.
#include "common.cuh"

using namespace nuvec;

namespace {

constexpr int WARPS = 4;
constexpr int ROWS = 4;
constexpr int ROWS_PER_BLOCK = WARPS * ROWS;

enum Mode { FINAL = 0, STEPS = 1, SLOTS = 2 };

// Element i of a g or beta buffer of kind 0 (float), 1 (__half) or 2 (bfloat16).
__device__ __forceinline__ float load_gate(const void* p, unsigned i, int kind) {
  if (kind == 1) return to_float(static_cast<const __half*>(p)[i]);
  if (kind == 2) return to_float(static_cast<const __nv_bfloat16*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

// Lane `lane`'s elements lane + 32 j (j < n) of a Dk-vector, zeros past n.
template <typename X, int N>
__device__ __forceinline__ void load_lanes(float (&out)[N], const X* p, unsigned lane, int n) {
#pragma unroll
  for (int j = 0; j < N; ++j) out[j] = j < n ? to_float(p[j * 32 + lane]) : 0.f;
}

template <typename X, int N>
__device__ __forceinline__ void store_lanes(X* p, const float (&in)[N], unsigned lane, int n) {
#pragma unroll
  for (int j = 0; j < N; ++j)
    if (j < n) p[j * 32 + lane] = from_float<X>(in[j]);
}

// Which pool entry sequence `seq` uses (-1: none), and whether it writes it (no later
// sequence has the same slot). Warp-uniform.
__device__ __forceinline__ int pool_slot(const int* slots, unsigned seq, unsigned batch,
                                         unsigned pool, unsigned lane, bool* writes) {
  int s = slots[seq];
  if (s < 0) s += (int)pool;
  if (s < 0 || s >= (int)pool) {
    *writes = false;
    return -1;
  }
  bool later = false;
  for (unsigned o = seq + 1 + lane; o < batch; o += 32) {
    int t = slots[o];
    if (t < 0) t += (int)pool;
    later |= t == s;
  }
  *writes = !__any_sync(FULL, later);
  return s;
}

// The rule for the ROWS state rows of this warp, over every step.
template <typename T, typename S, int N, int MODE>
__device__ __forceinline__ void delta_rows(
    const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
    const void* __restrict__ g, const void* __restrict__ beta, const S* __restrict__ state_in,
    T* __restrict__ y, S* __restrict__ state_out, const int* __restrict__ slots,
    unsigned batch, unsigned steps, unsigned hk, unsigned hv, unsigned dv, unsigned dk,
    int g_kind, int beta_kind, unsigned pool) {
  unsigned tiles = (dv + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;
  unsigned tile = blockIdx.x % tiles, head = blockIdx.x / tiles % hv;
  unsigned seq = blockIdx.x / tiles / hv;
  unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  unsigned row0 = tile * ROWS_PER_BLOCK + warp * ROWS;
  if (row0 >= dv) return;  // the whole warp: no collective follows for it
  int n = (int)(dk / 32);
  unsigned khead = head / (hv / hk);
  // Where this sequence's state lives in state_in and in state_out.
  unsigned in_at = seq, out_at = seq;
  bool reads = true, writes = true;
  if (MODE == SLOTS) {
    int s = pool_slot(slots, seq, batch, pool, lane, &writes);
    reads = s >= 0;
    in_at = out_at = reads ? (unsigned)s : 0u;
  }
  float st[ROWS][N];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    unsigned row = row0 + r;
    const S* src = state_in + ((in_at * hv + head) * dv + row) * dk;
    if (reads && row < dv) {
      load_lanes<S, N>(st[r], src, lane, n);
    } else {
#pragma unroll
      for (int j = 0; j < N; ++j) st[r][j] = 0.f;
    }
  }
  for (unsigned t = 0; t < steps; ++t) {
    unsigned gate = (seq * steps + t) * hv + head;  // [B, T, Hv]
    unsigned key = ((seq * steps + t) * hk + khead) * dk;
    float kk[N], qq[N];
    load_lanes<T, N>(kk, k + key, lane, n);
    load_lanes<T, N>(qq, q + key, lane, n);
    float decay = load_gate(g, gate, g_kind), strength = load_gate(beta, gate, beta_kind);
    float mem[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      mem[r] = 0.f;
#pragma unroll
      for (int j = 0; j < N; ++j) {
        st[r][j] *= decay;
        mem[r] += st[r][j] * kk[j];
      }
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) mem[r] = warp_sum(mem[r]);
    float out[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      unsigned row = min(row0 + r, dv - 1);
      float delta = (to_float(v[gate * dv + row]) - mem[r]) * strength;
      out[r] = 0.f;
#pragma unroll
      for (int j = 0; j < N; ++j) {
        st[r][j] += kk[j] * delta;
        out[r] += st[r][j] * qq[j];
      }
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) out[r] = warp_sum(out[r]);
    S* step_state = state_out + (gate * dv + row0) * dk;  // [B, T, Hv, Dv, Dk] for STEPS
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      if (row0 + r >= dv) continue;
      if (lane == r) y[gate * dv + row0 + r] = from_float<T>(out[r]);
      if (MODE == STEPS) store_lanes<S, N>(step_state + r * dk, st[r], lane, n);
    }
  }
  if (MODE == STEPS || !writes) return;
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    unsigned row = row0 + r;
    if (row < dv)
      store_lanes<S, N>(state_out + ((out_at * hv + head) * dv + row) * dk, st[r], lane, n);
  }
}

}  // namespace

template <typename T, typename S, int N>
__global__ void __launch_bounds__(WARPS * 32) gated_delta(
    const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
    const void* __restrict__ g, const void* __restrict__ beta, const S* __restrict__ state_in,
    T* __restrict__ y, S* __restrict__ state_out, unsigned batch, unsigned steps, unsigned hk,
    unsigned hv, unsigned dv, unsigned dk, int g_kind, int beta_kind) {
  delta_rows<T, S, N, FINAL>(q, k, v, g, beta, state_in, y, state_out, nullptr, batch, steps,
                             hk, hv, dv, dk, g_kind, beta_kind, 0u);
}

template <typename T, typename S, int N>
__global__ void __launch_bounds__(WARPS * 32) gated_delta_steps(
    const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
    const void* __restrict__ g, const void* __restrict__ beta, const S* __restrict__ state_in,
    T* __restrict__ y, S* __restrict__ states, unsigned batch, unsigned steps, unsigned hk,
    unsigned hv, unsigned dv, unsigned dk, int g_kind, int beta_kind) {
  delta_rows<T, S, N, STEPS>(q, k, v, g, beta, state_in, y, states, nullptr, batch, steps, hk,
                             hv, dv, dk, g_kind, beta_kind, 0u);
}

template <typename T, typename S, int N>
__global__ void __launch_bounds__(WARPS * 32) gated_delta_slots(
    const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
    const void* __restrict__ g, const void* __restrict__ beta, const S* __restrict__ pool_in,
    T* __restrict__ y, S* __restrict__ pool_out, const int* __restrict__ slots, unsigned batch,
    unsigned steps, unsigned hk, unsigned hv, unsigned dv, unsigned dk, int g_kind,
    int beta_kind, unsigned pool) {
  delta_rows<T, S, N, SLOTS>(q, k, v, g, beta, pool_in, y, pool_out, slots, batch, steps, hk,
                             hv, dv, dk, g_kind, beta_kind, pool);
}
