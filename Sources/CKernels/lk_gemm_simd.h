// The body of lk_gemm_avx2.c and lk_gemm_avx512.c, written once (no include
// guard: each includes it once after defining, for its instruction set,
//   LK_TARGET   the target attribute of every function here
//   LK_W        floats a vector (8, 16)
//   lk_v        the vector type
//   LK_PS(op)   the _ps intrinsic named op
//   LK_GEMM_MR  rows of the register block (its columns: two vectors)
//   LK_GEMM_ISA the lk_gemm_isa to define
// and lk_lanes, lk_lanes_upto(n) (lanes [0, min(n, LK_W))), lk_load_lanes(p,
// k), lk_store_lanes(p, k, v): masked loads and stores that touch only k's
// lanes).
//
// The microkernel keeps an MR x 2W block of C in 2*MR registers: each k
// step loads two vectors of B, broadcasts MR values of A and does 2*MR
// FMAs (AVX2 6x16: 12 of 16 registers; AVX-512 8x32: 16 of 32). A block
// narrower than 2W columns goes through masked loads and stores. The direct
// convolution's block (lk_conv_rows) has the same MR x 2W shape, its B rows
// read in place from the padded input at per-tap offsets.

#if LK_GEMM_MR > 8
#error "lk_conv_rows instantiates at most 8 rows"
#endif

#define LK_GEMM_NR (2 * LK_W)

LK_TARGET LK_INLINE void lk_gemm_block(size_t k, const float *a, const float *b, size_t ldb, float *c,
                                       size_t ldc, size_t cols, int masked) {
    lk_lanes m0 = lk_lanes_upto(masked ? cols : LK_W);
    lk_lanes m1 = lk_lanes_upto(masked ? (cols > LK_W ? cols - LK_W : 0) : LK_W);
    lk_v lo[LK_GEMM_MR], hi[LK_GEMM_MR];
#pragma clang loop unroll(full)
    for (int i = 0; i < LK_GEMM_MR; i++) {
        lo[i] = masked ? lk_load_lanes(c + i * ldc, m0) : LK_PS(loadu)(c + i * ldc);
        hi[i] = masked ? lk_load_lanes(c + i * ldc + LK_W, m1) : LK_PS(loadu)(c + i * ldc + LK_W);
    }
    for (size_t p = 0; p < k; p++) {
        lk_v b0 = masked ? lk_load_lanes(b, m0) : LK_PS(loadu)(b);
        lk_v b1 = masked ? lk_load_lanes(b + LK_W, m1) : LK_PS(loadu)(b + LK_W);
#pragma clang loop unroll(full)
        for (int i = 0; i < LK_GEMM_MR; i++) {
            lk_v ai = LK_PS(set1)(a[i]);
            lo[i] = LK_PS(fmadd)(ai, b0, lo[i]);
            hi[i] = LK_PS(fmadd)(ai, b1, hi[i]);
        }
        a += LK_GEMM_MR;
        b += ldb;
    }
#pragma clang loop unroll(full)
    for (int i = 0; i < LK_GEMM_MR; i++) {
        if (masked) {
            lk_store_lanes(c + i * ldc, m0, lo[i]);
            lk_store_lanes(c + i * ldc + LK_W, m1, hi[i]);
        } else {
            LK_PS(storeu)(c + i * ldc, lo[i]);
            LK_PS(storeu)(c + i * ldc + LK_W, hi[i]);
        }
    }
}

LK_TARGET static void lk_gemm_kernel(size_t k, const float *a, const float *b, size_t ldb, float *c,
                                     size_t ldc, size_t cols) {
    if (cols == LK_GEMM_NR) {
        lk_gemm_block(k, a, b, ldb, c, ldc, cols, 0);
    } else {
        lk_gemm_block(k, a, b, ldb, c, ldc, cols, 1);
    }
}

LK_TARGET static void lk_gemm_pack_b(size_t k, size_t cols, const float *b, size_t ldb, float *dst) {
    lk_lanes m0 = lk_lanes_upto(cols), m1 = lk_lanes_upto(cols > LK_W ? cols - LK_W : 0);
    for (size_t p = 0; p < k; p++, b += ldb, dst += LK_GEMM_NR) {
        LK_PS(storeu)(dst, lk_load_lanes(b, m0));
        LK_PS(storeu)(dst + LK_W, lk_load_lanes(b + LK_W, m1));
    }
}

// c[j] += alpha * sum_p a[p * a_col] * b[p * ldb + j]: four vectors of
// columns at a time, B streamed row by row.
LK_TARGET static void lk_gemv(size_t k, size_t n, float alpha, const float *a, size_t a_col, const float *b,
                              size_t ldb, float *c) {
    for (size_t j = 0; j < n; j += 4 * LK_W) {
        lk_lanes m[4];
        lk_v acc[4];
#pragma clang loop unroll(full)
        for (int v = 0; v < 4; v++) {
            size_t start = j + (size_t)v * LK_W;
            m[v] = lk_lanes_upto(start < n ? n - start : 0);
            acc[v] = LK_PS(setzero)();
        }
        for (size_t p = 0; p < k; p++) {
            lk_v ap = LK_PS(set1)(alpha * a[p * a_col]);
            const float *row = b + p * ldb + j;
#pragma clang loop unroll(full)
            for (int v = 0; v < 4; v++) acc[v] = LK_PS(fmadd)(ap, lk_load_lanes(row + v * LK_W, m[v]), acc[v]);
        }
#pragma clang loop unroll(full)
        for (int v = 0; v < 4; v++) {
            float *out = c + j + v * LK_W;
            lk_store_lanes(out, m[v], LK_PS(add)(lk_load_lanes(out, m[v]), acc[v]));
        }
    }
}

// The direct convolution's register block: R output channels (a constant
// after inlining) x NV vectors of pixels, all in registers over the k taps.
// Vector v reads b[v] + off[p] and writes c[v], masked to lanes m[v]: the
// two halves of one row's pixels, or the same pixels of two rows.
LK_TARGET LK_INLINE void lk_conv_block(size_t k, const float *a, const float *const b[2],
                                       const ptrdiff_t *off, const float *bias, float *const c[2],
                                       size_t ldc, const lk_lanes m[2], const int R, const int NV) {
    lk_v acc[LK_GEMM_MR][2];
#pragma clang loop unroll(full)
    for (int i = 0; i < R; i++) {
        acc[i][0] = acc[i][1] = bias ? LK_PS(set1)(bias[i]) : LK_PS(setzero)();
    }
    for (size_t p = 0; p < k; p++, a += R) {
        lk_v x0 = lk_load_lanes(b[0] + off[p], m[0]), x1 = NV > 1 ? lk_load_lanes(b[1] + off[p], m[1]) : x0;
#pragma clang loop unroll(full)
        for (int i = 0; i < R; i++) {
            lk_v ai = LK_PS(set1)(a[i]);
            acc[i][0] = LK_PS(fmadd)(ai, x0, acc[i][0]);
            if (NV > 1) acc[i][1] = LK_PS(fmadd)(ai, x1, acc[i][1]);
        }
    }
#pragma clang loop unroll(full)
    for (int i = 0; i < R; i++) {
        lk_store_lanes(c[0] + i * ldc, m[0], acc[i][0]);
        if (NV > 1) lk_store_lanes(c[1] + i * ldc, m[1], acc[i][1]);
    }
}

// R rows: a line's pixels two vectors at a time (one for a last short
// piece); lines of one vector or less two at a time, so that narrow
// outputs (7 or 14 pixels wide) still keep 2R accumulators busy.
LK_TARGET LK_INLINE void lk_conv_rows_of(size_t k, const float *a, const float *b, const ptrdiff_t *off,
                                         size_t n, size_t lines, size_t b_line, const float *bias, float *c,
                                         size_t ldc, size_t c_line, const int R) {
    if (n <= LK_W) {
        lk_lanes m[2] = {lk_lanes_upto(n), lk_lanes_upto(n)};
        for (size_t t = 0; t < lines; t += 2) {
            const float *bt[2] = {b + t * b_line, b + (t + 1) * b_line};
            float *ct[2] = {c + t * c_line, c + (t + 1) * c_line};
            if (t + 1 < lines) {
                lk_conv_block(k, a, bt, off, bias, ct, ldc, m, R, 2);
            } else {
                lk_conv_block(k, a, bt, off, bias, ct, ldc, m, R, 1);
            }
        }
        return;
    }
    for (size_t t = 0; t < lines; t++) {
        for (size_t j = 0; j < n; j += 2 * LK_W) {
            size_t cols = n - j < 2 * LK_W ? n - j : 2 * LK_W;
            const float *bj = b + t * b_line + j;
            float *cj = c + t * c_line + j;
            const float *bt[2] = {bj, bj + LK_W};
            float *ct[2] = {cj, cj + LK_W};
            lk_lanes m[2] = {lk_lanes_upto(cols), lk_lanes_upto(cols > LK_W ? cols - LK_W : 0)};
            if (cols > LK_W) {
                lk_conv_block(k, a, bt, off, bias, ct, ldc, m, R, 2);
            } else {
                lk_conv_block(k, a, bt, off, bias, ct, ldc, m, R, 1);
            }
        }
    }
}

LK_TARGET static void lk_conv_rows(size_t k, size_t rows, const float *a, const float *b, const ptrdiff_t *off,
                                   size_t n, size_t lines, size_t b_line, const float *bias, float *c, size_t ldc,
                                   size_t c_line) {
    switch (rows) {
#define LK_CONV_ROWS_CASE(r)                                                                                   \
    case r: lk_conv_rows_of(k, a, b, off, n, lines, b_line, bias, c, ldc, c_line, r); break;
    LK_CONV_ROWS_CASE(1)
    LK_CONV_ROWS_CASE(2)
    LK_CONV_ROWS_CASE(3)
    LK_CONV_ROWS_CASE(4)
    LK_CONV_ROWS_CASE(5)
    LK_CONV_ROWS_CASE(6)
#if LK_GEMM_MR > 6
    LK_CONV_ROWS_CASE(7)
    LK_CONV_ROWS_CASE(8)
#endif
#undef LK_CONV_ROWS_CASE
    default: break;
    }
}

const lk_gemm_isa LK_GEMM_ISA = {LK_GEMM_MR, LK_GEMM_NR, lk_gemm_kernel, lk_gemm_pack_b, lk_gemv, lk_conv_rows};
