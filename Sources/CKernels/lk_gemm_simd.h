// The body of lk_gemm_avx2.c and lk_gemm_avx512.c, written once (no include
// guard: each includes it once after defining, for its instruction set,
//   LK_TARGET   the target attribute of every function here
//   LK_W        floats a vector (8, 16)
//   lk_v        the vector type
//   LK_PS(op)   the _ps intrinsic named op
//   LK_GEMM_MR  rows of the register block (its columns: two vectors)
//   LK_GEMM_ISA the lk_gemm_isa to define).
// The microkernel keeps an MR x 2W block of C in 2*MR registers: each k
// step loads two vectors of B, broadcasts MR values of A and does 2*MR
// FMAs (AVX2 6x16: 12 of 16 registers; AVX-512 8x32: 16 of 32).

#define LK_GEMM_NR (2 * LK_W)

LK_TARGET static void lk_gemm_kernel(size_t k, const float *a, const float *b, size_t ldb, float *c,
                                     size_t ldc) {
    lk_v lo[LK_GEMM_MR], hi[LK_GEMM_MR];
#pragma clang loop unroll(full)
    for (int i = 0; i < LK_GEMM_MR; i++) {
        lo[i] = LK_PS(loadu)(c + i * ldc);
        hi[i] = LK_PS(loadu)(c + i * ldc + LK_W);
    }
    for (size_t p = 0; p < k; p++) {
        lk_v b0 = LK_PS(loadu)(b), b1 = LK_PS(loadu)(b + LK_W);
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
        LK_PS(storeu)(c + i * ldc, lo[i]);
        LK_PS(storeu)(c + i * ldc + LK_W, hi[i]);
    }
}

LK_TARGET static void lk_axpy(size_t n, float alpha, const float *x, size_t x_stride, float *y) {
    size_t i = 0;
    if (x_stride == 1) {
        lk_v va = LK_PS(set1)(alpha);
        for (; i + LK_W <= n; i += LK_W) {
            LK_PS(storeu)(y + i, LK_PS(fmadd)(va, LK_PS(loadu)(x + i), LK_PS(loadu)(y + i)));
        }
    }
    for (; i < n; i++) y[i] += alpha * x[i * x_stride];
}

const lk_gemm_isa LK_GEMM_ISA = {LK_GEMM_MR, LK_GEMM_NR, lk_gemm_kernel, lk_axpy};
