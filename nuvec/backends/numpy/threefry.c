/* Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
 * SC 2011), the bits of `nuvec.random`: the same arithmetic as the NumPy body in
 * nuvec/backends/common/random.py, one counter pair at a time. */

#include <stdint.h>

static inline uint32_t rotl(uint32_t x, int d) { return (x << d) | (x >> (32 - d)); }

/* y0[i], y1[i]: the hash of the counters (x0[i], x1[i]) under the key (k0, k1). */
void nuvec_threefry2x32(int64_t n, uint32_t k0, uint32_t k1, const uint32_t *x0,
                        const uint32_t *x1, uint32_t *y0, uint32_t *y1) {
    const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
    static const int rotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        uint32_t a = x0[i] + ks[0], b = x1[i] + ks[1];
        for (int block = 0; block < 5; block++) {
            for (int j = 0; j < 4; j++) {
                a += b;
                b = rotl(b, rotations[block & 1][j]) ^ a;
            }
            /* key injection after every 4 rounds: the keys rotate, plus the injection count */
            a += ks[(block + 1) % 3];
            b += ks[(block + 2) % 3] + (uint32_t)(block + 1);
        }
        y0[i] = a;
        y1[i] = b;
    }
}
