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

/// lk_sgemm_f32 forced onto `isa`, for tests and benchmarks. Returns -1
/// without touching C when this CPU lacks `isa`.
int lk_sgemm_f32_isa(lk_isa isa, size_t m, size_t n, size_t k, float alpha, const float *a,
                     size_t a_row, size_t a_col, const float *b, size_t ldb, float *c, size_t ldc,
                     const float *row_bias, const float *col_bias, int accumulate);

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
/// zero-padded input rows. Returns 0, or -1 when a work buffer cannot be
/// allocated.
int lk_conv2d_f32(const lk_conv2d_shape *shape, const float *x, const float *w, const float *bias,
                  float *y, size_t first, size_t count);

/// lk_conv2d_f32 forced onto `isa`, for tests and benchmarks. Returns -1
/// without touching y when this CPU lacks `isa`.
int lk_conv2d_f32_isa(lk_isa isa, const lk_conv2d_shape *shape, const float *x, const float *w,
                      const float *bias, float *y, size_t first, size_t count);

#endif
