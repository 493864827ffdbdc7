// The mma.sync fragments of the tiled attention kernels (attention_tiled.cu): loads of the A
// and B operands from shared tiles, accumulators turned into A operands (mma.cuh holds the
// product itself and the packing).
#pragma once
#include "mma.cuh"

namespace nuvec {
namespace flash {

using nuvec::pack2;

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
