/* `quantized_matmul` of a few rows against 4- or 8-bit weights in float32, without dequantizing
 * them: out = x @ (scales * codes + biases)ᵀ, the codes read from their packed bytes (MLX's
 * layout: code i of a weight row at bits [i*bits, (i+1)*bits) of its little-endian words) and
 * widened to floats in registers, 16 at a time. For `nuvec.backends.numpy.quantized`:
 * decoding (one row of x a step) reads each weight byte once, where dequantizing first wrote
 * four (or eight) bytes a code and read them back.
 *
 * Built on first use by `nuvec.backends.native` for the machine it runs on. Its loops are
 * AVX-512's: elsewhere `nuvec_qmv_width` returns 0 and the caller dequantizes.
 *
 * Per weight row and group: each row of x's products with the group's codes, lane by lane,
 * times the group's scale, added to that row's vector; the biases' part is the group's scale-
 * free sum of x (taken once a call) times the bias. One vector sum across lanes per output.
 * Each output's sums run in one order whatever the thread that computes it.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#define WIDTH 16
#else
#define WIDTH 0
#endif

#define XROWS 8 /* rows of x a pass over the weights serves (their sums in registers) */

/* 16 lanes, or 0 where this machine has no AVX-512 (nothing else is defined then) */
int64_t nuvec_qmv_width(void) { return WIDTH; }

#if WIDTH

/* Weight row `wn` (its `groups` scales `sn` and biases `bn`) against R rows of x (`xs` in the
 * codes' lane order, their group sums `sums`, both rows apart by k and groups) into out[r][0]
 * (rows `ldo` apart); R is a constant where it is inlined, so each row's two alternating sums
 * (one a step, halving the chain of dependent additions) stay in registers. */
static inline __attribute__((always_inline)) void qmv_row(
    const int R, int64_t k, int64_t bits, int64_t group, int64_t groups, const float *xs,
    const float *sums, const uint8_t *wn, const float *sn, const float *bn, float *out,
    int64_t ldo) {
    const __m512i low = _mm512_set1_epi32(15);
    __m512 acc[XROWS][2];
    float extra[XROWS];
    for (int r = 0; r < R; r++) {
        acc[r][0] = acc[r][1] = _mm512_setzero_ps();
        extra[r] = 0.0f;
    }
    int64_t step = 0;
    for (int64_t g = 0; g < groups; g++) {
        __m512 s = _mm512_set1_ps(sn[g]);
        for (int64_t c = g * group; c < (g + 1) * group; c += 32, step++) {
            __m512 a, b;  /* codes c..c+31 in the lanes' order of `xs` */
            if (bits == 4) {
                __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(wn + c / 2)));
                a = _mm512_cvtepi32_ps(_mm512_and_si512(v, low));
                b = _mm512_cvtepi32_ps(_mm512_srli_epi32(v, 4));
            } else {
                a = _mm512_cvtepi32_ps(
                    _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(wn + c))));
                b = _mm512_cvtepi32_ps(
                    _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(wn + c + 16))));
            }
            for (int r = 0; r < R; r++) {
                const float *xr = xs + r * k + c;
                __m512 t = _mm512_mul_ps(a, _mm512_loadu_ps(xr));
                t = _mm512_fmadd_ps(b, _mm512_loadu_ps(xr + 16), t);
                acc[r][step & 1] = _mm512_fmadd_ps(t, s, acc[r][step & 1]);
            }
        }
        for (int r = 0; r < R; r++)
            extra[r] = __builtin_fmaf(bn[g], sums[r * groups + g], extra[r]);
    }
    for (int r = 0; r < R; r++)
        out[r * ldo] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r][0], acc[r][1])) + extra[r];
}

/* Rows n0..n1 of out[m][ldo] = x[m][k] @ (scales * codes + biases)ᵀ for `bits` 4 or 8 and
 * groups of `group` codes (a multiple of 32); `w` holds a weight row's k * bits / 8 bytes one
 * row after another, `scales` and `biases` its k / group values. Returns 0, or -1 where its
 * scratch could not be allocated. */
int nuvec_qmv_f32(int64_t m, int64_t k, int64_t bits, int64_t group, const float *x,
                  const uint8_t *w, const float *scales, const float *biases, int64_t n0,
                  int64_t n1, float *out, int64_t ldo) {
    int64_t groups = k / group, row_bytes = k * bits / 8;
    /* x's rows in the order of the codes' lanes (4-bit: each 32 codes as their 16 even codes,
     * then their 16 odd ones, as a byte's low and high halves hold them), and group sums */
    float *xs = aligned_alloc(64, (size_t)((m * k + m * groups + 15) / 16 * 16) * sizeof(float));
    if (xs == NULL) return -1;
    float *sums = xs + m * k;
    for (int64_t r = 0; r < m; r++) {
        const float *xr = x + r * k;
        float *xo = xs + r * k;
        for (int64_t c = 0; c < k; c += 32)
            for (int j = 0; j < 16; j++) {
                xo[c + j] = bits == 4 ? xr[c + 2 * j] : xr[c + j];
                xo[c + 16 + j] = bits == 4 ? xr[c + 2 * j + 1] : xr[c + 16 + j];
            }
        for (int64_t g = 0; g < groups; g++) {
            float t = 0.0f;
            for (int64_t c = g * group; c < (g + 1) * group; c++) t += xr[c];
            sums[r * groups + g] = t;
        }
    }
    for (int64_t r0 = 0; r0 < m; r0 += XROWS) {
        int64_t rows = m - r0 < XROWS ? m - r0 : XROWS;
        const float *xr = xs + r0 * k, *sr = sums + r0 * groups;
        for (int64_t n = n0; n < n1; n++) {
            const uint8_t *wn = w + n * row_bytes;
            const float *sn = scales + n * groups, *bn = biases + n * groups;
            float *on = out + r0 * ldo + n;
            switch (rows) {  /* (a constant R for each) */
#define ROWS_CASE(R) \
    case R: qmv_row(R, k, bits, group, groups, xr, sr, wn, sn, bn, on, ldo); break;
                ROWS_CASE(1) ROWS_CASE(2) ROWS_CASE(3) ROWS_CASE(4)
                ROWS_CASE(5) ROWS_CASE(6) ROWS_CASE(7) ROWS_CASE(8)
#undef ROWS_CASE
            }
        }
    }
    free(xs);
    return 0;
}

#endif
