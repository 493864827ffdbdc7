// Writes tokens into a paged KV cache.
//
// Layout: out is the C-contiguous cache [blocks, Hkv, block_size, D], already a copy of the
// input cache; fresh is [T, Hkv, D]; slots is int32 [T]. Token t goes to block
// slots[t] / block_size, row slots[t] % block_size; slots outside [0, blocks * block_size) are
// dropped. Launch: one thread per element of fresh, grid = ceil(T * Hkv * D / blockDim.x).
// Bounds: every element count < 2^32 (32-bit offsets).
#include "common.cuh"

template <typename T>
__global__ void __launch_bounds__(256) paged_write(T* __restrict__ out,
                                                   const T* __restrict__ fresh,
                                                   const int* __restrict__ slots,
                                                   unsigned total, unsigned heads, unsigned d,
                                                   unsigned block_size, unsigned capacity) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int slot = slots[i / (heads * d)];
  if (slot < 0 || (unsigned)slot >= capacity) return;
  const unsigned h = (i / d) % heads, e = i % d;
  const unsigned blk = (unsigned)slot / block_size, row = (unsigned)slot % block_size;
  out[((blk * heads + h) * block_size + row) * d + e] = fresh[i];
}
