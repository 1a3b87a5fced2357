// Driver and portable path of lk_gemm.h's matrix product.
//
// Blocking (Goto's scheme, simplified for the small matrices of a CNN): K in
// blocks of LK_KC, A's rows in blocks of LK_MC packed into mr-row panels
// (alpha applied while packing). B is packed one kc x nr panel at a time when
// several row blocks reuse it (a contiguous panel in L1, whatever ldb is),
// else read in place. Each mr x nr block of C is one microkernel call; the last
// columns go through masked loads and stores, the last rows through a
// zero-padded tile, so nothing past C is read or written. One or two rows
// (a batch-1 Gemm) skip all that: B is streamed once per row.

#include "lk_gemm_internal.h"

#include <stdlib.h>
#include <string.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#define LK_MC 144 // a multiple of every mr (4, 6, 8)
// Products with at most this many rows stream B once per row instead.
#define LK_GEMV_ROWS 2

// The portable kernels: a 4x8 block, plain loops the compiler may vectorize.
static void lk_gemm_kernel_scalar(size_t k, const float *a, const float *b, size_t ldb, float *c,
                                  size_t ldc, size_t cols, const float *bias) {
    float acc[4][8];
    for (int i = 0; i < 4; i++) {
        if (bias) {
            for (size_t j = 0; j < cols; j++) acc[i][j] = bias[i];
        } else {
            memcpy(acc[i], c + i * ldc, cols * sizeof(float));
        }
    }
    for (size_t p = 0; p < k; p++, a += 4, b += ldb) {
        for (int i = 0; i < 4; i++) {
            for (size_t j = 0; j < cols; j++) acc[i][j] += a[i] * b[j];
        }
    }
    for (int i = 0; i < 4; i++) memcpy(c + i * ldc, acc[i], cols * sizeof(float));
}

static void lk_gemm_pack_b_scalar(size_t k, size_t cols, const float *b, size_t ldb, float *dst) {
    for (size_t p = 0; p < k; p++, b += ldb, dst += 8) {
        for (size_t j = 0; j < 8; j++) dst[j] = j < cols ? b[j] : 0.0f;
    }
}

static void lk_gemv_scalar(size_t k, size_t n, float alpha, const float *a, size_t a_col, const float *b,
                           size_t ldb, float *c) {
    for (size_t p = 0; p < k; p++) {
        float ap = alpha * a[p * a_col];
        for (size_t j = 0; j < n; j++) c[j] += ap * b[p * ldb + j];
    }
}

static void lk_gemv_bt_scalar(size_t k, size_t n, float alpha, const float *a, const float *bt, size_t ldbt,
                              float *c) {
    for (size_t j = 0; j < n; j++) {
        float sum = 0.0f;
        for (size_t p = 0; p < k; p++) sum += a[p] * bt[j * ldbt + p];
        c[j] += alpha * sum;
    }
}

static void lk_conv_rows_scalar(size_t k, size_t rows, const float *a, const float *b, const ptrdiff_t *off,
                                size_t n, size_t lines, size_t b_line, const float *bias, float *c, size_t ldc,
                                size_t c_line) {
    for (size_t t = 0; t < lines; t++) {
        for (size_t i = 0; i < rows; i++) {
            float *ci = c + i * ldc + t * c_line;
            for (size_t j = 0; j < n; j++) ci[j] = bias ? bias[i] : 0.0f;
            for (size_t p = 0; p < k; p++) {
                float ap = a[p * 4 + i];
                const float *bp = b + off[p] + t * b_line;
                for (size_t j = 0; j < n; j++) ci[j] += ap * bp[j];
            }
        }
    }
}

static void lk_dw_row_scalar(size_t taps, const float *w, const float *b, const ptrdiff_t *off, size_t n,
                             float bias, float *c) {
    for (size_t j = 0; j < n; j++) c[j] = bias;
    for (size_t t = 0; t < taps; t++) {
        const float *bt = b + off[t];
        for (size_t j = 0; j < n; j++) c[j] += w[t] * bt[j];
    }
}

static void lk_conv_cv_scalar(size_t k, size_t pixels, const float *w, const float *b, const ptrdiff_t *off,
                              const float *bias, float *tile) {
    for (size_t r = 0; r < pixels; r++) {
        float *t = tile + r * 8;
        for (size_t j = 0; j < 8; j++) t[j] = bias[j];
        for (size_t p = 0; p < k; p++) {
            float x = b[off[p] + r];
            for (size_t j = 0; j < 8; j++) t[j] += x * w[p * 8 + j];
        }
    }
}

static const lk_gemm_isa lk_gemm_scalar = {4, 8, lk_gemm_kernel_scalar, lk_gemm_pack_b_scalar, lk_gemv_scalar,
                                           lk_gemv_bt_scalar, lk_conv_rows_scalar, lk_dw_row_scalar, NULL,
                                           lk_conv_cv_scalar, NULL, NULL};

const lk_gemm_isa *lk_gemm_for(lk_isa isa) {
#ifdef LK_HAVE_X86_GEMM
    switch (isa) {
    case LK_ISA_AVX512F: return &lk_gemm_avx512;
    case LK_ISA_AVX2_FMA: return &lk_gemm_avx2;
    case LK_ISA_SCALAR: break;
    }
#else
    (void)isa;
#endif
    return &lk_gemm_scalar;
}

static size_t lk_min(size_t a, size_t b) { return a < b ? a : b; }

// C's starting values: the old C or 0, plus the biases.
static void lk_gemm_init_c(size_t m, size_t n, float *c, size_t ldc, const float *row_bias,
                           const float *col_bias, int accumulate) {
    for (size_t i = 0; i < m; i++) {
        float *ci = c + i * ldc;
        float r = row_bias ? row_bias[i] : 0.0f;
        if (!accumulate) {
            for (size_t j = 0; j < n; j++) ci[j] = r;
        } else if (r != 0.0f) {
            for (size_t j = 0; j < n; j++) ci[j] += r;
        }
        if (col_bias) {
            for (size_t j = 0; j < n; j++) ci[j] += col_bias[j];
        }
    }
}

// Four rows of a row-major A (s, the next ones a_row floats apart), kc
// steps, times alpha, into lanes 0-3 of a panel's steps (d, mr floats
// apart): 4x4 blocks transposed in registers, where one element at a time
// costs a cycle each (attention's products pack a block of keys, 128 x 64,
// for every 32 x 128 x 64 product). The same products as one at a time.
static void lk_gemm_pack_rows4(const float *s, size_t a_row, size_t kc, float alpha, float *d, size_t mr) {
    size_t p = 0;
#if defined(__SSE__)
    __m128 scale = _mm_set1_ps(alpha);
    for (; p + 4 <= kc; p += 4) {
        __m128 r0 = _mm_loadu_ps(s + p), r1 = _mm_loadu_ps(s + a_row + p);
        __m128 r2 = _mm_loadu_ps(s + 2 * a_row + p), r3 = _mm_loadu_ps(s + 3 * a_row + p);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(d + p * mr, _mm_mul_ps(scale, r0));
        _mm_storeu_ps(d + (p + 1) * mr, _mm_mul_ps(scale, r1));
        _mm_storeu_ps(d + (p + 2) * mr, _mm_mul_ps(scale, r2));
        _mm_storeu_ps(d + (p + 3) * mr, _mm_mul_ps(scale, r3));
    }
#endif
    for (; p < kc; p++) {
        for (size_t i = 0; i < 4; i++) d[p * mr + i] = alpha * s[i * a_row + p];
    }
}

// A's rows [i0, i0 + mc) and columns [p0, p0 + kc), times alpha, as mr-row
// panels of kc steps each; rows past m are zero. A whole panel of a
// transposed A (a_row 1: a step's mr values adjacent) is a contiguous copy
// per step; of a row-major one (a_col 1), four rows at a time transposed.
static void lk_gemm_pack_a(const lk_gemm_isa *isa, size_t m, float alpha, const float *a,
                           size_t a_row, size_t a_col, size_t i0, size_t mc, size_t p0, size_t kc,
                           float *dst) {
    size_t mr = isa->mr;
    for (size_t ir = 0; ir < mc; ir += mr) {
        size_t first = i0 + ir;
        float *panel = dst + ir * kc;
        if (first + mr <= m && a_row == 1) {
            for (size_t p = 0; p < kc; p++) {
                const float *s = a + first + (p0 + p) * a_col;
                for (size_t i = 0; i < mr; i++) panel[p * mr + i] = alpha * s[i];
            }
            continue;
        }
        size_t i = 0;
        if (a_col == 1) {
            for (; i + 4 <= mr && first + i + 4 <= m; i += 4) {
                lk_gemm_pack_rows4(a + (first + i) * a_row + p0, a_row, kc, alpha, panel + i, mr);
            }
        }
        for (; i < mr; i++) {
            size_t row = i0 + ir + i;
            float *d = dst + ir * kc + i;
            if (row >= m) {
                for (size_t p = 0; p < kc; p++) d[p * mr] = 0.0f;
                continue;
            }
            const float *s = a + row * a_row + p0 * a_col;
            for (size_t p = 0; p < kc; p++) d[p * mr] = alpha * s[p * a_col];
        }
    }
}

// One mr x cols block of C (from `bias` when not NULL, else C's values),
// through a zero-padded tile when C has fewer rows.
static void lk_gemm_block(const lk_gemm_isa *isa, size_t kc, const float *a, const float *b,
                          size_t ldb, float *c, size_t ldc, size_t rows, size_t cols, const float *bias) {
    if (rows == isa->mr) {
        isa->kernel(kc, a, b, ldb, c, ldc, cols, bias);
        return;
    }
    float tile[LK_GEMM_MAX_TILE] = {0};
    for (size_t i = 0; i < rows; i++) {
        if (bias) {
            for (size_t j = 0; j < cols; j++) tile[i * isa->nr + j] = bias[i];
        } else {
            memcpy(tile + i * isa->nr, c + i * ldc, cols * sizeof(float));
        }
    }
    isa->kernel(kc, a, b, ldb, tile, isa->nr, cols, NULL);
    for (size_t i = 0; i < rows; i++) memcpy(c + i * ldc, tile + i * isa->nr, cols * sizeof(float));
}

// B is row-major (ldb floats a row), or when `panels` is not NULL packed
// once by lk_sgemm_pack_b: panel j of nr columns at panels + j * k * nr.
static int lk_sgemm_core(const lk_gemm_isa *isa, size_t m, size_t n, size_t k, float alpha, const float *a,
                         size_t a_row, size_t a_col, const float *b, size_t ldb, const float *panels, float *c,
                         size_t ldc, const float *row_bias, const float *col_bias, int accumulate) {
    if (m == 0 || n == 0) return 0;
    lk_gemm_init_c(m, n, c, ldc, row_bias, col_bias, accumulate);
    if (k == 0) return 0;
    if (m <= LK_GEMV_ROWS) {
        for (size_t i = 0; i < m; i++) {
            if (!panels) {
                isa->gemv(k, n, alpha, a + i * a_row, a_col, b, ldb, c + i * ldc);
                continue;
            }
            for (size_t j0 = 0; j0 < n; j0 += isa->nr) {
                isa->gemv(k, lk_min(isa->nr, n - j0), alpha, a + i * a_row, a_col, panels + j0 * k, isa->nr,
                          c + i * ldc + j0);
            }
        }
        return 0;
    }
    if (n == 1 && !panels && a_col == 1 && ldb == 1 && ldc == 1) {
        // A matrix times a vector: each output is the dot product of a row
        // of A with b, read as it lies. The blocked path would pack A and
        // fill one lane of each nr-wide panel (attention's scores of one
        // query against a block of keys: half its decode step at nr = 16).
        isa->gemv_bt(k, m, alpha, b, a, a_row, c);
        return 0;
    }
    size_t mr = isa->mr, nr = isa->nr;
    size_t kc_max = lk_min(k, LK_KC);
    size_t mc_max = lk_min((m + mr - 1) / mr * mr, LK_MC);
    // aligned_alloc wants a multiple of the alignment.
    float *apack = aligned_alloc(64, (mc_max * kc_max * sizeof(float) + 63) / 64 * 64);
    float *bpack = aligned_alloc(64, (kc_max * nr * sizeof(float) + 63) / 64 * 64);
    if (!apack || !bpack) {
        free(apack);
        free(bpack);
        return -1;
    }
    for (size_t p0 = 0; p0 < k; p0 += LK_KC) {
        size_t kc = lk_min(LK_KC, k - p0);
        for (size_t i0 = 0; i0 < m; i0 += LK_MC) {
            size_t mc = lk_min(LK_MC, m - i0);
            lk_gemm_pack_a(isa, m, alpha, a, a_row, a_col, i0, mc, p0, kc, apack);
            for (size_t j0 = 0; j0 < n; j0 += nr) {
                size_t cols = lk_min(nr, n - j0);
                const float *bp = panels ? panels + j0 * k + p0 * nr : b + p0 * ldb + j0;
                size_t bs = panels ? nr : ldb;
                if (!panels && mc > mr) {
                    isa->pack_b(kc, cols, bp, ldb, bpack);
                    bp = bpack;
                    bs = nr;
                }
                for (size_t ir = 0; ir < mc; ir += mr) {
                    lk_gemm_block(isa, kc, apack + ir * kc, bp, bs, c + (i0 + ir) * ldc + j0, ldc,
                                  lk_min(mr, mc - ir), cols, NULL);
                }
            }
        }
    }
    free(apack);
    free(bpack);
    return 0;
}

int lk_sgemm_run(const lk_gemm_isa *isa, size_t m, size_t n, size_t k, float alpha, const float *a,
                 size_t a_row, size_t a_col, const float *b, size_t ldb, float *c, size_t ldc,
                 const float *row_bias, const float *col_bias, int accumulate) {
    return lk_sgemm_core(isa, m, n, k, alpha, a, a_row, a_col, b, ldb, NULL, c, ldc, row_bias, col_bias, accumulate);
}

size_t lk_sgemm_column_block(lk_isa isa) { return isa > lk_kernels_isa() ? 0 : lk_gemm_for(isa)->nr; }

size_t lk_sgemm_packed_b_size(lk_isa isa, size_t k, size_t n) {
    size_t nr = lk_sgemm_column_block(isa);
    return nr == 0 ? 0 : (n + nr - 1) / nr * nr * k;
}

int lk_sgemm_pack_b(lk_isa isa, size_t k, size_t n, const float *b, size_t ldb, float *packed) {
    if (isa > lk_kernels_isa()) return -1;
    const lk_gemm_isa *gi = lk_gemm_for(isa);
    for (size_t j0 = 0; j0 < n; j0 += gi->nr) gi->pack_b(k, lk_min(gi->nr, n - j0), b + j0, ldb, packed + j0 * k);
    return 0;
}

int lk_sgemm_f32_packed_b(lk_isa isa, size_t m, size_t n, size_t k, float alpha, const float *a, size_t a_row,
                          size_t a_col, const float *packed_b, float *c, size_t ldc, const float *row_bias,
                          const float *col_bias, int accumulate) {
    if (isa > lk_kernels_isa()) return -1;
    return lk_sgemm_core(lk_gemm_for(isa), m, n, k, alpha, a, a_row, a_col, NULL, 0, packed_b, c, ldc, row_bias,
                         col_bias, accumulate);
}

// The same blocking as lk_sgemm_run without packing A: its panels were
// packed once (a convolution's weights, at the layer's creation). Packing A
// on every call cost the 512->512 3x3 convolution on 7x7 maps (im2col, K =
// 4608, 49 columns) a third of its time: A is read once per 32 columns.
void lk_sgemm_packed_run(const lk_gemm_isa *isa, size_t m, size_t n, size_t k, const float *apacked,
                         const float *b, size_t ldb, float *c, size_t ldc, const float *row_bias, float *bpack) {
    if (m == 0 || n == 0) return;
    // The first K block starts its registers from the biases (a 0 when
    // there are none) instead of C: no pass writing C first, which cost a
    // 16->96 1x1 layer on 112x112 (K = 16) a quarter of its time (one
    // thread: 0.26 -> 0.20 ms; 256->64 on 56x56: 0.49 -> 0.47 ms).
    float zeros[LK_MC] = {0};
    if (k == 0) lk_gemm_init_c(m, n, c, ldc, row_bias, NULL, 0);
    size_t mr = isa->mr, nr = isa->nr;
    for (size_t p0 = 0; p0 < k; p0 += LK_KC) {
        size_t kc = lk_min(LK_KC, k - p0);
        for (size_t i0 = 0; i0 < m; i0 += LK_MC) {
            size_t mc = lk_min(LK_MC, m - i0);
            for (size_t j0 = 0; j0 < n; j0 += nr) {
                size_t cols = lk_min(nr, n - j0);
                const float *bp = b + p0 * ldb + j0;
                size_t bs = ldb;
                if (mc > mr) {
                    isa->pack_b(kc, cols, bp, ldb, bpack);
                    bp = bpack;
                    bs = nr;
                }
                for (size_t ir = 0; ir < mc; ir += mr) {
                    const float *ap = apacked + (i0 + ir) * k + p0 * mr;
                    const float *start = p0 > 0 ? NULL : row_bias ? row_bias + i0 + ir : zeros;
                    lk_gemm_block(isa, kc, ap, bp, bs, c + (i0 + ir) * ldc + j0, ldc, lk_min(mr, mc - ir), cols,
                                  start);
                }
            }
        }
    }
}

int lk_sgemv_f32_bt(lk_isa isa, size_t m, size_t n, size_t k, float alpha, const float *a, size_t a_row,
                    size_t a_col, const float *bt, size_t ldbt, float *c, size_t ldc, const float *row_bias,
                    const float *col_bias, int accumulate) {
    if (isa > lk_kernels_isa()) return -1;
    if (m == 0 || n == 0) return 0;
    // A row of a transposed A is gathered into one contiguous row first.
    float *row = NULL;
    if (a_col != 1 && k > 0 && !(row = malloc(k * sizeof(float)))) return -1;
    lk_gemm_init_c(m, n, c, ldc, row_bias, col_bias, accumulate);
    const lk_gemm_isa *gi = lk_gemm_for(isa);
    for (size_t i = 0; i < m && k > 0; i++) {
        const float *ai = a + i * a_row;
        if (row) {
            for (size_t p = 0; p < k; p++) row[p] = ai[p * a_col];
            ai = row;
        }
        gi->gemv_bt(k, n, alpha, ai, bt, ldbt, c + i * ldc);
    }
    free(row);
    return 0;
}

int lk_sgemm_f32(size_t m, size_t n, size_t k, float alpha, const float *a, size_t a_row,
                 size_t a_col, const float *b, size_t ldb, float *c, size_t ldc,
                 const float *row_bias, const float *col_bias, int accumulate) {
    return lk_sgemm_run(lk_gemm_for(lk_kernels_isa()), m, n, k, alpha, a, a_row, a_col, b, ldb, c, ldc,
                        row_bias, col_bias, accumulate);
}

int lk_sgemm_f32_isa(lk_isa isa, size_t m, size_t n, size_t k, float alpha, const float *a,
                     size_t a_row, size_t a_col, const float *b, size_t ldb, float *c, size_t ldc,
                     const float *row_bias, const float *col_bias, int accumulate) {
    if (isa > lk_kernels_isa()) return -1;
    return lk_sgemm_run(lk_gemm_for(isa), m, n, k, alpha, a, a_row, a_col, b, ldb, c, ldc, row_bias,
                        col_bias, accumulate);
}
