/* Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
 * SC 2011), the bits of `nuvec.random`: the same arithmetic and the same counter layout as the
 * NumPy body in nuvec/backends/common/random.py, one counter pair at a time. */

#include <stdint.h>

static inline uint32_t rotl(uint32_t x, int d) { return (x << d) | (x >> (32 - d)); }

/* The hash of the counters (x0, x1) under the key (k0, k1), into *y0, *y1. */
static inline void hash2x32(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1, uint32_t *y0,
                            uint32_t *y1) {
    const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
    static const int rotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
    uint32_t a = x0 + ks[0], b = x1 + ks[1];
    for (int block = 0; block < 5; block++) {
        for (int j = 0; j < 4; j++) {
            a += b;
            b = rotl(b, rotations[block & 1][j]) ^ a;
        }
        /* key injection after every 4 rounds: the keys rotate, plus the injection count */
        a += ks[(block + 1) % 3];
        b += ks[(block + 2) % 3] + (uint32_t)(block + 1);
    }
    *y0 = a;
    *y1 = b;
}

/* The `words` uint32 words of each of the `n` keys (pairs at `keys`) into the rows of `out`
 * (`n` x `words`): of `half = ceil(words / 2)`, words i and i + half hash the counter pair
 * (i, i + half); of an odd count, the middle word i = half - 1 hashes (half - 1, 0). */
void nuvec_random_words(int64_t n, const uint32_t *keys, int64_t words, uint32_t *out) {
    const int64_t half = (words + 1) / 2, pairs = words - half;
    for (int64_t k = 0; k < n; k++) {
        const uint32_t k0 = keys[2 * k], k1 = keys[2 * k + 1];
        uint32_t *row = out + k * words;
#pragma omp simd
        for (int64_t i = 0; i < pairs; i++) {
            uint32_t a, b;
            hash2x32(k0, k1, (uint32_t)i, (uint32_t)(half + i), &a, &b);
            row[i] = a;
            row[half + i] = b;
        }
        if (pairs < half) {
            uint32_t a, b;
            hash2x32(k0, k1, (uint32_t)(half - 1), 0u, &a, &b);
            row[half - 1] = a;
        }
    }
}
