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
// narrower than 2W columns goes through masked loads and stores.

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

LK_TARGET static void lk_axpy(size_t n, float alpha, const float *x, size_t x_stride, float *y) {
    if (x_stride != 1) {
        for (size_t i = 0; i < n; i++) y[i] += alpha * x[i * x_stride];
        return;
    }
    lk_v va = LK_PS(set1)(alpha);
    for (size_t i = 0; i < n; i += LK_W) {
        lk_lanes m = lk_lanes_upto(n - i);
        lk_store_lanes(y + i, m, LK_PS(fmadd)(va, lk_load_lanes(x + i, m), lk_load_lanes(y + i, m)));
    }
}

const lk_gemm_isa LK_GEMM_ISA = {LK_GEMM_MR, LK_GEMM_NR, lk_gemm_kernel, lk_gemm_pack_b, lk_gemv, lk_axpy};
