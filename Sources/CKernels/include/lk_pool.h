#ifndef LK_POOL_H
#define LK_POOL_H

// 2D max and average pooling over NCHW planes (ONNX MaxPool, AveragePool,
// GlobalMaxPool, GlobalAveragePool), accumulating in float.

#include <stddef.h>

#include "lk_kernels.h"

/// What a window computes.
typedef enum {
    LK_POOL_MAX = 0,             ///< The largest input cell (NaN cells are skipped; an empty window is -inf).
    LK_POOL_AVERAGE,             ///< The mean of the input cells the window covers (pad cells excluded).
    LK_POOL_AVERAGE_INCLUDE_PAD, ///< The sum over input cells divided by the cells inside the padded extent.
} lk_pool_kind;

/// The geometry of a 2D pooling window. Window (oy, ox) covers input rows
/// oy * stride_h - pad_top + i * dilation_h (i < kernel_h), and likewise
/// columns; the padded extent is rows [-pad_top, in_h + pad_bottom). Pads
/// may be negative (skipped input cells).
typedef struct {
    long in_h, in_w, out_h, out_w;
    long kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w;
    long pad_top, pad_left, pad_bottom, pad_right;
    lk_pool_kind kind;
} lk_pool2d_params;

/// Pools `planes` consecutive planes of in_h x in_w floats from `x` into
/// planes of out_h x out_w floats in `y` (which must not overlap `x`).
/// An average over no cell is 0. Vectorized along output rows. `scratch`
/// holds lk_pool2d_scratch_floats(params) floats (a padded row and the
/// per-column divisors).
void lk_pool2d_f32(const lk_pool2d_params *params, const float *x, float *y, size_t planes, float *scratch);

/// lk_pool2d_f32 on a chosen path (LK_ISA_SCALAR: the portable loops; any
/// other: the AVX2 ones where the CPU has them), for tests.
void lk_pool2d_f32_isa(lk_isa isa, const lk_pool2d_params *params, const float *x, float *y, size_t planes,
                       float *scratch);

/// The backward pass of lk_pool2d_f32 over `planes` planes: `dx` (in_h x
/// in_w a plane, not overlapping `x` or `g`) receives dLoss/dInput from `x`,
/// the forward input, and `g`, dLoss/dOutput (out_h x out_w a plane). An
/// average sends g / count to each cell of the window inside the input; a
/// maximum sends g to the window's first maximal cell in row-major window
/// order (a NaN counts as the maximum, as the forward pass propagates it).
/// `scratch` holds lk_pool2d_backward_scratch_floats(params) floats.
void lk_pool2d_backward_f32(const lk_pool2d_params *params, const float *x, const float *g, float *dx, size_t planes,
                            float *scratch);

/// The floats of scratch lk_pool2d_backward_f32 needs for `params` (an
/// average's column divisors and a row of shares).
size_t lk_pool2d_backward_scratch_floats(const lk_pool2d_params *params);

/// The floats of scratch lk_pool2d_f32 needs for `params`.
size_t lk_pool2d_scratch_floats(const lk_pool2d_params *params);

/// The mean (`max` zero) or maximum (`max` nonzero; NaN skipped, -inf for
/// an empty plane) of each of `planes` consecutive planes of `plane` floats
/// of `x`, into y[0..<planes].
void lk_global_pool_f32(int max, const float *x, float *y, size_t plane, size_t planes);

#endif
