// The body of lk_winograd.c's portable path and of lk_winograd_avx2.c and
// lk_winograd_avx512.c, written once (no include guard: each includes it
// once after defining
//   LK_TARGET      the target attribute of every function here (may be empty)
//   LK_INLINE      static inline, always inlined
//   LK_WG_ISA      the lk_winograd_isa to define
//   LK_WG_MR       rows of the matrix-product register block
// and, for a vector instruction set, LK_W (floats a vector), lk_v, LK_PS(op),
// lk_lanes, lk_lanes_upto(n), lk_load_lanes, lk_store_lanes as
// lk_gemm_avx*.c define them; without LK_W the block is plain loops of
// LK_WG_NR columns).
//
// The transforms are plain loops over contiguous floats that the compiler
// vectorizes for the function's target: the input transform's column pass
// runs along a padded input row, its row pass and the output transform
// along the tiles of a tile row. The constant matrices are folded in by
// full unrolling; a zero coefficient emits no operation.

#include <stdint.h>
#include <string.h>

// B^T, A^T for F(2x2, 3x3) (points 0, 1, -1) and F(4x4, 3x3) (0, 1, -1, 1/2, -2);
// G is in lk_winograd.c (weights are packed once, in double).
static const float lk_wg_bt2[4][4] = {{-1, 0, 1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, -1, 0, 1}};
static const float lk_wg_at2[2][4] = {{1, 1, 1, 0}, {0, 1, -1, 1}};
static const float lk_wg_bt4[6][6] = {{1, -1.5f, -2, 1.5f, 1, 0}, {0, -2, 1, 5, 2, 0}, {0, 2, -5, 1, 2, 0},
                                      {0, -2, -1, 2, 1, 0},       {0, 1, -2, -1, 2, 0}, {0, 1, -1.5f, -2, 1.5f, 1}};
static const float lk_wg_at4[4][6] = {
    {1, 1, 1, 1, 1, 0}, {0, 1, -1, 0.5f, -2, 0}, {0, 1, 1, 0.25f, 4, 0}, {0, 1, -1, 0.125f, -8, 1}};

#define LK_WG_BT(m, i, j) ((m) == 4 ? lk_wg_bt4[i][j] : lk_wg_bt2[i][j])
#define LK_WG_AT(m, i, j) ((m) == 4 ? lk_wg_at4[i][j] : lk_wg_at2[i][j])

// sum_j coef(j) * v[j] over j < n with the zero coefficients left out
// (0 * v is not 0 for inf or NaN, so the compiler cannot drop them itself).
#define LK_WG_DOT(n, coef, v, out)                                                                             \
    do {                                                                                                       \
        float lk_acc_ = 0.0f;                                                                                  \
        int lk_first_ = 1;                                                                                     \
        _Pragma("clang loop unroll(full)") for (int j_ = 0; j_ < (n); j_++) {                                  \
            float c_ = coef(j_);                                                                               \
            if (c_ != 0.0f) {                                                                                  \
                lk_acc_ = lk_first_ ? c_ * (v)[j_] : lk_acc_ + c_ * (v)[j_];                                   \
                lk_first_ = 0;                                                                                 \
            }                                                                                                  \
        }                                                                                                      \
        (out) = lk_acc_;                                                                                       \
    } while (0)

// Padded input rows are kept split by phase (column x at (x % m) * (tw + 1)
// + x / m), so that the row pass reads each tile cell of a tile row as
// contiguous floats: the compiler turned stride-m reads into gathers, slow
// here (AMD EPYC: input transform 2x faster split, measured at 64->64 56x56).
LK_TARGET LK_INLINE int lk_wg_input_of(const lk_wg_block *b, const float *x, float *v, float *scratch,
                                       const int m) {
    const int n = m + 2;
    size_t tw = b->tw, wl = b->wl, ph = tw + 1, rows = b->rb * (size_t)m + 2, cn = b->channels, tp = b->tp;
    size_t h = b->height, w = b->width, pl = b->pad_left;
    float *plane = scratch, *line = plane + rows * wl, *tv = line + wl;
    ptrdiff_t y0 = (ptrdiff_t)(b->r0 * (size_t)m) - (ptrdiff_t)b->pad_top;
    // Padded columns [lo, hi) hold input cells, the others zeros.
    size_t lo = pl < wl ? pl : wl, hi = pl + w < wl ? pl + w : wl;
    uint32_t special = 0; // an inf or NaN cell seen (all exponent bits set)
    for (size_t c = 0; c < cn; c++) {
        const float *xc = x + c * h * w;
        for (size_t r = 0; r < rows; r++) {
            float *out = plane + r * wl;
            ptrdiff_t iy = y0 + (ptrdiff_t)r;
            if (iy < 0 || iy >= (ptrdiff_t)h || hi <= lo) {
                memset(out, 0, wl * sizeof(float));
                continue;
            }
            memset(line, 0, lo * sizeof(float));
            memcpy(line + lo, xc + (size_t)iy * w + (lo - pl), (hi - lo) * sizeof(float));
            memset(line + hi, 0, (wl - hi) * sizeof(float));
            for (size_t i = lo; i < hi; i++) {
                uint32_t bits;
                memcpy(&bits, line + i, sizeof bits);
                special |= (bits & 0x7f800000u) == 0x7f800000u;
            }
            for (size_t t = 0; t < ph; t++) {
#pragma clang loop unroll(full)
                for (int q = 0; q < m; q++) out[q * ph + t] = line[t * m + q];
            }
        }
        for (size_t tr = 0; tr < b->rb; tr++) {
            const float *src = plane + tr * (size_t)m * wl;
            // Columns: tv[a][x] = sum_p B^T[a][p] * row p (any column order).
#pragma clang loop vectorize_predicate(enable)
            for (size_t xi = 0; xi < wl; xi++) {
                float d[6];
#pragma clang loop unroll(full)
                for (int p = 0; p < n; p++) d[p] = src[p * wl + xi];
#pragma clang loop unroll(full)
                for (int a = 0; a < n; a++) {
#define LK_COEF(j) LK_WG_BT(m, a, j)
                    LK_WG_DOT(n, LK_COEF, d, tv[a * wl + xi]);
#undef LK_COEF
                }
            }
            // Rows: tile t's cell q is column t * m + q: phase q % m, t + q / m.
            float *vt = v + c * tp + tr * tw;
#pragma clang loop unroll(full)
            for (int a = 0; a < n; a++) {
                const float *ta = tv + a * wl;
#pragma clang loop vectorize_predicate(enable)
                for (size_t t = 0; t < tw; t++) {
                    float e[6];
#pragma clang loop unroll(full)
                    for (int q = 0; q < n; q++) e[q] = ta[(size_t)(q % m) * ph + t + (size_t)(q / m)];
#pragma clang loop unroll(full)
                    for (int bb = 0; bb < n; bb++) {
#define LK_COEF(j) LK_WG_BT(m, bb, j)
                        LK_WG_DOT(n, LK_COEF, e, vt[(size_t)(a * n + bb) * cn * tp + t]);
#undef LK_COEF
                    }
                }
            }
        }
    }
    return special != 0;
}

// Results are written split by phase (res[i][j][t]) and interleaved into the
// output rows by a second loop: written in place, the stride-m stores became
// scatters.
LK_TARGET LK_INLINE void lk_wg_output_of(const lk_wg_block *b, const float *o, const float *bias, float *y,
                                         float *scratch, const int m) {
    const int n = m + 2;
    size_t tw = b->tw, tp = b->tp, ps = b->mp * tp, oh = b->out_height, ow = b->out_width;
    float *res = scratch, *line = res + (size_t)(m * m) * tw;
    for (size_t mm = 0; mm < b->out_channels; mm++) {
        float bm = bias ? bias[mm] : 0.0f;
        float *ym = y + mm * oh * ow;
        for (size_t tr = 0; tr < b->rb; tr++) {
            size_t oy0 = (b->r0 + tr) * (size_t)m;
            if (oy0 >= oh) break;
            const float *ot = o + mm * tp + tr * tw;
#pragma clang loop vectorize_predicate(enable)
            for (size_t t = 0; t < tw; t++) {
                float s[6][6], u[4][6];
#pragma clang loop unroll(full)
                for (int a = 0; a < n; a++) {
#pragma clang loop unroll(full)
                    for (int bb = 0; bb < n; bb++) s[a][bb] = ot[(size_t)(a * n + bb) * ps + t];
                }
#pragma clang loop unroll(full)
                for (int i = 0; i < m; i++) {
#pragma clang loop unroll(full)
                    for (int bb = 0; bb < n; bb++) {
                        float col[6];
#pragma clang loop unroll(full)
                        for (int a = 0; a < n; a++) col[a] = s[a][bb];
#define LK_COEF(j) LK_WG_AT(m, i, j)
                        LK_WG_DOT(n, LK_COEF, col, u[i][bb]);
#undef LK_COEF
                    }
                }
#pragma clang loop unroll(full)
                for (int i = 0; i < m; i++) {
#pragma clang loop unroll(full)
                    for (int j = 0; j < m; j++) {
                        float r;
#define LK_COEF(k) LK_WG_AT(m, j, k)
                        LK_WG_DOT(n, LK_COEF, u[i], r);
#undef LK_COEF
                        res[(size_t)(i * m + j) * tw + t] = r + bm;
                    }
                }
            }
            size_t lines = oh - oy0 < (size_t)m ? oh - oy0 : (size_t)m;
            for (size_t i = 0; i < lines; i++) {
                float *row = ym + (oy0 + i) * ow, *dst = ow == tw * (size_t)m ? row : line;
                const float *ri = res + (size_t)(i * m) * tw;
                for (size_t t = 0; t < tw; t++) {
#pragma clang loop unroll(full)
                    for (int j = 0; j < m; j++) dst[t * m + j] = ri[(size_t)j * tw + t];
                }
                if (dst != row) memcpy(row, line, ow * sizeof(float));
            }
        }
    }
}

LK_TARGET static int lk_wg_input2(const lk_wg_block *b, const float *x, float *v, float *s) { return lk_wg_input_of(b, x, v, s, 2); }
LK_TARGET static int lk_wg_input4(const lk_wg_block *b, const float *x, float *v, float *s) { return lk_wg_input_of(b, x, v, s, 4); }
LK_TARGET static void lk_wg_output2(const lk_wg_block *b, const float *o, const float *bias, float *y, float *s) {
    lk_wg_output_of(b, o, bias, y, s, 2);
}
LK_TARGET static void lk_wg_output4(const lk_wg_block *b, const float *o, const float *bias, float *y, float *s) {
    lk_wg_output_of(b, o, bias, y, s, 4);
}

#ifdef LK_W
#define LK_WG_NR (2 * LK_W)

// An MR x 2W block of C in 2*MR registers over all k steps (as lk_gemm_simd.h's).
LK_TARGET LK_INLINE void lk_wg_block_of(size_t k, const float *a, const float *b, size_t ldb, float *c,
                                        size_t ldc, size_t cols, int masked) {
    lk_lanes m0 = lk_lanes_upto(masked ? cols : LK_W);
    lk_lanes m1 = lk_lanes_upto(masked ? (cols > LK_W ? cols - LK_W : 0) : LK_W);
    lk_v lo[LK_WG_MR], hi[LK_WG_MR];
#pragma clang loop unroll(full)
    for (int i = 0; i < LK_WG_MR; i++) lo[i] = hi[i] = LK_PS(setzero)();
    for (size_t p = 0; p < k; p++, a += LK_WG_MR, b += ldb) {
        lk_v b0 = masked ? lk_load_lanes(b, m0) : LK_PS(loadu)(b);
        lk_v b1 = masked ? lk_load_lanes(b + LK_W, m1) : LK_PS(loadu)(b + LK_W);
#pragma clang loop unroll(full)
        for (int i = 0; i < LK_WG_MR; i++) {
            lk_v ai = LK_PS(set1)(a[i]);
            lo[i] = LK_PS(fmadd)(ai, b0, lo[i]);
            hi[i] = LK_PS(fmadd)(ai, b1, hi[i]);
        }
    }
#pragma clang loop unroll(full)
    for (int i = 0; i < LK_WG_MR; i++) lk_store_pair(c + i * ldc, masked, m0, m1, lo[i], hi[i]);
}

LK_TARGET static void lk_wg_kernel(size_t k, const float *a, const float *b, size_t ldb, float *c, size_t ldc,
                                   size_t cols) {
    if (cols == LK_WG_NR) {
        lk_wg_block_of(k, a, b, ldb, c, ldc, cols, 0);
    } else {
        lk_wg_block_of(k, a, b, ldb, c, ldc, cols, 1);
    }
}

// Two row panels x one vector: the few tiles of a small map (16 on 7x7
// with F(2x2)) would leave half of the 2W-column block idle.
LK_TARGET static void lk_wg_narrow(size_t k, const float *a0, const float *a1, const float *b, size_t ldb,
                                   float *c, size_t ldc, size_t cols) {
    lk_lanes m0 = lk_lanes_upto(cols);
    lk_v x[LK_WG_MR], z[LK_WG_MR];
#pragma clang loop unroll(full)
    for (int i = 0; i < LK_WG_MR; i++) x[i] = z[i] = LK_PS(setzero)();
    for (size_t p = 0; p < k; p++, a0 += LK_WG_MR, a1 += LK_WG_MR, b += ldb) {
        lk_v b0 = lk_load_lanes(b, m0);
#pragma clang loop unroll(full)
        for (int i = 0; i < LK_WG_MR; i++) {
            x[i] = LK_PS(fmadd)(LK_PS(set1)(a0[i]), b0, x[i]);
            z[i] = LK_PS(fmadd)(LK_PS(set1)(a1[i]), b0, z[i]);
        }
    }
#pragma clang loop unroll(full)
    for (int i = 0; i < LK_WG_MR; i++) {
        lk_store_lanes(c + i * ldc, m0, x[i]);
        lk_store_lanes(c + (LK_WG_MR + i) * ldc, m0, z[i]);
    }
}
#else
static void lk_wg_kernel(size_t k, const float *a, const float *b, size_t ldb, float *c, size_t ldc,
                         size_t cols) {
    float acc[LK_WG_MR][LK_WG_NR] = {{0}};
    for (size_t p = 0; p < k; p++, a += LK_WG_MR, b += ldb) {
        for (int i = 0; i < LK_WG_MR; i++) {
            for (size_t j = 0; j < cols; j++) acc[i][j] += a[i] * b[j];
        }
    }
    for (int i = 0; i < LK_WG_MR; i++) memcpy(c + i * ldc, acc[i], cols * sizeof(float));
}

static void lk_wg_narrow(size_t k, const float *a0, const float *a1, const float *b, size_t ldb, float *c,
                         size_t ldc, size_t cols) {
    lk_wg_kernel(k, a0, b, ldb, c, ldc, cols);
    lk_wg_kernel(k, a1, b, ldb, c + LK_WG_MR * ldc, ldc, cols);
}
#endif

const lk_winograd_isa LK_WG_ISA = {LK_WG_MR,     LK_WG_NR, lk_wg_kernel, lk_wg_narrow, {lk_wg_input2, lk_wg_input4},
                                   {lk_wg_output2, lk_wg_output4}};
