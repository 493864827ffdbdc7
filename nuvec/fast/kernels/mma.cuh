// Tensor-core helpers shared by the mma kernels (packed attention, gathered matmuls): the bits
// of the half types, pairs packed as the mma fragments hold them, and mma.sync m16n8k16 with a
// portable branch the kernel emulator runs (NUVEC_EMULATOR).
#pragma once
#include "common.cuh"

namespace nuvec {

// Which mma.sync type a half type takes.
template <typename T> struct MmaType;
template <> struct MmaType<__half> { static constexpr bool bf16 = false; };
template <> struct MmaType<__nv_bfloat16> { static constexpr bool bf16 = true; };

// The 16 bits of a half type.
template <typename T> __device__ __forceinline__ unsigned short bits_of(T x) {
#ifdef NUVEC_EMULATOR
  return x.bits;
#else
  if constexpr (MmaType<T>::bf16) return __bfloat16_as_ushort(x);
  else return __half_as_ushort(x);
#endif
}

#ifdef NUVEC_EMULATOR
// A half type's value from its 16 bits.
template <typename T> __device__ __forceinline__ float from_bits(unsigned short b) {
  T x;
  x.bits = b;
  return to_float(x);
}
#endif

// Two values as one 32-bit register, the lower index in the low half (the mma layout).
template <typename T> __device__ __forceinline__ unsigned pack2(float lo, float hi) {
  return (unsigned)bits_of(from_float<T>(lo)) | ((unsigned)bits_of(from_float<T>(hi)) << 16);
}
template <typename T> __device__ __forceinline__ unsigned pack2(T lo, T hi) {
  return (unsigned)bits_of(lo) | ((unsigned)bits_of(hi) << 16);
}
// p[0] and p[1] (p 4-byte aligned) as one register: one 32-bit load on the device.
template <typename T> __device__ __forceinline__ unsigned pair_at(const T* p) {
#ifdef NUVEC_EMULATOR
  return pack2<T>(p[0], p[1]);
#else
  return *reinterpret_cast<const unsigned*>(p);
#endif
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

}  // namespace nuvec
