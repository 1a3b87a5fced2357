#ifndef LK_GEMM_INTERNAL_H
#define LK_GEMM_INTERNAL_H

// The per-instruction-set halves of lk_gemm.h, used by its driver
// (lk_gemm.c) only after it checked the CPU.

#include "lk_gemm.h"

/// C[mr x cols] += A * B over k steps (cols <= nr): `a` is packed, mr
/// values a step; `b` is cols values a step, `ldb` floats apart; C rows are
/// `ldc` floats apart. Nothing past `cols` columns is read or written.
typedef void lk_gemm_kernel_fn(size_t k, const float *a, const float *b, size_t ldb, float *c,
                               size_t ldc, size_t cols);

/// Copies k rows of `cols` <= nr values, `ldb` floats apart, to `dst` as
/// rows of nr values (zeros past cols).
typedef void lk_gemm_pack_b_fn(size_t k, size_t cols, const float *b, size_t ldb, float *dst);

/// c[j] += alpha * sum_p a[p * a_col] * b[p * ldb + j] for j in [0, n):
/// one row of C, B streamed once.
typedef void lk_gemv_fn(size_t k, size_t n, float alpha, const float *a, size_t a_col, const float *b,
                        size_t ldb, float *c);

/// The direct convolution's block (lk_conv2d.c): for `rows` <= mr output
/// channels i, `lines` output rows t and n output pixels j of each,
/// c[i * ldc + t * c_line + j] =
///     bias[i] + sum over p < k of a[p * rows + i] * b[off[p] + t * b_line + j]
/// (bias may be NULL: 0). Tap p's input cells for a row are contiguous (the
/// input was padded and split by column stride first).
typedef void lk_conv_rows_fn(size_t k, size_t rows, const float *a, const float *b, const ptrdiff_t *off,
                             size_t n, size_t lines, size_t b_line, const float *bias, float *c, size_t ldc,
                             size_t c_line);

/// One instruction set's microkernel (its register block), B packing,
/// single-row product and direct convolution block.
typedef struct {
    size_t mr, nr;
    lk_gemm_kernel_fn *kernel;
    lk_gemm_pack_b_fn *pack_b;
    lk_gemv_fn *gemv;
    lk_conv_rows_fn *conv_rows;
} lk_gemm_isa;

/// The largest register block of any kernel, for edge tiles.
#define LK_GEMM_MAX_TILE (8 * 32)
/// The widest nr.
#define LK_GEMM_MAX_NR 32

/// The kernels for `isa` (which the caller checked this CPU has).
const lk_gemm_isa *lk_gemm_for(lk_isa isa);

/// lk_sgemm_f32 on `isa`'s kernels.
int lk_sgemm_run(const lk_gemm_isa *isa, size_t m, size_t n, size_t k, float alpha, const float *a,
                 size_t a_row, size_t a_col, const float *b, size_t ldb, float *c, size_t ldc,
                 const float *row_bias, const float *col_bias, int accumulate);

#if defined(__x86_64__)
#define LK_HAVE_X86_GEMM 1
extern const lk_gemm_isa lk_gemm_avx2, lk_gemm_avx512;
#endif

#endif
