// What the tiled (FlashAttention-2) kernels share (packed_attention.cu, attention_tiled.cu):
// the 16-bit bits of the half types, packing two values into one mma register, the tensor-core
// product mma.sync m16n8k16 (inline PTX, with a portable branch the emulator runs) and the
// fragment loads from shared tiles.
#pragma once
#include "common.cuh"

namespace nuvec {
namespace flash {

// The 16 bits of a half type (both are two bytes of storage), and back.
template <typename T> __device__ __forceinline__ unsigned short bits_of(T x) {
  static_assert(sizeof(T) == 2, "a half type");
  return *reinterpret_cast<const unsigned short*>(&x);
}
#ifdef NUVEC_EMULATOR
template <typename T> __device__ __forceinline__ float from_bits(unsigned short b) {
  T x;
  x.bits = b;
  return to_float(x);
}
#endif

// Which mma.sync type a half type takes.
template <typename T> struct MmaType;
template <> struct MmaType<__half> { static constexpr bool bf16 = false; };
template <> struct MmaType<__nv_bfloat16> { static constexpr bool bf16 = true; };

// Two values as one 32-bit register, the lower index in the low half (the mma layout).
template <typename T> __device__ __forceinline__ unsigned pack2(float lo, float hi) {
  return (unsigned)bits_of(from_float<T>(lo)) | ((unsigned)bits_of(from_float<T>(hi)) << 16);
}
template <typename T> __device__ __forceinline__ unsigned pack2(T lo, T hi) {
  return (unsigned)bits_of(lo) | ((unsigned)bits_of(hi) << 16);
}

// c += A·B for one warp, m16n8k16, A row-major 16×16 and B 16×8 (column) in half type T,
// float accumulators; lane l = 4g + q holds a = {A[g][2q..], A[g+8][2q..], A[g][2q+8..],
// A[g+8][2q+8..]}, b = {B[2q..][g], B[2q+8..][g]}, c = {C[g][2q], C[g][2q+1], C[g+8][2q],
// C[g+8][2q+1]}.
template <typename T>
__device__ __forceinline__ void mma16816(float c[4], const unsigned a[4], const unsigned b[2]) {
#ifdef NUVEC_EMULATOR
  // The portable branch: each element fetched from the lane that holds it.
  const int lane = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31;
  const int g = lane >> 2, q = lane & 3;
  for (int k = 0; k < 16; ++k) {
    const int hi = k >= 8, at = (k & 7) >> 1, shift = (k & 1) * 16;
    const unsigned top = __shfl_sync(0xffffffffu, a[hi * 2], g * 4 + at);
    const unsigned low = __shfl_sync(0xffffffffu, a[hi * 2 + 1], g * 4 + at);
    const unsigned b0 = __shfl_sync(0xffffffffu, b[hi], (2 * q) * 4 + at);
    const unsigned b1 = __shfl_sync(0xffffffffu, b[hi], (2 * q + 1) * 4 + at);
    const float x0 = from_bits<T>((unsigned short)(top >> shift));
    const float x1 = from_bits<T>((unsigned short)(low >> shift));
    const float y0 = from_bits<T>((unsigned short)(b0 >> shift));
    const float y1 = from_bits<T>((unsigned short)(b1 >> shift));
    c[0] += x0 * y0;
    c[1] += x0 * y1;
    c[2] += x1 * y0;
    c[3] += x1 * y1;
  }
#else
  if constexpr (MmaType<T>::bf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#endif
}

// Fragment loads from shared tiles of row stride `ld` (lane = 4g + q): the A operand of a
// row-major tile at `p` (A[m][k] = p[m·ld + k]) or of a transposed one (A[m][k] = p[k·ld + m]),
// the B operand with B[k][n] = p[n·ld + k] (`nk`) or B[k][n] = p[k·ld + n] (`kn`).
template <typename T>
__device__ __forceinline__ void load_a(unsigned a[4], const T* p, int ld, int g, int q) {
  const T* r = p + g * ld + 2 * q;
  a[0] = pack2<T>(r[0], r[1]);
  a[1] = pack2<T>(r[8 * ld], r[8 * ld + 1]);
  a[2] = pack2<T>(r[8], r[9]);
  a[3] = pack2<T>(r[8 * ld + 8], r[8 * ld + 9]);
}
template <typename T>
__device__ __forceinline__ void load_a_t(unsigned a[4], const T* p, int ld, int g, int q) {
  const T* r = p + 2 * q * ld + g;
  a[0] = pack2<T>(r[0], r[ld]);
  a[1] = pack2<T>(r[8], r[ld + 8]);
  a[2] = pack2<T>(r[8 * ld], r[9 * ld]);
  a[3] = pack2<T>(r[8 * ld + 8], r[9 * ld + 8]);
}
template <typename T>
__device__ __forceinline__ void load_b_nk(unsigned b[2], const T* p, int ld, int g, int q) {
  const T* r = p + g * ld + 2 * q;
  b[0] = pack2<T>(r[0], r[1]);
  b[1] = pack2<T>(r[8], r[9]);
}
template <typename T>
__device__ __forceinline__ void load_b_kn(unsigned b[2], const T* p, int ld, int g, int q) {
  const T* r = p + 2 * q * ld + g;
  b[0] = pack2<T>(r[0], r[ld]);
  b[1] = pack2<T>(r[8 * ld], r[9 * ld]);
}
// The accumulators of two 16×8 blocks (columns 0..7 and 8..15) as one 16×16 A operand.
template <typename T>
__device__ __forceinline__ void acc_to_a(unsigned a[4], const float c0[4], const float c1[4]) {
  a[0] = pack2<T>(c0[0], c0[1]);
  a[1] = pack2<T>(c0[2], c0[3]);
  a[2] = pack2<T>(c1[0], c1[1]);
  a[3] = pack2<T>(c1[2], c1[3]);
}

}  // namespace flash
}  // namespace nuvec
