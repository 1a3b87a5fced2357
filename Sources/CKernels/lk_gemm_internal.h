#ifndef LK_GEMM_INTERNAL_H
#define LK_GEMM_INTERNAL_H

// The per-instruction-set halves of lk_gemm.h, used by its driver
// (lk_gemm.c) only after it checked the CPU.

#include "lk_gemm.h"

/// C[mr x cols] += A * B over k steps (cols <= nr): `a` is packed, mr
/// values a step; `b` is cols values a step, `ldb` floats apart; C rows are
/// `ldc` floats apart. Nothing past `cols` columns is read or written. With
/// `bias` (mr values), C = bias[i] + A * B instead: C is not read.
typedef void lk_gemm_kernel_fn(size_t k, const float *a, const float *b, size_t ldb, float *c,
                               size_t ldc, size_t cols, const float *bias);

/// Copies k rows of `cols` <= nr values, `ldb` floats apart, to `dst` as
/// rows of nr values (zeros past cols).
typedef void lk_gemm_pack_b_fn(size_t k, size_t cols, const float *b, size_t ldb, float *dst);

/// c[j] += alpha * sum_p a[p * a_col] * b[p * ldb + j] for j in [0, n):
/// one row of C, B streamed once.
typedef void lk_gemv_fn(size_t k, size_t n, float alpha, const float *a, size_t a_col, const float *b,
                        size_t ldb, float *c);

/// c[j] += alpha * sum_p a[p] * bt[j * ldbt + p] for j in [0, n): one row
/// of C from B given as its n rows of k (a Gemm's transB), each row read
/// once, in order, against a contiguous a.
typedef void lk_gemv_bt_fn(size_t k, size_t n, float alpha, const float *a, const float *bt, size_t ldbt,
                           float *c);

/// The direct convolution's block (lk_conv2d.c): for `rows` <= mr output
/// channels i, `lines` output rows t and n output pixels j of each,
/// c[i * ldc + t * c_line + j] =
///     bias[i] + sum over p < k of a[p * mr + i] * b[off[p] + t * b_line + j]
/// (`a`: one packed weight panel, mr values a tap, the same panel the matrix
/// product's microkernel reads)
/// (bias may be NULL: 0). Tap p's input cells for a row are contiguous (the
/// input was padded and split by column stride first).
typedef void lk_conv_rows_fn(size_t k, size_t rows, const float *a, const float *b, const ptrdiff_t *off,
                             size_t n, size_t lines, size_t b_line, const float *bias, float *c, size_t ldc,
                             size_t c_line);

/// The depthwise convolution's row (lk_depthwise.c): c[j] = bias + sum over
/// t < taps of w[t] * b[off[t] + j], for j < n.
typedef void lk_dw_row_fn(size_t taps, const float *w, const float *b, const ptrdiff_t *off, size_t n,
                          float bias, float *c);

/// Two output rows of a k x k (3 or 5) depthwise kernel of row stride 1,
/// dilation 1: c0[j] = bias + sum over ky, kx of w[ky * k + kx] *
/// b[ky * line + col[kx] + j] and c1 likewise from b + line, j < n.
typedef void lk_dw_pair_fn(size_t k, const float *w, const float *b, const ptrdiff_t *col, size_t line, size_t n,
                           float bias, float *c0, float *c1);

/// Whole channels of a stride-1 depthwise convolution whose output rows are
/// as wide as its input rows (lk_depthwise.c): for m < channels and j < n,
/// y[m * out_plane + j] = bias[m] + sum over t < taps of w[m * taps + t] *
/// (lane j % W of vector j / W inside the image for tap t, bit of
/// bits[(j / W) * taps + t] ? x[m * in_plane + j + off[t]] : 0), W = nr / 2.
typedef void lk_dw_plane_fn(size_t taps, const float *w, const float *bias, size_t channels, const float *x,
                            size_t in_plane, const ptrdiff_t *off, const uint32_t *bits, size_t n, float *y,
                            size_t out_plane);

/// Whole channels of a depthwise convolution at column stride 2 (any row
/// stride, dilation and kernel size; lk_depthwise.c), output pixels
/// [first, first + count) of each of `channels` channels from x, w, bias
/// and y at channel 0: y = bias + sum over (ky, kx) in order of w * x at
/// input row oy * stride_h + ky * dilation_h - pad_top and column
/// 2 * ox + col[kx], 0 outside the image. Bit l of bits[kx * V + v]
/// (V = ceil(out_width / W), W = nr / 2) says whether column
/// 2 * v * W + col[kx] + l is inside a row, for l < 2W.
typedef void lk_dw_s2_fn(const lk_conv2d_shape *s, const float *w, const float *bias, size_t channels,
                         const float *x, float *y, size_t first, size_t count, const ptrdiff_t *col,
                         const uint32_t *bits);

/// The channel-vectorized direct block (lk_conv2d.c): for `pixels` <= mr
/// output pixels r and nr output channels j, tile[r * nr + j] = bias[j] +
/// sum over p < k of w[p * nr + j] * b[off[p] + r] (bias: nr values).
typedef void lk_conv_cv_fn(size_t k, size_t pixels, const float *w, const float *b, const ptrdiff_t *off,
                           const float *bias, float *tile);

/// One instruction set's microkernel (its register block), B packing,
/// single-row product, direct convolution block and depthwise row.
typedef struct {
    size_t mr, nr;
    lk_gemm_kernel_fn *kernel;
    lk_gemm_pack_b_fn *pack_b;
    lk_gemv_fn *gemv;
    lk_gemv_bt_fn *gemv_bt;
    lk_conv_rows_fn *conv_rows;
    lk_dw_row_fn *dw_row;
    lk_dw_pair_fn *dw_pair; ///< NULL: lk_dw_row row by row
    lk_conv_cv_fn *conv_cv;
    lk_dw_plane_fn *dw_plane; ///< NULL: lk_dw_row on a padded copy
    lk_dw_s2_fn *dw_s2;       ///< NULL: lk_dw_row on a padded copy
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

/// C[m x n] = row_bias[i] + A * B with A pre-packed: ceil(m / mr) panels of
/// k steps of mr values (a[panel][p][i], rows past m zero), as
/// lk_conv2d_pack_weights writes them; B row-major, ldb floats a row.
/// `bpack`: LK_KC * nr floats of scratch, 64-byte aligned. No allocation.
void lk_sgemm_packed_run(const lk_gemm_isa *isa, size_t m, size_t n, size_t k, const float *apacked,
                         const float *b, size_t ldb, float *c, size_t ldc, const float *row_bias, float *bpack);

/// K's block in the matrix products (B panels of LK_KC x nr stay in L1).
#define LK_KC 256

/// The depthwise convolution (lk_depthwise.c) of output channels [m0, m1)
/// and pixels [first, first + count); `work`: lk_depthwise_work_size floats.
void lk_depthwise_run(const lk_gemm_isa *isa, const lk_conv2d_shape *s, const float *x, const float *w,
                      const float *bias, float *y, size_t m0, size_t m1, size_t first, size_t count, float *work);
size_t lk_depthwise_work_size(const lk_conv2d_shape *s, size_t count);

/// The padded, column-phase-split copy of the input rows a pixel range reads
/// (lk_conv2d.c; the direct and depthwise paths share it).
typedef struct {
    size_t first_row, rows, phase_w, row, plane;
} lk_direct_layout;
lk_direct_layout lk_direct_layout_for(const lk_conv2d_shape *s, size_t first, size_t count);
/// The most floats of one channel's layout for any `count` pixels.
size_t lk_direct_plane_max(const lk_conv2d_shape *s, size_t count);
void lk_direct_pad(const lk_conv2d_shape *s, const lk_direct_layout *l, const float *x, size_t cg,
                   float *restrict dst, float *restrict line);

#if defined(__x86_64__)
#define LK_HAVE_X86_GEMM 1
extern const lk_gemm_isa lk_gemm_avx2, lk_gemm_avx512;
#endif

#endif
