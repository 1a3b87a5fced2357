#ifndef LK_NORM_H
#define LK_NORM_H

// Per-plane and per-row normalization (ONNX InstanceNormalization,
// LayerNormalization, RMSNormalization) in double precision, and the double
// sums the training gradients take per channel.

#include <stddef.h>

#include "lk_kernels.h"

/// The mean and variance E[(x - mean)^2] of x[0..<n] (n > 0), summed in
/// double over independent partial sums (so the loops vectorize).
void lk_mean_variance_f32(const float *x, size_t n, double *mean, double *variance);

/// y[i] = (float)((x[i] - mean) * a + b) in double, for i < n (x may be y).
void lk_normalize_f32(const float *x, float *y, size_t n, double mean, double a, double b);

/// The sum of x[0..<n] in double, as lk_mean_variance_f32 sums it: the
/// same bits whatever the path.
double lk_sum_f32(const float *x, size_t n);

/// The sum of a[i] * b[i] over i < n in double: each product exact (two
/// floats' product fits a double), summed as lk_sum_f32 sums.
double lk_dot_f32(const float *a, const float *b, size_t n);

/// The mean of x[i]^2 over x[0..<n] (n > 0), as lk_mean_variance_f32 sums.
double lk_mean_square_f32(const float *x, size_t n);

/// y[i] = (float)((x[i] - mean) * a * scale[i] + bias[i]) in double, for
/// i < n (LayerNormalization's row; bias may be NULL for none; x may be y).
void lk_normalize_affine_f32(const float *x, float *y, size_t n, double mean, double a, const float *scale,
                             const float *bias);

/// The same on a chosen path (LK_ISA_SCALAR: portable C; any other: the
/// AVX2 loops where the CPU has them): for tests that force each path.
void lk_mean_variance_f32_isa(lk_isa isa, const float *x, size_t n, double *mean, double *variance);
void lk_normalize_f32_isa(lk_isa isa, const float *x, float *y, size_t n, double mean, double a, double b);
void lk_normalize_affine_f32_isa(lk_isa isa, const float *x, float *y, size_t n, double mean, double a,
                                 const float *scale, const float *bias);
double lk_mean_square_f32_isa(lk_isa isa, const float *x, size_t n);

#endif
