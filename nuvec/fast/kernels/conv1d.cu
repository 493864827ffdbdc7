// Depthwise 1-D convolution: one filter per channel.
//
// Layout: x is C-contiguous [N, L, C], w is [C, K] (the op's [C, K, 1]), y is [N, L_out, C];
// y[b, o, c] = sum_k x[b, o * stride - padding + k * dilation, c] * w[c, k] (positions outside
// [0, L) are zero padding), summed in float. Launch: one thread per output element, channels
// fastest (coalesced), grid = ceil(N * L_out * C / blockDim.x).
// Bounds: every element count < 2^32 (32-bit offsets).
#include "common.cuh"

using namespace nuvec;

template <typename T>
__global__ void __launch_bounds__(256) depthwise_conv1d(const T* __restrict__ x,
                                                        const T* __restrict__ w,
                                                        T* __restrict__ y, unsigned total,
                                                        unsigned length, unsigned channels,
                                                        unsigned taps, unsigned out_length,
                                                        int stride, int padding, int dilation) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const unsigned c = i % channels, o = (i / channels) % out_length;
  const unsigned b = i / (channels * out_length);
  const int start = (int)o * stride - padding;
  float acc = 0.f;
  for (unsigned k = 0; k < taps; ++k) {
    int pos = start + (int)k * dilation;
    if (pos >= 0 && (unsigned)pos < length)
      acc += to_float(x[(b * length + (unsigned)pos) * channels + c]) * to_float(w[c * taps + k]);
  }
  y[i] = from_float<T>(acc);
}
