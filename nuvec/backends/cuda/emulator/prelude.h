// The kernel emulator's prelude: enough of CUDA C to compile nuvec's kernels with a host C++
// compiler and run them on the CPU. See docs/dev/kernel_emulator.md.
//
// Each CUDA thread is a fiber (ucontext). The threads of one block run in one OS thread; the
// scheduler picks a random runnable fiber (seeded), which runs until it reaches a barrier, a
// warp collective or its end. So the interleaving between two synchronisation points is random
// and a missing __syncthreads() changes results. Blocks run one after another.
#pragma once
#define NUVEC_EMULATOR 1

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>
#include <ucontext.h>

#if defined(__SANITIZE_THREAD__)
extern "C" {
void* __tsan_get_current_fiber(void);
void* __tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void* fiber);
void __tsan_switch_to_fiber(void* fiber, unsigned flags);
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
void AnnotateIgnoreReadsBegin(const char* f, int l);
void AnnotateIgnoreReadsEnd(const char* f, int l);
void AnnotateIgnoreWritesBegin(const char* f, int l);
void AnnotateIgnoreWritesEnd(const char* f, int l);
}
#define NUVEC_EMU_IGNORE_BEGIN() \
  (AnnotateIgnoreReadsBegin(__FILE__, __LINE__), AnnotateIgnoreWritesBegin(__FILE__, __LINE__))
#define NUVEC_EMU_IGNORE_END() \
  (AnnotateIgnoreWritesEnd(__FILE__, __LINE__), AnnotateIgnoreReadsEnd(__FILE__, __LINE__))
#define NUVEC_EMU_RELEASE(p) __tsan_release((void*)(p))
#define NUVEC_EMU_ACQUIRE(p) __tsan_acquire((void*)(p))
#else
#define NUVEC_EMU_IGNORE_BEGIN() ((void)0)
#define NUVEC_EMU_IGNORE_END() ((void)0)
#define NUVEC_EMU_RELEASE(p) ((void)0)
#define NUVEC_EMU_ACQUIRE(p) ((void)0)
#endif

#if defined(__SANITIZE_ADDRESS__)
extern "C" {
void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, size_t size);
void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old,
                                     size_t* size_old);
}
#endif

// ---- CUDA keywords ---------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
// `__shared__ T name[N];` is rewritten by the emulator's builder into a `Shared<T[N]>` holder
// (see nuvec_emu::Shared); this definition covers the forms it does not rewrite.
#define __shared__ static
#define __constant__ static
#define warpSize 32

struct uint3 { unsigned x, y, z; };
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct float2 { float x, y; };
struct __attribute__((aligned(16))) float4 { float x, y, z, w; };
struct int2 { int x, y; };
struct __attribute__((aligned(16))) int4 { int x, y, z, w; };
struct uint2 { unsigned x, y; };
struct __attribute__((aligned(16))) uint4 { unsigned x, y, z, w; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

// ---- half and bfloat16 storage types ------------------------------------------------------
struct __half {
  uint16_t bits;
  __half() = default;
  __half(float f) { _Float16 h = (_Float16)f; std::memcpy(&bits, &h, 2); }
  operator float() const { _Float16 h; std::memcpy(&h, &bits, 2); return (float)h; }
};
struct __nv_bfloat16 {
  uint16_t bits;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) {
    uint32_t u; std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) { bits = (uint16_t)((u >> 16) | 0x40u); return; }
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
    bits = (uint16_t)(u >> 16);
  }
  operator float() const { uint32_t u = (uint32_t)bits << 16; float f; std::memcpy(&f, &u, 4); return f; }
};
typedef __half half;
typedef __nv_bfloat16 nv_bfloat16;
inline float __half2float(__half h) { return (float)h; }
inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __bfloat162float(__nv_bfloat16 h) { return (float)h; }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }

// ---- math intrinsics ----------------------------------------------------------------------
using std::isfinite;
using std::isinf;
using std::isnan;
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline void sincosf(float x, float* s, float* c) { *s = std::sin(x); *c = std::cos(x); }
inline void __sincosf(float x, float* s, float* c) { sincosf(x, s, c); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __saturatef(float x) { return x < 0.f ? 0.f : (x > 1.f ? 1.f : x); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
template <typename T> inline T __ldg(const T* p) { return *p; }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
[[noreturn]] inline void __trap() { std::abort(); }

// ---- atomics (compiler atomics, so ThreadSanitizer sees them as atomic) -------------------
template <typename T> inline T atomicAdd(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline float atomicAdd(float* p, float v) {
  float old, desired;
  __atomic_load(p, &old, __ATOMIC_SEQ_CST);
  do { desired = old + v; } while (!__atomic_compare_exchange(p, &old, &desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
  return old;
}
inline double atomicAdd(double* p, double v) {
  double old, desired;
  __atomic_load(p, &old, __ATOMIC_SEQ_CST);
  do { desired = old + v; } while (!__atomic_compare_exchange(p, &old, &desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
  return old;
}
template <typename T> inline T atomicSub(T* p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
template <typename T> inline T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
template <typename T> inline T atomicMax(T* p, T v) {
  T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
  return old;
}
template <typename T> inline T atomicMin(T* p, T v) {
  T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (old > v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
  return old;
}
template <typename T> inline T atomicCAS(T* p, T expected, T desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;
}

// ---- the fiber runtime ----------------------------------------------------------------------
namespace nuvec_emu {

enum State { kRunnable, kWaiting, kDone };

struct Fiber {
  ucontext_t ctx;
  uint3 tid;
  unsigned linear = 0;
  State state = kDone;
  const unsigned* wait_gen = nullptr;  // waiting until *wait_gen differs from wait_value
  unsigned wait_value = 0;
  std::vector<char> stack;
  void* tsan_fiber = nullptr;
  void* fake_stack = nullptr;
};

struct Warp {
  uint64_t slot[2][32];
  unsigned members[2] = {0, 0};             // the lanes that took part, per generation
  unsigned arrived = 0, gen = 0, live = 0;  // live: bit mask of lanes not yet finished
  unsigned need = 0;                        // lanes the pending collective waits for
};

struct Launch {
  uint3 block_idx{0, 0, 0}, block_dim{1, 1, 1}, grid_dim{1, 1, 1};
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  std::vector<unsigned> runnable;
  unsigned threads = 0;                     // threads per block
  unsigned live = 0, arrived = 0, gen = 0;  // the block barrier
  char barrier_sync[2], block_start, block_end;  // ThreadSanitizer sync objects
  ucontext_t scheduler;
  void* scheduler_tsan = nullptr;
  void (*entry)(void**) = nullptr;
  void** args = nullptr;
  uint64_t rng = 0;
  const void* scheduler_stack = nullptr;  // AddressSanitizer: the scheduler's stack
  size_t scheduler_stack_size = 0;
  const char* error = nullptr;
};

inline Launch state;
inline Fiber* current = nullptr;

inline uint64_t next_random() {
  uint64_t z = (state.rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Switches from the current fiber back to the scheduler (the fiber's state says why).
inline void to_scheduler() {
  NUVEC_EMU_IGNORE_BEGIN();
  Fiber* self = current;
#if defined(__SANITIZE_THREAD__)
  __tsan_switch_to_fiber(state.scheduler_tsan, 1);
#endif
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(self->state == kDone ? nullptr : &self->fake_stack,
                                 state.scheduler_stack, state.scheduler_stack_size);
#endif
  swapcontext(&self->ctx, &state.scheduler);
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(self->fake_stack, nullptr, nullptr);
#endif
  current = self;
  NUVEC_EMU_IGNORE_END();
}

inline void wake_waiters_of(const unsigned* gen) {
  for (unsigned i = 0; i < state.threads; ++i) {
    Fiber& f = state.fibers[i];
    if (f.state == kWaiting && f.wait_gen == gen) { f.state = kRunnable; state.runnable.push_back(i); }
  }
}

inline void wake_warp(Warp& w, unsigned warp_index) {
  for (unsigned lane = 0; lane < 32; ++lane) {
    unsigned i = warp_index * 32 + lane;
    if (i >= state.threads) break;
    Fiber& f = state.fibers[i];
    if (f.state == kWaiting && f.wait_gen == &w.gen) { f.state = kRunnable; state.runnable.push_back(i); }
  }
}

// Completes the block barrier or a warp collective when every live participant has arrived
// (a thread that finishes no longer counts).
inline void release_ready(unsigned warp_index) {
  if (state.arrived > 0 && state.arrived == state.live) {
    state.arrived = 0; state.gen++; wake_waiters_of(&state.gen);
  }
  Warp& w = state.warps[warp_index];
  if (w.arrived > 0 && w.arrived == (unsigned)__builtin_popcount(w.need & w.live)) {
    w.members[w.gen & 1] = w.need & w.live;
    w.arrived = 0; w.gen++; wake_warp(w, warp_index);
  }
}

inline void wait_on(const unsigned* gen) {
  current->state = kWaiting;
  current->wait_gen = gen;
  current->wait_value = *gen;
  to_scheduler();
}

// ThreadSanitizer: each arrival releases, each departure acquires, on a sync object per
// generation parity, so a barrier orders exactly the accesses before it and after it.
inline void syncthreads() {
  NUVEC_EMU_IGNORE_BEGIN();
  unsigned g = state.gen;
  NUVEC_EMU_IGNORE_END();
  NUVEC_EMU_RELEASE(&state.barrier_sync[g & 1]);
  NUVEC_EMU_IGNORE_BEGIN();
  state.arrived++;
  release_ready(current->linear / 32);
  if (state.gen == g) wait_on(&state.gen);
  NUVEC_EMU_IGNORE_END();
  NUVEC_EMU_ACQUIRE(&state.barrier_sync[g & 1]);
}

// One warp collective: lane posts `value`, waits for the lanes of `mask`, gets every slot
// (and, in `members`, the lanes that took part).
inline const uint64_t* warp_exchange(unsigned mask, uint64_t value, unsigned* members = nullptr) {
  unsigned wi = current->linear / 32, lane = current->linear % 32;
  Warp& w = state.warps[wi];
  NUVEC_EMU_IGNORE_BEGIN();
  unsigned g = w.gen;
  w.slot[g & 1][lane] = value;
  w.need = mask;
  w.arrived++;
  NUVEC_EMU_IGNORE_END();
  NUVEC_EMU_RELEASE(&w.members[g & 1]);
  NUVEC_EMU_IGNORE_BEGIN();
  release_ready(wi);
  if (w.gen == g) wait_on(&w.gen);
  NUVEC_EMU_IGNORE_END();
  NUVEC_EMU_ACQUIRE(&w.members[g & 1]);
  if (members) *members = w.members[g & 1];
  return w.slot[g & 1];
}

template <typename T> inline uint64_t pack(T v) {
  static_assert(sizeof(T) <= 8, "warp collectives move at most 8 bytes");
  uint64_t u = 0; std::memcpy(&u, &v, sizeof(T)); return u;
}
template <typename T> inline T unpack(uint64_t u) { T v; std::memcpy(&v, &u, sizeof(T)); return v; }
inline unsigned lane_id() { return current->linear % 32; }

template <typename T> inline T shfl(unsigned mask, T v, int src, int width) {
  unsigned lane = lane_id();
  const uint64_t* slots = warp_exchange(mask, pack(v));
  unsigned base = lane & ~(unsigned)(width - 1);
  return unpack<T>(slots[base + ((unsigned)src & (unsigned)(width - 1))]);
}

inline void fiber_main() {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(nullptr, &state.scheduler_stack, &state.scheduler_stack_size);
#endif
  NUVEC_EMU_ACQUIRE(&state.block_start);
  state.entry(state.args);
  NUVEC_EMU_RELEASE(&state.block_end);
  NUVEC_EMU_IGNORE_BEGIN();
  Fiber* self = current;
  self->state = kDone;
  unsigned wi = self->linear / 32;
  state.live--;
  state.warps[wi].live &= ~(1u << (self->linear % 32));
  release_ready(wi);
  NUVEC_EMU_IGNORE_END();
  to_scheduler();
}

}  // namespace nuvec_emu

#define threadIdx (nuvec_emu::current->tid)
#define blockIdx (nuvec_emu::state.block_idx)
#define blockDim (nuvec_emu::state.block_dim)
#define gridDim (nuvec_emu::state.grid_dim)

inline void __syncthreads() { nuvec_emu::syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { nuvec_emu::warp_exchange(mask, 0); }
template <typename T> inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return nuvec_emu::shfl(mask, v, src, width);
}
template <typename T> inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return nuvec_emu::shfl(mask, v, (int)(nuvec_emu::lane_id() % width) ^ lane_mask, width);
}
template <typename T> inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  int l = (int)(nuvec_emu::lane_id() % width) + (int)delta;
  return nuvec_emu::shfl(mask, v, l < width ? l : (int)(nuvec_emu::lane_id() % width), width);
}
template <typename T> inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  int l = (int)(nuvec_emu::lane_id() % width) - (int)delta;
  return nuvec_emu::shfl(mask, v, l >= 0 ? l : (int)(nuvec_emu::lane_id() % width), width);
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  unsigned members = 0;
  const uint64_t* slots = nuvec_emu::warp_exchange(mask, pred ? 1 : 0, &members);
  unsigned out = 0;
  for (unsigned l = 0; l < 32; ++l)
    if ((members >> l) & 1u) out |= (slots[l] ? 1u : 0u) << l;
  return out;
}
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) {
  unsigned members = 0;
  const uint64_t* slots = nuvec_emu::warp_exchange(mask, pred ? 1 : 0, &members);
  for (unsigned l = 0; l < 32; ++l)
    if (((members >> l) & 1u) && !slots[l]) return 0;
  return 1;
}
inline unsigned __activemask() { return nuvec_emu::state.warps[nuvec_emu::current->linear / 32].live; }

namespace nuvec_emu {

template <typename... A, std::size_t... I>
inline void invoke_impl(void (*f)(A...), void** args, std::index_sequence<I...>) {
  f(*static_cast<std::remove_reference_t<A>*>(args[I])...);
}
template <typename... A> inline void invoke(void (*f)(A...), void** args) {
  invoke_impl(f, args, std::index_sequence_for<A...>{});
}

inline void fill_garbage(unsigned char* p, size_t n) { std::memset(p, 0xff, n); }

// Static shared memory: one arena; each `__shared__` declaration takes a slot on first use and
// keeps it. The used part is filled with 0xff bytes (NaN as floats) before each block, so a
// block never sees an earlier block's data.
alignas(16) inline unsigned char shared_arena[228 * 1024];
inline size_t shared_used = 0;
template <typename T> struct Shared {
  T* p;
  Shared() {
    size_t at = (shared_used + 15) & ~size_t(15);
    if (at + sizeof(T) > sizeof(shared_arena)) { std::fprintf(stderr, "emulator: static shared memory past 228 KiB\n"); std::abort(); }
    shared_used = at + sizeof(T);
    p = reinterpret_cast<T*>(shared_arena + at);
    fill_garbage(shared_arena + at, sizeof(T));
  }
  T* get() { return p; }
};

// Runs one block: a fiber per thread, scheduled in random order until all finish.
inline int run_block(size_t stack_size) {
  unsigned n = state.block_dim.x * state.block_dim.y * state.block_dim.z;
  state.live = n; state.arrived = 0; state.runnable.clear();
  for (unsigned w = 0; w < state.warps.size(); ++w) {
    unsigned lanes = std::min(32u, n - w * 32);
    state.warps[w].live = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1);
    state.warps[w].arrived = 0;
  }
  NUVEC_EMU_RELEASE(&state.block_start);
  NUVEC_EMU_IGNORE_BEGIN();
  for (unsigned i = 0; i < n; ++i) {
    Fiber& f = state.fibers[i];
    f.linear = i;
    f.tid = {i % state.block_dim.x, (i / state.block_dim.x) % state.block_dim.y,
             i / (state.block_dim.x * state.block_dim.y)};
    if (f.stack.size() != stack_size) f.stack.assign(stack_size, 0);
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.data();
    f.ctx.uc_stack.ss_size = f.stack.size();
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, (void (*)())fiber_main, 0);
    f.state = kRunnable;
    state.runnable.push_back(i);
  }
  while (!state.runnable.empty()) {
    size_t k = next_random() % state.runnable.size();
    unsigned i = state.runnable[k];
    state.runnable[k] = state.runnable.back();
    state.runnable.pop_back();
    Fiber& f = state.fibers[i];
    current = &f;
#if defined(__SANITIZE_THREAD__)
    if (!f.tsan_fiber) f.tsan_fiber = __tsan_create_fiber(0);
    __tsan_switch_to_fiber(f.tsan_fiber, 1);
#endif
#if defined(__SANITIZE_ADDRESS__)
    void* fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, f.stack.data(), f.stack.size());
#endif
    swapcontext(&state.scheduler, &f.ctx);
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
    current = nullptr;
  }
  NUVEC_EMU_IGNORE_END();
  NUVEC_EMU_ACQUIRE(&state.block_end);
  for (unsigned i = 0; i < n; ++i)
    if (state.fibers[i].state != kDone) {
      state.error = "deadlock: a thread waits at a barrier or warp collective that the others never reach";
      return 1;
    }
  return 0;
}

}  // namespace nuvec_emu

namespace nuvec_emu {

// Runs `entry` over the whole grid, block after block (x fastest). Returns 0, or 1 with
// `state.error` set.
inline int launch(void (*entry)(void**), const unsigned* grid, const unsigned* block,
                  void** args, unsigned long long seed, size_t stack_size,
                  void (*before_block)()) {
  unsigned n = block[0] * block[1] * block[2];
  state.error = nullptr;
  if (n == 0 || n > 1024) { state.error = "a block has 1 to 1024 threads"; return 1; }
  state.grid_dim = {grid[0], grid[1], grid[2]};
  state.block_dim = {block[0], block[1], block[2]};
  if (state.fibers.size() < n) state.fibers.resize(n);
  state.threads = n;
  state.warps.assign((n + 31) / 32, Warp());
  state.entry = entry;
  state.args = args;
  state.rng = seed;
#if defined(__SANITIZE_THREAD__)
  state.scheduler_tsan = __tsan_get_current_fiber();
#endif
  for (unsigned z = 0; z < grid[2]; ++z)
    for (unsigned y = 0; y < grid[1]; ++y)
      for (unsigned x = 0; x < grid[0]; ++x) {
        state.block_idx = {x, y, z};
        fill_garbage(shared_arena, shared_used);
        before_block();
        if (run_block(stack_size)) return 1;
      }
  return 0;
}

}  // namespace nuvec_emu
