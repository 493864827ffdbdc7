/* float32 `exp`, `tanh` and `sigmoid` over contiguous arrays, for `nuvec.backends.vector_math`,
 * and `exp` over a chunk of attention scores with its causal mask and column sums.
 *
 * Built on first use by `nuvec.backends.native` with the system C compiler for the machine it
 * runs on (-O3 -march=native -fopenmp-simd), so that each loop is vectorized; no fast-math:
 * every operation rounds as written. `y` may be `x` itself (in place) or memory apart from it,
 * never a partial overlap (the caller checks). Each result depends on its argument alone.
 *
 * exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 (ln 2 in two parts, so r is
 * exact to float32), exp(r) = 1 + r + r^2 q(r) on |r| <= ln(2)/2 with q of degree 4 fitted
 * to a relative error under 4e-9. 2^n is applied as two factors 2^(n/2) 2^(n - n/2), so that
 * subnormal results are rounded once and n = 128 overflows to infinity. Arguments above 89 are
 * clamped to 89 (infinity either way) and arguments below -104 give 0 (what -104 gives) without
 * being computed: their steps would round to subnormals, which Intel cores finish in microcode
 * (a causal mask's -inf or finfo.min made an exp 4.6 times as slow). NaN passes through.
 *
 * tanh(x) = x + x^3 p(x^2) for |x| < 0.625 (p of degree 5, relative error under 3e-9), else
 * sign(x) (1 - 2 / (exp(2|x|) + 1)), the argument of `exp` capped at 88 (tanh is 1 there).
 */

#include <stdint.h>
#include <string.h>

static inline float from_bits(int32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static inline int32_t to_bits(float f) {
    int32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* exp(x) = 2^n exp(r): 1 / ln 2, and ln 2 in two parts (the first exact times any n) */
#define EXP_LOG2E 1.44269502f
#define EXP_LN2_HIGH 0.693145752f
#define EXP_LN2_LOW 1.42860677e-6f
/* exp(r) = 1 + r + r^2 q(r) on |r| <= ln(2)/2: q's coefficients, q(r) = Q0 + Q1 r + ... */
#define EXP_Q0 0.499999881f
#define EXP_Q1 0.166665182f
#define EXP_Q2 0.0416695327f
#define EXP_Q3 0.00836891588f
#define EXP_Q4 0.00137514074f

#pragma omp declare simd notinbranch
static inline float exp_one(float x) {
    const float shifter = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    int zero = x < -104.0f;            /* (NaN compares false and stays) */
    x = zero ? 0.0f : x;               /* (no subnormal steps for the lanes that give 0) */
    x = x > 89.0f ? 89.0f : x;
    float t = __builtin_fmaf(x, EXP_LOG2E, shifter);
    float n = t - shifter;
    int32_t k = to_bits(t) - to_bits(shifter); /* n as an integer (any value for NaN) */
    float r = __builtin_fmaf(n, -EXP_LN2_HIGH, x);
    r = __builtin_fmaf(n, -EXP_LN2_LOW, r);
    float q = __builtin_fmaf(EXP_Q4, r, EXP_Q3);
    q = __builtin_fmaf(q, r, EXP_Q2);
    q = __builtin_fmaf(q, r, EXP_Q1);
    q = __builtin_fmaf(q, r, EXP_Q0);
    float p = __builtin_fmaf(q, r * r, r) + 1.0f;
    int32_t half = k >> 1;
    float y = p * from_bits((half + 127) << 23) * from_bits((k - half + 127) << 23);
    return zero ? 0.0f : y;
}

#pragma omp declare simd notinbranch
static inline float tanh_one(float x) {
    float a = x < 0.0f ? -x : x;
    float s = a * a;
    float p = __builtin_fmaf(0.00213822629f, s, -0.00817178842f);
    p = __builtin_fmaf(p, s, 0.0216982104f);
    p = __builtin_fmaf(p, s, -0.0539462529f);
    p = __builtin_fmaf(p, s, 0.133332014f);
    p = __builtin_fmaf(p, s, -0.333333313f);
    float small = __builtin_fmaf(p, s * a, a);
    float e = exp_one(a + a > 88.0f ? 88.0f : a + a); /* (NaN stays) */
    float large = 1.0f - 2.0f / (e + 1.0f);
    float t = a < 0.625f ? small : large;
    return from_bits(to_bits(t) | (to_bits(x) & INT32_MIN)); /* the sign of x, -0 included */
}

/* the shared sigmoid body's steps (nuvec/backends/common/unary.py), `exp` this file's:
 * e = exp(-|x|), then 1 / (1 + e) for x >= 0 and e / (1 + e) below (NaN stays) */
#pragma omp declare simd notinbranch
static inline float sigmoid_one(float x) {
    float a = x < 0.0f ? -x : x;
    float e = exp_one(-a);
    float top = x >= 0.0f ? 1.0f : e;
    return top / (1.0f + e);
}

void nuvec_sigmoid_f32(int64_t n, const float *x, float *y) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) y[i] = sigmoid_one(x[i]);
}

/* `exp` of `rows` rows of `d` elements (`x` and `y` rows `ldx` and `ldy` apart, elements
 * contiguous) and each row's sum of its results into `sums`: the row's `exp` first (one
 * vector loop), then its sum while it is in cache, accumulated in double over 16 lanes in a
 * fixed order, then rounded to float. */
void nuvec_exp_rows_f32(int64_t rows, int64_t d, const float *x, int64_t ldx, float *y,
                        int64_t ldy, float *sums) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * ldx;
        float *yr = y + r * ldy;
#pragma omp simd
        for (int64_t j = 0; j < d; j++) yr[j] = exp_one(xr[j]);
        double acc[16] = {0};
        int64_t whole = d - d % 16;
        for (int64_t j = 0; j < whole; j += 16) {
#pragma omp simd
            for (int k = 0; k < 16; k++) acc[k] += (double)yr[j + k];
        }
        for (int64_t j = whole; j < d; j++) acc[j - whole] += (double)yr[j];
        double total = 0.0;
        for (int k = 0; k < 16; k++) total += acc[k];
        sums[r] = (float)total;
    }
}

/* each of `rows` rows of `d` elements (`ldy` apart, elements contiguous) times its factor */
void nuvec_scale_rows_f32(int64_t rows, int64_t d, float *y, int64_t ldy, const float *factors) {
    for (int64_t r = 0; r < rows; r++) {
        float *yr = y + r * ldy;
        const float f = factors[r];
#pragma omp simd
        for (int64_t j = 0; j < d; j++) yr[j] *= f;
    }
}

void nuvec_exp_f32(int64_t n, const float *x, float *y) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) y[i] = exp_one(x[i]);
}

void nuvec_tanh_f32(int64_t n, const float *x, float *y) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) y[i] = tanh_one(x[i]);
}

/* `exp` in place over a chunk of attention scores: `keys` rows of `cols` floats, rows `ld`
 * floats apart; column j is a query row at position `shift + j % n` counted from the chunk's
 * first key (the columns are `cols / n` stacked query heads of `n` rows each). A column's
 * entries for keys after its position, and with `window > 0` for keys `window` or more before
 * it, become 0 without their `exp` taken; the others become their `exp` (the bits of
 * `nuvec_exp_f32`). sums[j] is set to column j's results added in key order. */
void nuvec_exp_visible_f32(int64_t keys, int64_t cols, int64_t n, int64_t shift,
                           int64_t window, float *s, int64_t ld, float *sums) {
    for (int64_t j = 0; j < cols; j++) sums[j] = 0.0f;
    for (int64_t r = 0; r < keys; r++) {
        float *row = s + r * ld;
        int64_t lo = r - shift, hi = window > 0 ? r - shift + window : n;
        lo = lo < 0 ? 0 : lo > n ? n : lo;
        hi = hi < lo ? lo : hi > n ? n : hi;
        for (int64_t b = 0; b < cols; b += n) {
            float *seg = row + b, *sum = sums + b;
            for (int64_t i = 0; i < lo; i++) seg[i] = 0.0f;
#pragma omp simd
            for (int64_t i = lo; i < hi; i++) {
                float e = exp_one(seg[i]);
                seg[i] = e;
                sum[i] += e;
            }
            for (int64_t i = hi; i < n; i++) seg[i] = 0.0f;
        }
    }
}
