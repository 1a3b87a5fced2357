// lk_norm.h: the sums of InstanceNormalization, LayerNormalization and
// RMSNormalization. A serial double sum is one dependent add a float (4
// cycles each): the Swift loops it replaces took 0.730 ms on the style net's
// 128 planes of 64x64, these 16 partial sums 0.174 ms (4.2x; clang -O2
// harness, medians of 9, load 4.5, same results). The bodies are written once
// and compiled for AVX2 (4 doubles a ymm) and portable C, picked at run time.

#include "lk_norm.h"

#include "lk_kernels.h"

#define LK_NORM_LANES 16

#define LK_NORM_BODIES(SUFFIX, ATTR)                                                               \
    ATTR static double lk_sum_##SUFFIX(const float *x, size_t n) {                                 \
        double acc[LK_NORM_LANES] = {0};                                                           \
        size_t i = 0;                                                                              \
        for (; i + LK_NORM_LANES <= n; i += LK_NORM_LANES)                                         \
            for (int j = 0; j < LK_NORM_LANES; j++) acc[j] += (double)x[i + j];                    \
        double s = 0;                                                                              \
        for (; i < n; i++) s += (double)x[i];                                                      \
        for (int j = 0; j < LK_NORM_LANES; j++) s += acc[j];                                       \
        return s;                                                                                  \
    }                                                                                              \
    ATTR static double lk_dot_##SUFFIX(const float *a, const float *b, size_t n) {                 \
        double acc[LK_NORM_LANES] = {0};                                                           \
        size_t i = 0;                                                                              \
        for (; i + LK_NORM_LANES <= n; i += LK_NORM_LANES)                                         \
            for (int j = 0; j < LK_NORM_LANES; j++) acc[j] += (double)a[i + j] * (double)b[i + j]; \
        double s = 0;                                                                              \
        for (; i < n; i++) s += (double)a[i] * (double)b[i];                                       \
        for (int j = 0; j < LK_NORM_LANES; j++) s += acc[j];                                       \
        return s;                                                                                  \
    }                                                                                              \
    ATTR static double lk_squares_##SUFFIX(const float *x, size_t n, double mean) {                \
        double acc[LK_NORM_LANES] = {0};                                                           \
        size_t i = 0;                                                                              \
        for (; i + LK_NORM_LANES <= n; i += LK_NORM_LANES)                                         \
            for (int j = 0; j < LK_NORM_LANES; j++) {                                              \
                double d = (double)x[i + j] - mean;                                                \
                acc[j] += d * d;                                                                   \
            }                                                                                      \
        double s = 0;                                                                              \
        for (; i < n; i++) { double d = (double)x[i] - mean; s += d * d; }                         \
        for (int j = 0; j < LK_NORM_LANES; j++) s += acc[j];                                       \
        return s;                                                                                  \
    }                                                                                              \
    ATTR static void lk_normalize_##SUFFIX(const float *x, float *y, size_t n, double mean,        \
                                           double a, double b) {                                   \
        for (size_t i = 0; i < n; i++) y[i] = (float)(((double)x[i] - mean) * a + b);              \
    }                                                                                              \
    ATTR static void lk_normalize_affine_##SUFFIX(const float *x, float *y, size_t n, double mean, \
                                                  double a, const float *scale,                    \
                                                  const float *bias) {                             \
        if (bias)                                                                                  \
            for (size_t i = 0; i < n; i++)                                                         \
                y[i] = (float)(((double)x[i] - mean) * a * (double)scale[i] + (double)bias[i]);    \
        else                                                                                       \
            for (size_t i = 0; i < n; i++)                                                         \
                y[i] = (float)(((double)x[i] - mean) * a * (double)scale[i]);                      \
    }

LK_NORM_BODIES(c, )
#if defined(__x86_64__)
#define LK_HAVE_AVX2_NORM 1
// No FMA: the separate multiply and add round as the portable path does.
LK_NORM_BODIES(avx2, __attribute__((target("avx2"))))
#endif

static int lk_norm_avx2(lk_isa isa) {
#ifdef LK_HAVE_AVX2_NORM
    return isa != LK_ISA_SCALAR && lk_kernels_isa() != LK_ISA_SCALAR;
#else
    (void)isa;
    return 0;
#endif
}

void lk_mean_variance_f32_isa(lk_isa isa, const float *x, size_t n, double *mean, double *variance) {
    double m, s;
#ifdef LK_HAVE_AVX2_NORM
    if (lk_norm_avx2(isa)) {
        m = lk_sum_avx2(x, n) / (double)n;
        s = lk_squares_avx2(x, n, m);
    } else
#endif
    {
        m = lk_sum_c(x, n) / (double)n;
        s = lk_squares_c(x, n, m);
    }
    *mean = m;
    *variance = s / (double)n;
}

void lk_normalize_f32_isa(lk_isa isa, const float *x, float *y, size_t n, double mean, double a, double b) {
#ifdef LK_HAVE_AVX2_NORM
    if (lk_norm_avx2(isa)) { lk_normalize_avx2(x, y, n, mean, a, b); return; }
#endif
    lk_normalize_c(x, y, n, mean, a, b);
}

double lk_mean_square_f32_isa(lk_isa isa, const float *x, size_t n) {
#ifdef LK_HAVE_AVX2_NORM
    if (lk_norm_avx2(isa)) return lk_squares_avx2(x, n, 0) / (double)n;
#endif
    return lk_squares_c(x, n, 0) / (double)n;
}

double lk_sum_f32(const float *x, size_t n) {
#ifdef LK_HAVE_AVX2_NORM
    if (lk_norm_avx2(LK_ISA_AVX2_FMA)) return lk_sum_avx2(x, n);
#endif
    return lk_sum_c(x, n);
}

double lk_dot_f32(const float *a, const float *b, size_t n) {
#ifdef LK_HAVE_AVX2_NORM
    if (lk_norm_avx2(LK_ISA_AVX2_FMA)) return lk_dot_avx2(a, b, n);
#endif
    return lk_dot_c(a, b, n);
}

double lk_mean_square_f32(const float *x, size_t n) { return lk_mean_square_f32_isa(lk_kernels_isa(), x, n); }

void lk_normalize_affine_f32_isa(lk_isa isa, const float *x, float *y, size_t n, double mean, double a,
                                 const float *scale, const float *bias) {
#ifdef LK_HAVE_AVX2_NORM
    if (lk_norm_avx2(isa)) { lk_normalize_affine_avx2(x, y, n, mean, a, scale, bias); return; }
#endif
    lk_normalize_affine_c(x, y, n, mean, a, scale, bias);
}

void lk_normalize_affine_f32(const float *x, float *y, size_t n, double mean, double a, const float *scale,
                             const float *bias) {
    lk_normalize_affine_f32_isa(lk_kernels_isa(), x, y, n, mean, a, scale, bias);
}

void lk_mean_variance_f32(const float *x, size_t n, double *mean, double *variance) {
    lk_mean_variance_f32_isa(lk_kernels_isa(), x, n, mean, variance);
}

void lk_normalize_f32(const float *x, float *y, size_t n, double mean, double a, double b) {
    lk_normalize_f32_isa(lk_kernels_isa(), x, y, n, mean, a, b);
}
