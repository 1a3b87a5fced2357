// Dispatcher and portable path of lk_vector.h.
//
// The portable (scalar) path computes each transcendental in double with the
// C library and rounds once to float: results are then within about half a
// float ulp, so it doubles as a second reference for the vector paths. Speed
// matters little here; it only runs on CPUs without AVX2+FMA.

#include "lk_vector_internal.h"

#include <math.h>

static inline double lk_sigmoid_d(double x) {
    double e = exp(-fabs(x)); // in (0, 1]: no overflow; NaN stays NaN
    return x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}

static inline double lk_softplus_d(double x) {
    // fmax(NaN, 0) is 0, but log1p(exp(NaN)) keeps the NaN.
    return fmax(x, 0.0) + log1p(exp(-fabs(x)));
}

// Ties to even whatever the rounding mode (rintf follows the mode).
static inline float lk_round_even(float v) {
    float r = roundf(v); // ties away from zero
    if (fabsf(r - v) == 0.5f && fmodf(r, 2.0f) != 0.0f) r -= copysignf(1.0f, v);
    return copysignf(r, v); // round(-0.5) is -0
}

#define LK_UNARY_SCALAR(EXPR) \
    for (size_t i = 0; i < n; i++) { float v = x[i]; (void)v; y[i] = (EXPR); } \
    return

static void lk_unary_scalar(lk_unary_op op, const float *x, float *y, size_t n) {
    switch (op) {
    case LK_EXP: LK_UNARY_SCALAR((float)exp((double)v));
    case LK_LOG: LK_UNARY_SCALAR((float)log((double)v));
    case LK_LOG1P: LK_UNARY_SCALAR((float)log1p((double)v));
    case LK_EXPM1: LK_UNARY_SCALAR((float)expm1((double)v));
    case LK_SQRT: LK_UNARY_SCALAR(sqrtf(v));
    case LK_ABS: LK_UNARY_SCALAR(fabsf(v));
    case LK_NEG: LK_UNARY_SCALAR(-v);
    case LK_RECIPROCAL: LK_UNARY_SCALAR(1.0f / v);
    case LK_TANH: LK_UNARY_SCALAR((float)tanh((double)v));
    case LK_SIGMOID: LK_UNARY_SCALAR((float)lk_sigmoid_d(v));
    case LK_SOFTPLUS: LK_UNARY_SCALAR((float)lk_softplus_d(v));
    case LK_ERF: LK_UNARY_SCALAR((float)erf((double)v));
    case LK_SIN: LK_UNARY_SCALAR((float)sin((double)v));
    case LK_COS: LK_UNARY_SCALAR((float)cos((double)v));
    case LK_FLOOR: LK_UNARY_SCALAR(floorf(v));
    case LK_CEIL: LK_UNARY_SCALAR(ceilf(v));
    case LK_ROUND: LK_UNARY_SCALAR(lk_round_even(v));
    case LK_ISNAN: LK_UNARY_SCALAR(isnan(v) ? 1.0f : 0.0f);
    case LK_ISINF: LK_UNARY_SCALAR(isinf(v) ? 1.0f : 0.0f);
    case LK_TAN: LK_UNARY_SCALAR((float)tan((double)v));
    case LK_ASIN: LK_UNARY_SCALAR((float)asin((double)v));
    case LK_ACOS: LK_UNARY_SCALAR((float)acos((double)v));
    case LK_ATAN: LK_UNARY_SCALAR((float)atan((double)v));
    case LK_SINH: LK_UNARY_SCALAR((float)sinh((double)v));
    case LK_COSH: LK_UNARY_SCALAR((float)cosh((double)v));
    case LK_ASINH: LK_UNARY_SCALAR((float)asinh((double)v));
    case LK_ACOSH: LK_UNARY_SCALAR((float)acosh((double)v));
    case LK_ATANH: LK_UNARY_SCALAR((float)atanh((double)v));
    case LK_UNARY_OP_COUNT: return;
    }
}

static inline float lk_min_nan(float a, float b) {
    return isnan(a) || isnan(b) ? a + b : (b < a ? b : a);
}

static inline float lk_max_nan(float a, float b) {
    return isnan(a) || isnan(b) ? a + b : (b > a ? b : a);
}

#define LK_BINARY_SCALAR(EXPR) \
    for (size_t i = 0; i < n; i++) { \
        float u = a_stride ? a[i] : a0, v = b_stride ? b[i] : b0; \
        y[i] = (EXPR); \
    } \
    return

static void lk_binary_scalar(lk_binary_op op, const float *a, int a_stride, const float *b,
                             int b_stride, float *y, size_t n) {
    if (n == 0) return;
    const float a0 = a[0], b0 = b[0]; // scalars read once (arrays: unused)
    switch (op) {
    case LK_ADD: LK_BINARY_SCALAR(u + v);
    case LK_SUB: LK_BINARY_SCALAR(u - v);
    case LK_MUL: LK_BINARY_SCALAR(u * v);
    case LK_DIV: LK_BINARY_SCALAR(u / v);
    case LK_POW: LK_BINARY_SCALAR((float)pow((double)u, (double)v));
    case LK_MIN: LK_BINARY_SCALAR(lk_min_nan(u, v));
    case LK_MAX: LK_BINARY_SCALAR(lk_max_nan(u, v));
    case LK_GT: LK_BINARY_SCALAR(u > v ? 1.0f : 0.0f);
    case LK_GE: LK_BINARY_SCALAR(u >= v ? 1.0f : 0.0f);
    case LK_LT: LK_BINARY_SCALAR(u < v ? 1.0f : 0.0f);
    case LK_LE: LK_BINARY_SCALAR(u <= v ? 1.0f : 0.0f);
    case LK_EQ: LK_BINARY_SCALAR(u == v ? 1.0f : 0.0f);
    case LK_NE: LK_BINARY_SCALAR(u != v ? 1.0f : 0.0f);
    case LK_FMOD: LK_BINARY_SCALAR(fmodf(u, v));
    case LK_IMOD: LK_BINARY_SCALAR(lk_imod(u, v));
    case LK_AND: LK_BINARY_SCALAR(u != 0.0f && v != 0.0f ? 1.0f : 0.0f);
    case LK_OR: LK_BINARY_SCALAR(u != 0.0f || v != 0.0f ? 1.0f : 0.0f);
    case LK_XOR: LK_BINARY_SCALAR((u != 0.0f) != (v != 0.0f) ? 1.0f : 0.0f);
    case LK_BINARY_OP_COUNT: return;
    }
}

float lk_imod(float a, float b) {
    float r = fmodf(a, b);
    // A zero remainder takes the divisor's sign too (Python's -0.0 for 6 % -3).
    if (r == 0.0f) return copysignf(0.0f, b);
    return (r < 0.0f) != (b < 0.0f) ? r + b : r;
}

static void lk_select_scalar(const float *cond, const float *a, int a_stride, const float *b,
                             int b_stride, float *y, size_t n) {
    if (n == 0) return;
    const float a0 = a[0], b0 = b[0];
    for (size_t i = 0; i < n; i++) {
        y[i] = cond[i] != 0.0f ? (a_stride ? a[i] : a0) : (b_stride ? b[i] : b0);
    }
}

static void lk_affine_clamp_scalar(const float *x, float a, float b, float lo, float hi, float *y, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = lk_min_nan(lk_max_nan(fmaf(a, x[i], b), lo), hi);
}

static inline int lk_compare(lk_binary_op cmp, float u, float v) {
    switch (cmp) {
    case LK_GT: return u > v;
    case LK_GE: return u >= v;
    case LK_LT: return u < v;
    case LK_LE: return u <= v;
    case LK_EQ: return u == v;
    default: return u != v; // LK_NE; the dispatcher let only comparisons through
    }
}

static void lk_select_cmp_scalar(lk_binary_op cmp, const float *a, int a_stride, const float *b, int b_stride,
                                 const float *t, int t_stride, const float *f, int f_stride, float *y, size_t n) {
    if (n == 0) return;
    const float a0 = a[0], b0 = b[0], t0 = t[0], f0 = f[0];
    for (size_t i = 0; i < n; i++) {
        int c = lk_compare(cmp, a_stride ? a[i] : a0, b_stride ? b[i] : b0);
        y[i] = c ? (t_stride ? t[i] : t0) : (f_stride ? f[i] : f0);
    }
}

#ifdef LK_HAVE_X86_VECTOR
#include <string.h>

void lk_sleef_unary(lk_sleef_map_fn *map, size_t width, const void *fn, const float *x, float *y,
                    size_t n) {
    size_t blocks = n / width, done = blocks * width;
    map(fn, x, y, blocks);
    if (done < n) {
        float buf[LK_SLEEF_MAX_WIDTH] = {0};
        memcpy(buf, x + done, (n - done) * sizeof(float));
        map(fn, buf, buf, 1);
        memcpy(y + done, buf, (n - done) * sizeof(float));
    }
}

void lk_sleef_binary(lk_sleef_map2_fn *map2, size_t width, const void *fn, const float *a,
                     int a_stride, const float *b, int b_stride, float *y, size_t n) {
    float abuf[LK_SLEEF_MAX_WIDTH], bbuf[LK_SLEEF_MAX_WIDTH];
    for (size_t j = 0; j < width; j++) {
        abuf[j] = a_stride ? 0.0f : a[0];
        bbuf[j] = b_stride ? 0.0f : b[0];
    }
    size_t blocks = n / width, done = blocks * width, bytes = width * sizeof(float);
    map2(fn, a_stride ? a : abuf, a_stride ? bytes : 0, b_stride ? b : bbuf, b_stride ? bytes : 0, y,
         blocks);
    if (done < n) {
        size_t rest = n - done;
        if (a_stride) { memset(abuf, 0, sizeof abuf); memcpy(abuf, a + done, rest * sizeof(float)); }
        if (b_stride) { memset(bbuf, 0, sizeof bbuf); memcpy(bbuf, b + done, rest * sizeof(float)); }
        float out[LK_SLEEF_MAX_WIDTH];
        map2(fn, abuf, 0, bbuf, 0, out, 1);
        memcpy(y + done, out, rest * sizeof(float));
    }
}

// Calls KERNEL's version for `isa` (KERNEL_avx2, KERNEL_avx512 or
// KERNEL_scalar) with the remaining arguments; the caller checked isa.
#define LK_DISPATCH(isa, KERNEL, ...) \
    switch (isa) { \
    case LK_ISA_AVX2_FMA: KERNEL##_avx2(__VA_ARGS__); return 0; \
    case LK_ISA_AVX512F: KERNEL##_avx512(__VA_ARGS__); return 0; \
    default: KERNEL##_scalar(__VA_ARGS__); return 0; \
    }
#else
#define LK_DISPATCH(isa, KERNEL, ...) \
    { (void)(isa); KERNEL##_scalar(__VA_ARGS__); return 0; } // no vector path built
#endif

int lk_unary_f32_isa(lk_isa isa, lk_unary_op op, const float *x, float *y, size_t n) {
    if (isa > lk_kernels_isa() || (unsigned)op >= (unsigned)LK_UNARY_OP_COUNT) return -1;
    LK_DISPATCH(isa, lk_unary, op, x, y, n);
}

// The vector paths take strides of exactly 0 or 1.
int lk_binary_f32_isa(lk_isa isa, lk_binary_op op, const float *a, int a_stride,
                      const float *b, int b_stride, float *y, size_t n) {
    if (isa > lk_kernels_isa() || (unsigned)op >= (unsigned)LK_BINARY_OP_COUNT) return -1;
    LK_DISPATCH(isa, lk_binary, op, a, a_stride != 0, b, b_stride != 0, y, n);
}

int lk_select_f32_isa(lk_isa isa, const float *cond, const float *a, int a_stride,
                      const float *b, int b_stride, float *y, size_t n) {
    if (isa > lk_kernels_isa()) return -1;
    LK_DISPATCH(isa, lk_select, cond, a, a_stride != 0, b, b_stride != 0, y, n);
}

int lk_affine_clamp_f32_isa(lk_isa isa, const float *x, float a, float b, float lo, float hi, float *y,
                            size_t n) {
    if (isa > lk_kernels_isa()) return -1;
    if (isnan(lo) || isnan(hi)) { // min/max with a NaN bound: NaN everywhere
        for (size_t i = 0; i < n; i++) y[i] = lo + hi;
        return 0;
    }
    LK_DISPATCH(isa, lk_affine_clamp, x, a, b, lo, hi, y, n);
}

int lk_select_cmp_f32_isa(lk_isa isa, lk_binary_op cmp, const float *a, int a_stride, const float *b,
                          int b_stride, const float *t, int t_stride, const float *f, int f_stride,
                          float *y, size_t n) {
    if (isa > lk_kernels_isa() || cmp < LK_GT || cmp > LK_NE) return -1;
    LK_DISPATCH(isa, lk_select_cmp, cmp, a, a_stride != 0, b, b_stride != 0, t, t_stride != 0, f,
                f_stride != 0, y, n);
}

// The best ISA is always available, so these fail only for an unknown op.
void lk_unary_f32(lk_unary_op op, const float *x, float *y, size_t n) {
    (void)lk_unary_f32_isa(lk_kernels_isa(), op, x, y, n);
}

void lk_binary_f32(lk_binary_op op, const float *a, int a_stride, const float *b, int b_stride,
                   float *y, size_t n) {
    (void)lk_binary_f32_isa(lk_kernels_isa(), op, a, a_stride, b, b_stride, y, n);
}

void lk_select_f32(const float *cond, const float *a, int a_stride, const float *b, int b_stride,
                   float *y, size_t n) {
    (void)lk_select_f32_isa(lk_kernels_isa(), cond, a, a_stride, b, b_stride, y, n);
}

void lk_affine_clamp_f32(const float *x, float a, float b, float lo, float hi, float *y, size_t n) {
    (void)lk_affine_clamp_f32_isa(lk_kernels_isa(), x, a, b, lo, hi, y, n);
}

void lk_select_cmp_f32(lk_binary_op cmp, const float *a, int a_stride, const float *b, int b_stride,
                       const float *t, int t_stride, const float *f, int f_stride, float *y, size_t n) {
    (void)lk_select_cmp_f32_isa(lk_kernels_isa(), cmp, a, a_stride, b, b_stride, t, t_stride, f, f_stride, y, n);
}
