#ifndef LK_GEMM_H
#define LK_GEMM_H

// Matrix multiplication and 2-D convolution for LayerKit's Gemm and Conv
// layers, Float32, accumulated in Float32. Like the element-wise kernels
// they pick AVX-512F, AVX2+FMA or portable C once per process at run time.

#include <stddef.h>

#include "lk_kernels.h"

/// C = (accumulate ? C : 0) + row_bias[i] + col_bias[j] + alpha * A * B,
/// for C m x n (row-major, row stride ldc), A m x k, B k x n.
///
/// Element (i, p) of A is a[i * a_row + p * a_col], so a transposed A is
/// just other strides. B is row-major with unit column stride and row
/// stride ldb (a transposed B must be copied first). row_bias (m values)
/// and col_bias (n values) may each be NULL. Nothing past the m x n window
/// of C is written. Single-threaded: callers split C's columns or rows.
/// Returns 0, or -1 when a work buffer cannot be allocated (C untouched).
int lk_sgemm_f32(size_t m, size_t n, size_t k, float alpha, const float *a, size_t a_row,
                 size_t a_col, const float *b, size_t ldb, float *c, size_t ldc,
                 const float *row_bias, const float *col_bias, int accumulate);

/// lk_sgemm_f32 for a few rows of A (a batch of one or two) with B given
/// transposed: `bt` holds B's n columns as rows of k floats, `ldbt` apart (a
/// Gemm's transB, as PyTorch exports a Linear layer). Each value of C is
/// one dot product of A's row and a row of `bt`, read once in order: B
/// streams from memory in the order it is stored, with no transposed copy.
/// Its sums are ordered differently from lk_sgemm_f32's (rounding may
/// differ in the last bits); the same for any split of C's columns. Returns
/// 0, or -1 when this CPU lacks `isa` or a row of a transposed A cannot be
/// gathered (C untouched).
int lk_sgemv_f32_bt(lk_isa isa, size_t m, size_t n, size_t k, float alpha, const float *a, size_t a_row,
                    size_t a_col, const float *bt, size_t ldbt, float *c, size_t ldc, const float *row_bias,
                    const float *col_bias, int accumulate);

/// lk_sgemm_f32 forced onto `isa`, for tests and benchmarks. Returns -1
/// without touching C when this CPU lacks `isa`.
int lk_sgemm_f32_isa(lk_isa isa, size_t m, size_t n, size_t k, float alpha, const float *a,
                     size_t a_row, size_t a_col, const float *b, size_t ldb, float *c, size_t ldc,
                     const float *row_bias, const float *col_bias, int accumulate);

/// Columns of B's packed panels on `isa` (nr; 0 when this CPU lacks `isa`).
size_t lk_sgemm_column_block(lk_isa isa);

/// Floats of B (k x n) packed by lk_sgemm_pack_b.
size_t lk_sgemm_packed_b_size(lk_isa isa, size_t k, size_t n);

/// Packs B (k x n, row stride ldb) once as panels of nr columns, k rows of
/// nr values each (zeros past n): what lk_sgemm_f32 copies for every block
/// of A's rows on every call. Returns 0, or -1 when this CPU lacks `isa`.
int lk_sgemm_pack_b(lk_isa isa, size_t k, size_t n, const float *b, size_t ldb, float *packed);

/// lk_sgemm_f32 with B packed by lk_sgemm_pack_b for the same `isa`:
/// `packed_b` points at the panel of the call's first column (columns from
/// a multiple of nr: packed + j0 * k), n columns from there. Same results,
/// bit for bit. Returns 0, -1 when this CPU lacks `isa` or a work buffer
/// cannot be allocated.
int lk_sgemm_f32_packed_b(lk_isa isa, size_t m, size_t n, size_t k, float alpha, const float *a, size_t a_row,
                          size_t a_col, const float *packed_b, float *c, size_t ldc, const float *row_bias,
                          const float *col_bias, int accumulate);

/// The geometry of a 2-D convolution of one image (ONNX Conv, NCHW).
typedef struct {
    size_t channels, height, width;              ///< input C, H, W
    size_t out_channels, out_height, out_width;  ///< output M, OH, OW
    size_t kernel_h, kernel_w;
    size_t stride_h, stride_w;
    size_t dilation_h, dilation_w;
    size_t pad_top, pad_left;                    ///< leading pads (trailing ones follow from OH, OW)
    size_t group;                                ///< C and M are multiples of it
} lk_conv2d_shape;

/// Output pixels [first, first + count) (row-major over OH x OW) of every
/// output channel of one image: y[m][p] = bias[m] + sum over the group's
/// input channels and the kernel window of w[m][c][ky][kx] * x[c][iy][ix],
/// zero outside the input. x is C x H x W, w M x C/group x kH x kW, y
/// M x OH x OW; bias (M values) may be NULL. A 1x1 convolution of stride 1
/// without pads runs as one matrix product per group, one with output rows
/// under half a vector wide and many output channels per group as im2col
/// and a matrix product per group, every other one as a direct loop over
/// zero-padded input rows. Packs the weights and allocates its scratch on
/// every call (layers use lk_conv2d_f32_packed). Returns 0, or -1 when a
/// work buffer cannot be allocated.
int lk_conv2d_f32(const lk_conv2d_shape *shape, const float *x, const float *w, const float *bias,
                  float *y, size_t first, size_t count);

/// lk_conv2d_f32 forced onto `isa`, for tests and benchmarks. Returns -1
/// without touching y when this CPU lacks `isa`.
int lk_conv2d_f32_isa(lk_isa isa, const lk_conv2d_shape *shape, const float *x, const float *w,
                      const float *bias, float *y, size_t first, size_t count);

/// How lk_conv2d_f32_packed computes: AUTO (lk_conv2d_path's choice), a
/// direct loop over zero-padded input rows, im2col (a gather, for a 1x1
/// kernel just the strided pixels) and a matrix product, a matrix product
/// straight on the input (1x1, stride 1, no pads), or the depthwise kernel
/// (group == C == M), or CHANNELS: the direct loop vectorized along output
/// channels instead of pixels (outputs narrower than half a vector; a 1x1
/// kernel reads its input in place).
/// Tests force each one; results agree bitwise, since
/// every path adds bias, then one product a tap in (c, ky, kx) order.
typedef enum {
    LK_CONV_AUTO = 0,
    LK_CONV_DIRECT = 1,
    LK_CONV_IM2COL = 2,
    LK_CONV_POINTWISE = 3,
    LK_CONV_DEPTHWISE = 4,
    LK_CONV_CHANNELS = 5,
} lk_conv_path;

/// The path AUTO takes for `shape` on `isa` (AUTO itself when this CPU lacks `isa`).
lk_conv_path lk_conv2d_path(lk_isa isa, const lk_conv2d_shape *shape);

/// The weight layout lk_conv2d_path's choice reads: CHANNELS, or AUTO for
/// the layout every other path reads. Depends on the weights' geometry
/// only (channels, kernel, group), not on the input's extents, so a layer
/// can pack at creation.
lk_conv_path lk_conv2d_layout(lk_isa isa, const lk_conv2d_shape *shape);

/// Floats of the packed weights of `shape` on `isa` for `path` (0 when this
/// CPU lacks `isa`). CHANNELS reads a layout of its own; every other path
/// (AUTO included) reads one common layout.
size_t lk_conv2d_packed_size(lk_isa isa, lk_conv_path path, const lk_conv2d_shape *shape);

/// Packs w (M x C/group x kH x kW) into `packed` (lk_conv2d_packed_size
/// floats) for `isa` and `path`'s layout: per group, panels of mr output
/// channels (CHANNELS: nr) with each tap's weights together (depthwise: a
/// plain copy). Depends on the weights' geometry only, not on the input's
/// size. Returns 0, or -1 when this CPU lacks `isa`.
int lk_conv2d_pack_weights(lk_isa isa, lk_conv_path path, const lk_conv2d_shape *shape, const float *w,
                           float *packed);

/// Output-channel ranges given to lk_conv2d_f32_packed on `path` start at a
/// multiple of this within their group (or at a group's start); 0 when
/// this CPU lacks `isa`.
size_t lk_conv2d_channel_block(lk_isa isa, lk_conv_path path, const lk_conv2d_shape *shape);

/// Floats of scratch one lk_conv2d_f32_packed call of up to `count` pixels
/// needs on `path` (any channel range).
size_t lk_conv2d_work_size(lk_isa isa, lk_conv_path path, const lk_conv2d_shape *shape, size_t count);

/// Output channels [m0, m1) and pixels [first, first + count) of one image,
/// as lk_conv2d_f32 computes them, from weights packed by
/// lk_conv2d_pack_weights for the same `isa`; `work`: lk_conv2d_work_size
/// floats (nothing is allocated). Every output is bias, then the products in
/// (c, ky, kx) order, so the split of a layer into calls changes no bit.
/// Returns 0, or -1 for a CPU without `isa`, a path that does not fit the
/// shape, or a range out of bounds or not on a channel block.
int lk_conv2d_f32_packed(lk_isa isa, lk_conv_path path, const lk_conv2d_shape *shape, const float *x,
                         const float *packed, const float *bias, float *y, size_t m0, size_t m1, size_t first,
                         size_t count, float *work);

/// For tests: the depthwise path's choice between its kernels that read
/// straight from the input (masked loads: the plane kernel at stride 1 on
/// output rows as wide as input rows, the stride-2 kernel at column stride
/// 2) and its row kernel on a padded copy. 0: by shape (the default; the
/// plane kernel on small maps only), 1: the unpadded kernels wherever they
/// fit, -1: never. All give the same bits.
void lk_depthwise_force_unpadded(int mode);

#endif
