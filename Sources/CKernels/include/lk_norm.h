#ifndef LK_NORM_H
#define LK_NORM_H

// Per-plane normalization (ONNX InstanceNormalization) in double precision.

#include <stddef.h>

#include "lk_kernels.h"

/// The mean and variance E[(x - mean)^2] of x[0..<n] (n > 0), summed in
/// double over independent partial sums (so the loops vectorize).
void lk_mean_variance_f32(const float *x, size_t n, double *mean, double *variance);

/// y[i] = (float)((x[i] - mean) * a + b) in double, for i < n (x may be y).
void lk_normalize_f32(const float *x, float *y, size_t n, double mean, double a, double b);

/// The same on a chosen path (LK_ISA_SCALAR: portable C; any other: the
/// AVX2 loops where the CPU has them): for tests that force each path.
void lk_mean_variance_f32_isa(lk_isa isa, const float *x, size_t n, double *mean, double *variance);
void lk_normalize_f32_isa(lk_isa isa, const float *x, float *y, size_t n, double mean, double a, double b);

#endif
