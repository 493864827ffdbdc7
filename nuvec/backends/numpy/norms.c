/* RMSNorm and LayerNorm over rows, and RMSNorm's backward, for
 * `nuvec.backends.numpy.native_norms`.
 *
 * Built by `nuvec.backends.native` (-O3 -march=native -fopenmp-simd, no fast-math). `x` and
 * `out` are `rows` C-contiguous rows of `d` elements; `w` and `b` are `d` elements or NULL (no
 * weight, no bias). Each row is read three times (LayerNorm) or twice (RMSNorm) while it is in
 * cache and written once. Sums accumulate in double (in vector lanes, a fixed order for a given
 * build), so float32 rows lose nothing to the sum; the statistics are rounded to the row's
 * type once and the elementwise steps then run in that type, in the order of the NumPy kernel
 * (`nuvec/backends/common/fast.py`): LayerNorm `((x - mean) * inv) * w + b`, RMSNorm
 * `(x * inv) * w`.
 */

#include <stdint.h>

/* Lanes of independent partial sums: a reduction into one vector register waits on each
 * add's latency; 32 lanes are four AVX-512 registers of doubles (the order is fixed). */
#define LANES 32

#define SUMS(T, SUFFIX)                                                                       \
    static inline double sum_##SUFFIX(const T *x, int64_t d, T shift, int squares) {          \
        double acc[LANES] = {0};                                                              \
        int64_t whole = d - d % LANES;                                                        \
        for (int64_t j = 0; j < whole; j += LANES) {                                          \
            _Pragma("omp simd")                                                               \
            for (int k = 0; k < LANES; k++) {                                                 \
                double c = (double)(T)(x[j + k] - shift);                                     \
                acc[k] += squares ? c * c : c;                                                \
            }                                                                                 \
        }                                                                                     \
        for (int64_t j = whole; j < d; j++) {                                                 \
            double c = (double)(T)(x[j] - shift);                                             \
            acc[j - whole] += squares ? c * c : c;                                            \
        }                                                                                     \
        double total = 0.0;                                                                   \
        for (int k = 0; k < LANES; k++) total += acc[k];                                      \
        return total;                                                                         \
    }                                                                                         \
                                                                                              \
    /* asks for the next row while this one is computed from cache */                        \
    static inline void ahead_##SUFFIX(const T *next, int64_t d) {                             \
        for (int64_t j = 0; j < d; j += 64 / sizeof(T)) __builtin_prefetch(next + j);         \
    }

#define NORMS(T, SUFFIX)                                                                      \
    void nuvec_layer_norm_##SUFFIX(int64_t rows, int64_t d, const T *x, const T *w,           \
                                   const T *b, double eps, T *out) {                          \
        for (int64_t r = 0; r < rows; r++) {                                                  \
            const T *xr = x + r * d;                                                          \
            T *o = out + r * d;                                                               \
            if (r + 1 < rows) ahead_##SUFFIX(xr + d, d);                                      \
            const T mean = (T)(sum_##SUFFIX(xr, d, (T)0, 0) / (double)d);                     \
            double squares = sum_##SUFFIX(xr, d, mean, 1);                                    \
            const T inv = (T)(1.0 / __builtin_sqrt(squares / (double)d + eps));               \
            if (w && b) {                                                                     \
                _Pragma("omp simd")                                                           \
                for (int64_t j = 0; j < d; j++)                                               \
                    o[j] = (T)((T)((T)(xr[j] - mean) * inv) * w[j]) + b[j];                   \
            } else if (w) {                                                                   \
                _Pragma("omp simd")                                                           \
                for (int64_t j = 0; j < d; j++) o[j] = (T)((T)(xr[j] - mean) * inv) * w[j];   \
            } else if (b) {                                                                   \
                _Pragma("omp simd")                                                           \
                for (int64_t j = 0; j < d; j++) o[j] = (T)((T)(xr[j] - mean) * inv) + b[j];   \
            } else {                                                                          \
                _Pragma("omp simd")                                                           \
                for (int64_t j = 0; j < d; j++) o[j] = (T)(xr[j] - mean) * inv;               \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    void nuvec_rms_norm_##SUFFIX(int64_t rows, int64_t d, const T *x, const T *w, double eps, \
                                 T *out) {                                                    \
        for (int64_t r = 0; r < rows; r++) {                                                  \
            const T *xr = x + r * d;                                                          \
            T *o = out + r * d;                                                               \
            if (r + 1 < rows) ahead_##SUFFIX(xr + d, d);                                      \
            double squares = sum_##SUFFIX(xr, d, (T)0, 1);                                    \
            const T inv = (T)(1.0 / __builtin_sqrt(squares / (double)d + eps));               \
            if (w) {                                                                          \
                _Pragma("omp simd")                                                           \
                for (int64_t j = 0; j < d; j++) o[j] = (T)(xr[j] * inv) * w[j];               \
            } else {                                                                          \
                _Pragma("omp simd")                                                           \
                for (int64_t j = 0; j < d; j++) o[j] = xr[j] * inv;                           \
            }                                                                                 \
        }                                                                                     \
    }

/* RMSNorm's backward over rows: `dx = (g w) inv - x (t inv^3)` with `t = sum(g w x) / d`, and
 * each row's part of `dw`, `g (x inv)`, into `part` (NULL: no weight; the caller sums the
 * rows in order). Steps in the NumPy kernel's order, the sums in double as the forward's. */
#define NORM_VJPS(T, SUFFIX)                                                                  \
    void nuvec_rms_norm_vjp_##SUFFIX(int64_t rows, int64_t d, const T *x, const T *w,         \
                                     const T *g, double eps, T *dx, T *part) {                \
        for (int64_t r = 0; r < rows; r++) {                                                  \
            const T *xr = x + r * d, *gr = g + r * d;                                         \
            T *o = dx + r * d;                                                                \
            if (r + 1 < rows) {                                                               \
                ahead_##SUFFIX(xr + d, d);                                                    \
                ahead_##SUFFIX(gr + d, d);                                                    \
            }                                                                                 \
            double squares = sum_##SUFFIX(xr, d, (T)0, 1);                                    \
            const T inv = (T)(1.0 / __builtin_sqrt(squares / (double)d + eps));               \
            if (w) {                                                                          \
                _Pragma("omp simd")                                                           \
                for (int64_t j = 0; j < d; j++) o[j] = gr[j] * w[j];                          \
            } else {                                                                          \
                _Pragma("omp simd")                                                           \
                for (int64_t j = 0; j < d; j++) o[j] = gr[j];                                 \
            }                                                                                 \
            double acc[LANES] = {0};                                                          \
            int64_t whole = d - d % LANES;                                                    \
            for (int64_t j = 0; j < whole; j += LANES) {                                      \
                _Pragma("omp simd")                                                           \
                for (int k = 0; k < LANES; k++)                                               \
                    acc[k] += (double)o[j + k] * (double)xr[j + k];                           \
            }                                                                                 \
            for (int64_t j = whole; j < d; j++) acc[j - whole] += (double)o[j] * (double)xr[j]; \
            double dot = 0.0;                                                                 \
            for (int k = 0; k < LANES; k++) dot += acc[k];                                    \
            const T t = (T)(dot / (double)d);                                                 \
            const T c = t * (T)((T)(inv * inv) * inv);                                        \
            _Pragma("omp simd")                                                               \
            for (int64_t j = 0; j < d; j++) o[j] = (T)(o[j] * inv) - (T)(xr[j] * c);          \
            if (part) {                                                                       \
                T *pr = part + r * d;                                                         \
                _Pragma("omp simd")                                                           \
                for (int64_t j = 0; j < d; j++) pr[j] = gr[j] * (T)(xr[j] * inv);             \
            }                                                                                 \
        }                                                                                     \
    }

SUMS(float, f32)
SUMS(double, f64)
NORMS(float, f32)
NORMS(double, f64)
NORM_VJPS(float, f32)
NORM_VJPS(double, f64)
