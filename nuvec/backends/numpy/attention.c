/* One work item of the CPU attention kernel in float32, fused: the query rows of a tile (those
 * of `heads` query heads sharing one key head, stacked) against a range of keys, in blocks of
 * BLOCK keys with an online softmax (running row maximum and sum, the accumulator rescaled),
 * nothing written but the tile's output rows. For `nuvec.backends.numpy.fast_attention`.
 *
 * Built on first use by `nuvec.backends.native` after `vector_math.c` (whose `exp` polynomial
 * it takes) for the machine it runs on. Its register tiles are AVX-512's (32 vector registers
 * hold 24 accumulators): elsewhere `nuvec_attention_block` returns 0 and the caller keeps its
 * BLAS tiles.
 *
 * A key head's keys are packed once a call, transposed per block (D x BLOCK, zero past the last
 * key). Per block: the scores of ROWS stacked query rows at a time, in registers (ROWS x 4
 * vectors of keys, D multiply-adds each); per row the hidden keys set to -inf, the block's
 * maximum, `exp` of every score minus the running maximum (`vexp`: 0 for the hidden ones),
 * the running sums (a vector a row, its lanes added at the end) and the accumulator rescaled
 * where the maximum moved; then the accumulator plus these weights times the block's values,
 * in registers again (ROWS x 4 vectors of value columns, then single vectors, then scalars).
 * Blocks start at multiples of BLOCK keys whatever the tile, so a row's result does not depend
 * on which rows share its item (among items that pack their keys), nor on the thread that
 * computes it. Items of a few rows may skip the packing (`scores_unpacked`).
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#define WIDTH 16
typedef __m512 vec;
#define vload _mm512_loadu_ps
#define vstore _mm512_storeu_ps
#define vfma _mm512_fmadd_ps
#define vset1 _mm512_set1_ps
#define vzero _mm512_setzero_ps
#define vmax _mm512_max_ps
#define vadd _mm512_add_ps
#define vmul _mm512_mul_ps
#define vsub _mm512_sub_ps
#define vhmax _mm512_reduce_max_ps
#define vhadd _mm512_reduce_add_ps
#else
#define WIDTH 0
#endif

#define ROWS 6             /* stacked query rows a register tile */
#define STRIP (4 * WIDTH)  /* keys (or value columns) a register tile */
#define BLOCK 64           /* keys a block (a multiple of STRIP) */

/* the keys a block, or 0 where this machine has no AVX-512 (nothing else is defined then) */
int64_t nuvec_attention_block(void) { return WIDTH ? BLOCK : 0; }

#if WIDTH

/* One step of a product in a register tile: c[i][u] += a[i * lda] * b[u * WIDTH ...], the
 * ROWS x 4 vectors (inlined, so the tile stays in registers) */
static inline __attribute__((always_inline)) void tile_step(vec c[ROWS][4], const float *a,
                                                            int64_t lda, const float *b) {
    vec b0 = vload(b), b1 = vload(b + WIDTH), b2 = vload(b + 2 * WIDTH),
        b3 = vload(b + 3 * WIDTH);
    for (int i = 0; i < ROWS; i++) {
        vec x = vset1(a[i * lda]);
        c[i][0] = vfma(x, b0, c[i][0]);
        c[i][1] = vfma(x, b1, c[i][1]);
        c[i][2] = vfma(x, b2, c[i][2]);
        c[i][3] = vfma(x, b3, c[i][3]);
    }
}

/* s[ROWS][BLOCK] = q[ROWS][d] (rows `ldq` apart) times kt (d x BLOCK) */
static void scores(int64_t d, const float *q, int64_t ldq, const float *kt, float *s) {
    for (int64_t j = 0; j < BLOCK; j += STRIP) {
        vec c[ROWS][4];
        for (int i = 0; i < ROWS; i++)
            for (int v = 0; v < 4; v++) c[i][v] = vzero();
        for (int64_t p = 0; p < d; p++) tile_step(c, q + p, ldq, kt + p * BLOCK + j);
        for (int i = 0; i < ROWS; i++)
            for (int v = 0; v < 4; v++) vstore(s + i * BLOCK + j + v * WIDTH, c[i][v]);
    }
}

/* s[i][c] = q[i] . k[c] for the `rows` rows of q (`d` apart) and `keys` key rows (`ldk`
 * apart), s's rows BLOCK apart: the scores of a few rows straight from the keys, without
 * packing them (each score a vector sum across its lanes) */
static void scores_unpacked(int64_t rows, int64_t d, const float *q, const float *k,
                            int64_t ldk, int64_t keys, float *s) {
    for (int64_t c = 0; c < keys; c++)
        for (int64_t i = 0; i < rows; i++) {
            const float *qi = q + i * d, *kc = k + c * ldk;
            vec acc = vzero();
            int64_t p = 0;
            for (; p + WIDTH <= d; p += WIDTH) acc = vfma(vload(qi + p), vload(kc + p), acc);
            float t = vhadd(acc);
            for (; p < d; p++) t = __builtin_fmaf(qi[p], kc[p], t);
            s[i * BLOCK + c] = t;
        }
}

/* acc[ROWS][dv] (rows `dv` apart) += p[ROWS][keys] times `keys` rows of v (`ldv` apart),
 * p[i][k] at p[i * ldi + k * ldk]: a tile's weights times a block's values (ldi BLOCK, ldk 1),
 * or in the backward a block's weights transposed times a chunk's rows (ldi 1, ldk BLOCK) */
static void values(int64_t keys, int64_t dv, const float *p, int64_t ldi, int64_t ldk,
                   const float *v, int64_t ldv, float *acc) {
    int64_t j = 0;
    for (; j + STRIP <= dv; j += STRIP) {
        vec c[ROWS][4];
        for (int i = 0; i < ROWS; i++)
            for (int u = 0; u < 4; u++) c[i][u] = vload(acc + i * dv + j + u * WIDTH);
        for (int64_t k = 0; k < keys; k++) tile_step(c, p + k * ldk, ldi, v + k * ldv + j);
        for (int i = 0; i < ROWS; i++)
            for (int u = 0; u < 4; u++) vstore(acc + i * dv + j + u * WIDTH, c[i][u]);
    }
    for (; j + WIDTH <= dv; j += WIDTH) {
        vec c[ROWS];
        for (int i = 0; i < ROWS; i++) c[i] = vload(acc + i * dv + j);
        for (int64_t k = 0; k < keys; k++) {
            vec b = vload(v + k * ldv + j);
            for (int i = 0; i < ROWS; i++) c[i] = vfma(vset1(p[i * ldi + k * ldk]), b, c[i]);
        }
        for (int i = 0; i < ROWS; i++) vstore(acc + i * dv + j, c[i]);
    }
    for (; j < dv; j++)
        for (int i = 0; i < ROWS; i++) {
            float c = acc[i * dv + j];
            for (int64_t k = 0; k < keys; k++)
                c = __builtin_fmaf(p[i * ldi + k * ldk], v[k * ldv + j], c);
            acc[i * dv + j] = c;
        }
}

/* the largest of x[0..BLOCK) and m */
static inline float row_max(const float *x, float m) {
    vec a = vload(x);
    for (int c = WIDTH; c < BLOCK; c += WIDTH) a = vmax(a, vload(x + c));
    float top = vhmax(a);
    return top > m ? top : m;
}

/* exp of each lane, by `vector_math.c`'s reduction and polynomial (2^n exp(r), ln 2 in two
 * parts) with 2^n applied by `scalef`; 0 for lanes at or below -87 (a hidden score's -inf, or
 * a weight under 2^-125 beside the row maximum's 1), which no subnormal reaches: Intel cores
 * finish subnormal steps in microcode, in this `exp` and in the products after it. NaN stays.
 * A dozen instructions a vector, against `exp_one`'s forty with its range checks: this file's
 * arguments are never above 0 (each score minus a maximum at least as large). */
static inline vec vexp(vec x) {
    __mmask16 kept = _mm512_cmp_ps_mask(x, vset1(-87.0f), _CMP_NLE_UQ);
    x = vmax(vset1(-87.0f), x);  /* (the second operand where one is NaN: x) */
    vec n = _mm512_roundscale_ps(vmul(x, vset1(EXP_LOG2E)),
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    vec r = vfma(n, vset1(-EXP_LN2_HIGH), x);
    r = vfma(n, vset1(-EXP_LN2_LOW), r);
    vec q = vfma(vset1(EXP_Q4), r, vset1(EXP_Q3));
    q = vfma(q, r, vset1(EXP_Q2));
    q = vfma(q, r, vset1(EXP_Q1));
    q = vfma(q, r, vset1(EXP_Q0));
    vec p = vadd(vfma(q, vmul(r, r), r), vset1(1.0f));
    return _mm512_maskz_scalef_ps(kept, p, n);
}

/* x[c] = exp(x[c] - m) for c < BLOCK; returns their sums lane by lane */
static inline vec row_exp(float *x, float m) {
    vec top = vset1(m), sum = vzero();
    for (int c = 0; c < BLOCK; c += WIDTH) {
        vec e = vexp(vsub(vload(x + c), top));
        vstore(x + c, e);
        sum = vadd(sum, e);
    }
    return sum;
}

/* Sets to `fill` the entries of a block's row (keys c0 on, `keys` of them) whose keys the row
 * does not see: those before `lo`, and under the causal mask those after `last` (the last key
 * it sees, counted from c0) or, with `window > 0`, `window` or more before it. Returns 0 where
 * the row sees none of the block (its entries left as they are). */
static int fill_hidden(float *sr, float fill, int64_t lo, int64_t keys, int64_t causal,
                       int64_t window, int64_t last) {
    int64_t hi = keys;
    if (causal) {
        hi = last + 1 < hi ? last + 1 : hi;
        if (window > 0 && last - window + 1 > lo) lo = last - window + 1;
    }
    if (hi <= lo) return 0;
    for (int64_t c = 0; c < lo; c++) sr[c] = fill;
    for (int64_t c = hi; c < BLOCK; c++) sr[c] = fill;
    return 1;
}

/* `fill_hidden` with -inf: the scores a row does not see. */
static int hide(float *sr, int64_t lo, int64_t keys, int64_t causal, int64_t window,
                int64_t last) {
    return fill_hidden(sr, -__builtin_inff(), lo, keys, causal, window, last);
}

/* r[j] becomes the j-th entries of r[0..16] (a 16 x 16 transpose in registers): rows
 * interleaved by pairs of floats, then of pairs, then 128-bit lanes exchanged twice */
static inline void transpose16(vec r[16]) {
    vec t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 2]);
        __m512d c = _mm512_castps_pd(t[4 * i + 1]), e = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, e));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, e));
    }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            t[8 * i + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0x88);
            t[8 * i + 4 + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0xdd);
        }
    for (int j = 0; j < 8; j++) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
    }
}
/* The keys of one key head (`lk` rows of `d`, `ld` floats apart) packed for
 * `nuvec_attention_f32`: block b (keys b*BLOCK on) as d rows of BLOCK keys, zero past the last
 * key; `kt` holds ceil(lk / BLOCK) * d * BLOCK floats. */
void nuvec_attention_pack_f32(int64_t lk, int64_t d, const float *k, int64_t ld, float *kt) {
    for (int64_t c0 = 0; c0 < lk; c0 += BLOCK) {
        int64_t keys = lk - c0 < BLOCK ? lk - c0 : BLOCK, c = 0;
        float *block = kt + c0 * d;
        for (; c + WIDTH <= keys; c += WIDTH) {  /* 16 keys x 16 entries at a time */
            const float *kc = k + (c0 + c) * ld;
            int64_t p = 0;
            for (; p + WIDTH <= d; p += WIDTH) {
                vec r[WIDTH];
                for (int i = 0; i < WIDTH; i++) r[i] = vload(kc + i * ld + p);
                transpose16(r);
                for (int j = 0; j < WIDTH; j++) vstore(block + (p + j) * BLOCK + c, r[j]);
            }
            for (; p < d; p++)
                for (int i = 0; i < WIDTH; i++) block[p * BLOCK + c + i] = kc[i * ld + p];
        }
        for (; c < keys; c++) {
            const float *kc = k + (c0 + c) * ld;
            for (int64_t p = 0; p < d; p++) block[p * BLOCK + c] = kc[p];
        }
        for (int64_t p = 0; p < d; p++)
            for (c = keys; c < BLOCK; c++) block[p * BLOCK + c] = 0.0f;
    }
}

/* One item: `heads` query heads of `n` rows each (head h's row i at q + h*q_head + i*ldq),
 * scaled by `scale`, against keys k0..k1 of a key head (`kt` as `nuvec_attention_pack_f32`
 * packs them, or where `kt` is NULL the key rows `k`, `ldk` apart: a few rows' scores without
 * the packing; `v` rows `ldv` apart); with `causal`, row i sees keys up to position `pos + i`
 * and, with `window > 0`, only those after `pos + i - window`. Each row must see at least one
 * key. Output row i of head h at out + h*out_head + i*dv; with `stats`, the stacked row r's
 * maximum score and its sum of exp(score - maximum) at stats[2r] and stats[2r + 1] (`v` and
 * `out` may then be NULL: no values). Returns 0, or -1 where its scratch could not be
 * allocated. */
int nuvec_attention_f32(int64_t heads, int64_t n, int64_t d, int64_t dv, const float *q,
                        int64_t q_head, int64_t ldq, float scale, const float *kt,
                        const float *k, int64_t ldk, const float *v, int64_t ldv, int64_t k0,
                        int64_t k1, int64_t causal, int64_t pos, int64_t window, float *out,
                        int64_t out_head, float *stats) {
    int64_t rows = heads * n, padded = (rows + ROWS - 1) / ROWS * ROWS;
    /* scratch, each part on a 64-byte boundary: the rows' sums (a vector each, added across
     * its lanes at the end), scaled query rows, a block's scores, accumulators, maxima */
    int64_t parts[5] = {padded * WIDTH, padded * d, padded * BLOCK, padded * dv, padded};
    int64_t at[5], size = 0;
    for (int i = 0; i < 5; i++) {
        at[i] = size;
        size += (parts[i] + 15) / 16 * 16;
    }
    float *base = aligned_alloc(64, (size_t)size * sizeof(float));
    if (base == NULL) return -1;
    vec *total = (vec *)base;
    float *qs = base + at[1], *s = base + at[2], *acc = base + at[3], *top = base + at[4];
    for (int64_t r = 0; r < rows; r++) {
        const float *src = q + (r / n) * q_head + (r % n) * ldq;
        for (int64_t p = 0; p < d; p++) qs[r * d + p] = src[p] * scale;
    }
    memset(qs + rows * d, 0, (size_t)((padded - rows) * d) * sizeof(float));
    memset(acc, 0, (size_t)(padded * dv) * sizeof(float));
    /* (the padding rows' weights stay 0 where `scores_unpacked` leaves them alone) */
    memset(s + rows * BLOCK, 0, (size_t)((padded - rows) * BLOCK) * sizeof(float));
    for (int64_t r = 0; r < padded; r++) {
        top[r] = -__builtin_inff();
        total[r] = vzero();
    }
    for (int64_t c0 = k0 / BLOCK * BLOCK; c0 < k1; c0 += BLOCK) {
        int64_t keys = k1 - c0 < BLOCK ? k1 - c0 : BLOCK;
        if (kt == NULL)
            scores_unpacked(rows, d, qs, k + c0 * ldk, ldk, keys, s);
        for (int64_t r = 0; kt != NULL && r < padded; r += ROWS)
            scores(d, qs + r * d, d, kt + c0 * d, s + r * BLOCK);
        for (int64_t r = 0; r < rows; r++) {
            float *sr = s + r * BLOCK;
            if (!hide(sr, k0 > c0 ? k0 - c0 : 0, keys, causal, window, pos + r % n - c0)) {
                memset(sr, 0, BLOCK * sizeof(float));
                continue;
            }
            float old = top[r], m = row_max(sr, old);
            if (m > old) {
                float alpha = _mm512_cvtss_f32(vexp(vset1(old - m)));
                top[r] = m;
                total[r] = vmul(total[r], vset1(alpha));
                float *ar = acc + r * dv;
#pragma omp simd
                for (int64_t j = 0; j < dv; j++) ar[j] *= alpha;
            }
            total[r] = vadd(total[r], row_exp(sr, m));
        }
        for (int64_t r = 0; v != NULL && r < padded; r += ROWS)
            values(keys, dv, s + r * BLOCK, BLOCK, 1, v + c0 * ldv, ldv, acc + r * dv);
    }
    for (int64_t r = 0; out != NULL && r < rows; r++) {
        float *dst = out + (r / n) * out_head + (r % n) * dv;
        const float *ar = acc + r * dv;
        float t = vhadd(total[r]);
        for (int64_t j = 0; j < dv; j++) dst[j] = ar[j] / t;
    }
    for (int64_t r = 0; stats != NULL && r < rows; r++) {
        stats[2 * r] = top[r];
        stats[2 * r + 1] = vhadd(total[r]);
    }
    free(base);
    return 0;
}

/* The float a table row carries as its bits (the low 32 of the field). */
static float float_of_bits(int64_t field) {
    int32_t bits = (int32_t)field;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* `one` on each of `count` rows of `table` (`fields` 64-bit integers a row), in order:
 * returns 0, or the first nonzero return. */
static int each_row(int64_t count, const int64_t *table, int64_t fields,
                    int (*one)(const int64_t *)) {
    for (int64_t i = 0; i < count; i++) {
        int status = one(table + i * fields);
        if (status) return status;
    }
    return 0;
}

/* One row of `nuvec_attention_items_f32`'s table: the item's key head packed first where
 * kt (t[4]) is not 0, then the item. */
static int item_row(const int64_t *t) {
    if (t[4]) nuvec_attention_pack_f32(t[0], t[1], (const float *)t[2], t[3], (float *)t[4]);
    return nuvec_attention_f32(
        t[5], t[6], t[7], t[8], (const float *)t[9], t[10], t[11], float_of_bits(t[12]),
        (const float *)t[13], (const float *)t[14], t[15], (const float *)t[16], t[17], t[18],
        t[19], t[20], t[21], t[22], (float *)t[23], t[24], (float *)t[25]);
}

/* `count` items one after another, row i of `table` (26 64-bit integers) holding item i: the
 * arguments of `nuvec_attention_pack_f32` (lk, d, k, ld, kt: the item's key head packed
 * first, where kt is not 0), then those of `nuvec_attention_f32` in order, pointers as
 * addresses and `scale` as its float's bits. One call for many small items (a short
 * sequence's key heads) instead of one each. Returns 0, or the first item's nonzero return. */
int nuvec_attention_items_f32(int64_t count, const int64_t *table) {
    return each_row(count, table, 26, item_row);
}

/* Query rows an item of the backward computes at once against a block (a multiple of ROWS) */
#define CHUNK 48

/* The gradients of one key head's attention (its `heads` query heads of `n` rows stacked,
 * rows `d` and `dv` apart, as `q`, `o` and `dout`; `k` and `v` of `lk` keys), the causal
 * offset `offset` (row i at key position offset + i) and window as
 * `nuvec_attention_f32`'s, every row seeing a key: dq, dk and dvo (rows `d`, `d` and `dv`
 * apart). With P the softmax of scale·q·kᵀ (each row's maximum and sum from
 * `nuvec_attention_f32`'s `stats`, so P = exp(S - max) / sum), D = rowsum(dO ⊙ O) and
 * dS = P ⊙ (dO vᵀ - D): dV = Pᵀ dO, dK = dSᵀ (scale·q), dQ = scale · dS k. Blocks of BLOCK
 * keys one after another, each against CHUNK rows at a time of the rows that see it, the
 * block's dK and dV summed in registers' tiles over the chunks, dQ over the blocks: each sum
 * runs in one order whatever the thread. Returns 0, or -1 where scratch could not be
 * allocated. */
int nuvec_attention_grad_f32(int64_t heads, int64_t n, int64_t lk, int64_t d, int64_t dv,
                             float scale, const float *q, const float *k, const float *v,
                             const float *o, const float *dout, int64_t causal, int64_t offset,
                             int64_t window, float *dq, float *dk, float *dvo) {
    int64_t np = (n + ROWS - 1) / ROWS * ROWS, rows = heads * np;
    int64_t blocks = (lk + BLOCK - 1) / BLOCK;
    /* scratch: packed keys and values, scaled queries, dO, each row's max, 1/sum and D, dQ,
     * a chunk's P and dS (2 spare entries past the last row: the key tiles of ROWS reach 66),
     * a block's dK and dV (66 rows), the maxima and sums of `nuvec_attention_f32` */
    int64_t parts[11] = {blocks * BLOCK * d, blocks * BLOCK * dv, rows * d, rows * dv, rows,
                         rows, rows, rows * d, CHUNK * BLOCK + 16, CHUNK * BLOCK + 16,
                         2 * heads * n};
    int64_t at[13], size = 0, tiles = (BLOCK + ROWS - 1) / ROWS * ROWS;
    for (int i = 0; i < 11; i++) {
        at[i] = size;
        size += (parts[i] + 15) / 16 * 16;
    }
    at[11] = size;
    size += tiles * d;
    at[12] = size;
    size += tiles * dv;
    float *base = aligned_alloc(64, (size_t)size * sizeof(float));
    if (base == NULL) return -1;
    memset(base, 0, (size_t)size * sizeof(float));
    float *kt = base + at[0], *vt = base + at[1], *qs = base + at[2], *dop = base + at[3];
    float *top = base + at[4], *inv = base + at[5], *dd = base + at[6], *dqa = base + at[7];
    float *p = base + at[8], *ds = base + at[9], *stats = base + at[10];
    float *dka = base + at[11], *dva = base + at[12];
    nuvec_attention_pack_f32(lk, d, k, d, kt);
    nuvec_attention_pack_f32(lk, dv, v, dv, vt);
    for (int64_t h = 0; h < heads; h++)  /* each row's maximum and sum, in items of 120 rows */
        for (int64_t r0 = 0; r0 < n; r0 += 120) {
            int64_t r1 = n - r0 < 120 ? n : r0 + 120, k0 = 0, k1 = lk;
            if (causal) {
                k1 = offset + r1 < lk ? offset + r1 : lk;
                if (window > 0 && offset + r0 - window + 1 > 0) k0 = offset + r0 - window + 1;
            }
            if (nuvec_attention_f32(1, r1 - r0, d, dv, q + (h * n + r0) * d, 0, d, scale, kt,
                                    NULL, d, NULL, dv, k0, k1, causal, offset + r0, window,
                                    NULL, 0, stats + 2 * (h * n + r0))) {
                free(base);
                return -1;
            }
        }
    for (int64_t h = 0; h < heads; h++)
        for (int64_t i = 0; i < n; i++) {
            int64_t r = h * np + i, src = h * n + i;
            for (int64_t j = 0; j < d; j++) qs[r * d + j] = q[src * d + j] * scale;
            float t = 0.0f;
            for (int64_t j = 0; j < dv; j++) {
                dop[r * dv + j] = dout[src * dv + j];
                t = __builtin_fmaf(dout[src * dv + j], o[src * dv + j], t);
            }
            dd[r] = t;
            top[r] = stats[2 * src];
            inv[r] = 1.0f / stats[2 * src + 1];
        }
    for (int64_t c0 = 0; c0 < lk; c0 += BLOCK) {
        int64_t keys = lk - c0 < BLOCK ? lk - c0 : BLOCK;
        memset(dka, 0, (size_t)(tiles * d) * sizeof(float));
        memset(dva, 0, (size_t)(tiles * dv) * sizeof(float));
        int64_t first = 0, end = np;  /* the rows of a head that see the block */
        if (causal) {
            first = c0 - offset > 0 ? (c0 - offset) / ROWS * ROWS : 0;
            if (window > 0) {
                int64_t past = c0 + keys - 1 + window - offset;  /* (rows from here see none) */
                end = past < 0 ? 0 : (past + ROWS - 1) / ROWS * ROWS < np
                                          ? (past + ROWS - 1) / ROWS * ROWS : np;
            }
        }
        for (int64_t h = 0; h < heads; h++)
            for (int64_t i0 = first; i0 < end; i0 += CHUNK) {
                int64_t count = end - i0 < CHUNK ? end - i0 : CHUNK, rb = h * np + i0;
                for (int64_t t = 0; t < count; t += ROWS) {
                    scores(d, qs + (rb + t) * d, d, kt + c0 * d, p + t * BLOCK);
                    scores(dv, dop + (rb + t) * dv, dv, vt + c0 * dv, ds + t * BLOCK);
                }
                for (int64_t t = 0; t < count; t++) {  /* P, then dS = P (dP - D) */
                    float *pr = p + t * BLOCK, *dr = ds + t * BLOCK;
                    int64_t r = rb + t;
                    if (i0 + t >= n || !hide(pr, 0, keys, causal, window, offset + i0 + t - c0)) {
                        memset(pr, 0, BLOCK * sizeof(float));
                        memset(dr, 0, BLOCK * sizeof(float));
                        continue;
                    }
                    vec m = vset1(top[r]), f = vset1(inv[r]), dr_ = vset1(dd[r]);
                    for (int c = 0; c < BLOCK; c += WIDTH) {
                        vec e = vmul(vexp(vsub(vload(pr + c), m)), f);
                        vstore(pr + c, e);
                        vstore(dr + c, vmul(e, vsub(vload(dr + c), dr_)));
                    }
                    /* dS is 0 where the row does not see the key, as the formula's `where`:
                     * P's 0 there times a NaN or infinite dP - D would not be */
                    fill_hidden(dr, 0.0f, 0, keys, causal, window, offset + i0 + t - c0);
                }
                for (int64_t c = 0; c < tiles; c += ROWS) {
                    values(count, dv, p + c, 1, BLOCK, dop + rb * dv, dv, dva + c * dv);
                    values(count, d, ds + c, 1, BLOCK, qs + rb * d, d, dka + c * d);
                }
                for (int64_t t = 0; t < count; t += ROWS)
                    values(keys, d, ds + t * BLOCK, BLOCK, 1, k + c0 * d, d,
                           dqa + (rb + t) * d);
            }
        memcpy(dk + c0 * d, dka, (size_t)(keys * d) * sizeof(float));
        memcpy(dvo + c0 * dv, dva, (size_t)(keys * dv) * sizeof(float));
    }
    for (int64_t h = 0; h < heads; h++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < d; j++)
                dq[(h * n + i) * d + j] = dqa[(h * np + i) * d + j] * scale;
    free(base);
    return 0;
}

/* One row of `nuvec_attention_grads_f32`'s table: a key head's gradients. */
static int grad_row(const int64_t *t) {
    return nuvec_attention_grad_f32(
        t[0], t[1], t[2], t[3], t[4], float_of_bits(t[5]), (const float *)t[6],
        (const float *)t[7], (const float *)t[8], (const float *)t[9], (const float *)t[10],
        t[11], t[12], t[13], (float *)t[14], (float *)t[15], (float *)t[16]);
}

/* `count` key heads' gradients one after another, row i of `table` (17 64-bit integers)
 * holding the arguments of `nuvec_attention_grad_f32` in order, pointers as addresses and
 * `scale` as its float's bits: one call for many small heads. Returns 0, or the first
 * head's nonzero return. */
int nuvec_attention_grads_f32(int64_t count, const int64_t *table) {
    return each_row(count, table, 17, grad_row);
}

#endif
