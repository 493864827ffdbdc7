/* Rope's rotation over heads, for `nuvec.backends.numpy.native_rope`.
 *
 * Built by `nuvec.backends.native` (-O3 -march=native -fopenmp-simd, no fast-math, no
 * contraction): each product is rounded and then each sum, in the order of the NumPy kernel
 * (`_rotate` in `nuvec/backends/common/fast.py`), so the results are its bits, in one pass.
 * Unit `u` of `[first, last)` is head `u % heads` of batch entry `u / heads`: its rows of `d`
 * elements start at `x + b * sb + h * sh`, `st` apart, elements contiguous; `out` holds the
 * units' rows contiguously from unit `first`. The tables `c` and `s` have `t` rows of `w`
 * elements (`w` = dims for the halves layout, dims / 2 for pairs), `tb` apart per batch entry
 * (0: one table for all). Elements past `dims` are copied.
 *
 * Halves: out[j] = x[j] c[j] + x[j + half] s[j + half], out[j + half] = x[j + half]
 * c[j + half] + x[j] s[j] (the tables are [c, c] and [s, -s]). Pairs (traditional): out[2i] =
 * x[2i] c[i] - x[2i + 1] s[i], out[2i + 1] = x[2i] s[i] + x[2i + 1] c[i].
 */

#include <stdint.h>

#define ROPE(T, SUFFIX)                                                                       \
    void nuvec_rope_##SUFFIX(int64_t first, int64_t last, int64_t heads, int64_t t,           \
                             int64_t d, int64_t dims, int traditional, const T *x,            \
                             int64_t sb, int64_t sh, int64_t st, const T *c, const T *s,      \
                             int64_t tb, T *out) {                                            \
        const int64_t half = dims / 2;                                                        \
        for (int64_t u = first; u < last; u++) {                                              \
            const int64_t b = u / heads, h = u % heads;                                       \
            const T *xu = x + b * sb + h * sh;                                                \
            const T *cb = c + b * tb, *sbt = s + b * tb;                                      \
            T *ou = out + (u - first) * t * d;                                                \
            for (int64_t i = 0; i < t; i++) {                                                 \
                const T *xr = xu + i * st;                                                    \
                T *o = ou + i * d;                                                            \
                if (traditional) {                                                            \
                    const T *ci = cb + i * half, *si = sbt + i * half;                        \
                    _Pragma("omp simd")                                                       \
                    for (int64_t j = 0; j < half; j++) {                                      \
                        T x1 = xr[2 * j], x2 = xr[2 * j + 1];                                 \
                        o[2 * j] = (T)(x1 * ci[j]) - (T)(x2 * si[j]);                         \
                        o[2 * j + 1] = (T)(x1 * si[j]) + (T)(x2 * ci[j]);                     \
                    }                                                                         \
                } else {                                                                      \
                    const T *ci = cb + i * dims, *si = sbt + i * dims;                        \
                    _Pragma("omp simd")                                                       \
                    for (int64_t j = 0; j < half; j++) {                                      \
                        T x1 = xr[j], x2 = xr[j + half];                                      \
                        o[j] = (T)(x1 * ci[j]) + (T)(x2 * si[j + half]);                      \
                        o[j + half] = (T)(x2 * ci[j + half]) + (T)(x1 * si[j]);               \
                    }                                                                         \
                }                                                                             \
                for (int64_t j = dims; j < d; j++) o[j] = xr[j];                              \
            }                                                                                 \
        }                                                                                     \
    }

ROPE(float, f32)
ROPE(double, f64)
