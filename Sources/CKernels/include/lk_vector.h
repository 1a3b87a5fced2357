#ifndef LK_VECTOR_H
#define LK_VECTOR_H

// Vectorized float32 array primitives: the building blocks the CPU side of
// the op catalog runs an expression tree with, one call per tree node over
// a block of floats. Each call picks its instruction set once per process
// (lk_kernels_isa(): AVX-512F, AVX2+FMA or portable C); the *_isa variants
// force one, for tests and benchmarks.
//
// Common contract of every function here:
// - Element-wise over i in [0, n); n may be 0. Nothing before index 0 or at
//   or past index n of any array is read or written.
// - The output may be the same buffer as any input (in place), but must not
//   partially overlap one.
// - NaN in gives NaN out (exceptions: comparisons, select's condition, and
//   pow's C99 cases such as pow(NaN, 0) = 1). Infinities follow C99 math.h.
// - Accuracy: within 2e-7 relative of the exact result (a few float ulps)
//   where that result is a normal float, within 1e-37 absolute where it is
//   subnormal; results beyond FLT_MAX are +-inf. Exact ops (abs, neg, add,
//   sub, mul, div, reciprocal, sqrt, min, max, floor, ceil, round, fmod, imod,
//   comparisons, logic,
//   select) are correctly rounded, as IEEE 754 defines them.

#include <stddef.h>

#include "lk_kernels.h"

/// One-input primitives of lk_unary_f32.
typedef enum {
    LK_EXP = 0,        ///< e^x.
    LK_LOG,            ///< Natural log: log(0) = -inf, log(x < 0) = NaN.
    LK_LOG1P,          ///< log(1 + x), accurate near 0; log1p(-1) = -inf.
    LK_EXPM1,          ///< e^x - 1, accurate near 0.
    LK_SQRT,           ///< Square root: sqrt(-0) = -0, sqrt(x < 0) = NaN.
    LK_ABS,            ///< |x| (clears the sign bit, NaN included).
    LK_NEG,            ///< -x (flips the sign bit).
    LK_RECIPROCAL,     ///< 1 / x: 1/+-0 = +-inf.
    LK_TANH,           ///< Hyperbolic tangent, relative-accurate near 0, +-1 at +-inf.
    LK_SIGMOID,        ///< 1 / (1 + e^-x), relative-accurate in both tails; 0 and 1 at -+inf.
    LK_SOFTPLUS,       ///< log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow, accurate for x << 0.
    LK_ERF,            ///< Error function.
    LK_SIN,            ///< Sine (radians), full range reduction.
    LK_COS,            ///< Cosine (radians), full range reduction.
    LK_FLOOR,          ///< Largest integer <= x.
    LK_CEIL,           ///< Smallest integer >= x.
    LK_ROUND,          ///< Nearest integer, halves to even (ONNX Round).
    LK_ISNAN,          ///< 1.0f where x is NaN, else 0.0f.
    LK_ISINF,          ///< 1.0f where x is +-inf, else 0.0f.
    LK_TAN,            ///< Tangent (radians), full range reduction.
    LK_ASIN,           ///< Arcsine: NaN outside [-1, 1].
    LK_ACOS,           ///< Arccosine: NaN outside [-1, 1].
    LK_ATAN,           ///< Arctangent: +-pi/2 at +-inf.
    LK_SINH,           ///< Hyperbolic sine, relative-accurate near 0.
    LK_COSH,           ///< Hyperbolic cosine.
    LK_ASINH,          ///< Inverse hyperbolic sine, accurate for large |x| of either sign.
    LK_ACOSH,          ///< Inverse hyperbolic cosine: NaN below 1.
    LK_ATANH,          ///< Inverse hyperbolic tangent: +-inf at +-1, NaN past them.
    LK_UNARY_OP_COUNT  ///< Number of unary ops; not an op.
} lk_unary_op;

/// Two-input primitives of lk_binary_f32.
typedef enum {
    LK_ADD = 0, ///< a + b.
    LK_SUB,     ///< a - b.
    LK_MUL,     ///< a * b.
    LK_DIV,     ///< a / b.
    LK_POW,     ///< powf(a, b) as C99 defines it: (-2)^3 = -8, negative a with a
                ///< non-integer b = NaN, pow(a, +-0) = 1 and pow(1, b) = 1 even for NaN.
                ///< A scalar exponent b of 0, 1, 2, -1 or 0.5 gives the correctly
                ///< rounded result (1, a, a*a, 1/a, sqrt with pow's -0 and -inf cases);
                ///< 3 and -2 two roundings (a*a*a, (1/a)*(1/a)): within 1.2e-7.
    LK_MIN,     ///< The smaller of a and b; NaN if either is NaN.
    LK_MAX,     ///< The larger of a and b; NaN if either is NaN.
    LK_GT,      ///< a > b as 1.0f or 0.0f (0 if either is NaN).
    LK_GE,      ///< a >= b as 1.0f or 0.0f (0 if either is NaN).
    LK_LT,      ///< a < b as 1.0f or 0.0f (0 if either is NaN).
    LK_LE,      ///< a <= b as 1.0f or 0.0f (0 if either is NaN).
    LK_EQ,      ///< a == b as 1.0f or 0.0f (0 if either is NaN; -0 == +0).
    LK_NE,      ///< a != b as 1.0f or 0.0f (1 if either is NaN).
    LK_FMOD,    ///< fmodf(a, b): the remainder with the sign of a (C99; exact).
    LK_IMOD,    ///< a - floor(a / b) * b with the sign of b (Python's %, ONNX Mod-28 fmod 0), exact:
                ///< fmodf(a, b), plus b where that is non-zero and its sign differs from b's; a
                ///< zero remainder is a zero of b's sign; NaN for b = 0 or an infinite a.
    LK_AND,     ///< (a != 0) && (b != 0) as 1.0f or 0.0f (NaN counts as true, as in C).
    LK_OR,      ///< (a != 0) || (b != 0) as 1.0f or 0.0f.
    LK_XOR,     ///< (a != 0) != (b != 0) as 1.0f or 0.0f.
    LK_BINARY_OP_COUNT ///< Number of binary ops; not an op.
} lk_binary_op;

/// y[i] = op(x[i]) for i in [0, n). `y` may be `x`. An `op` outside the
/// enum leaves `y` untouched.
void lk_unary_f32(lk_unary_op op, const float *x, float *y, size_t n);

/// lk_unary_f32 forced onto `isa`. Returns 0, or -1 without touching `y`
/// when this CPU lacks `isa` (isa > lk_kernels_isa()) or `op` is unknown.
int lk_unary_f32_isa(lk_isa isa, lk_unary_op op, const float *x, float *y, size_t n);

/// y[i] = op(a[i * a_stride], b[i * b_stride]) for i in [0, n).
///
/// A stride of 1 makes the operand an array of n floats; a stride of 0 a
/// scalar (one float, read once, and not at all when n is 0). Any other
/// nonzero stride counts as 1. `y` may be `a` or `b`. An `op` outside the
/// enum leaves `y` untouched.
void lk_binary_f32(lk_binary_op op, const float *a, int a_stride, const float *b, int b_stride,
                   float *y, size_t n);

/// lk_binary_f32 forced onto `isa`. Returns 0, or -1 without touching `y`
/// when this CPU lacks `isa` or `op` is unknown.
int lk_binary_f32_isa(lk_isa isa, lk_binary_op op, const float *a, int a_stride,
                      const float *b, int b_stride, float *y, size_t n);

/// y[i] = cond[i] != 0 ? a[i * a_stride] : b[i * b_stride] for i in [0, n).
///
/// A NaN condition counts as true (NaN != 0), -0 as false. Strides as in
/// lk_binary_f32. `y` may be any of the inputs. The value is copied bit
/// for bit (NaN payloads and signed zeros kept).
void lk_select_f32(const float *cond, const float *a, int a_stride, const float *b, int b_stride,
                   float *y, size_t n);

/// lk_select_f32 forced onto `isa`. Returns 0, or -1 without touching `y`
/// when this CPU lacks `isa`.
int lk_select_f32_isa(lk_isa isa, const float *cond, const float *a, int a_stride,
                      const float *b, int b_stride, float *y, size_t n);

/// y[i] = min(max(a * x[i] + b, lo), hi) for i in [0, n), a * x + b rounded
/// once (fused multiply-add): an affine map and a clamp in one pass. a = 1,
/// b = -0 leave x unchanged (x * 1 + -0 is x for every float, -0 and NaN
/// included), lo = -inf and hi = +inf clamp nothing. NaN in x gives NaN; a
/// NaN lo or hi makes every element NaN (as min and max would). When lo > hi
/// every non-NaN element is hi. A zero compared with a zero of the other
/// sign may come out with either sign. `y` may be `x`.
void lk_affine_clamp_f32(const float *x, float a, float b, float lo, float hi, float *y, size_t n);

/// lk_affine_clamp_f32 forced onto `isa`. Returns 0, or -1 without touching
/// `y` when this CPU lacks `isa`.
int lk_affine_clamp_f32_isa(lk_isa isa, const float *x, float a, float b, float lo, float hi, float *y,
                            size_t n);

/// y[i] = cmp(a[i], b[i]) ? t[i] : f[i] for i in [0, n), cmp one of the
/// comparisons LK_GT ... LK_NE (with their NaN rules: false on NaN, except
/// LK_NE), every operand by stride as in lk_binary_f32: a select whose
/// condition is computed inline. The picked value is copied bit for bit.
/// `y` may be any of the inputs. Another `cmp` leaves `y` untouched.
void lk_select_cmp_f32(lk_binary_op cmp, const float *a, int a_stride, const float *b, int b_stride,
                       const float *t, int t_stride, const float *f, int f_stride, float *y, size_t n);

/// lk_select_cmp_f32 forced onto `isa`. Returns 0, or -1 without touching
/// `y` when this CPU lacks `isa` or `cmp` is not a comparison.
int lk_select_cmp_f32_isa(lk_isa isa, lk_binary_op cmp, const float *a, int a_stride, const float *b,
                          int b_stride, const float *t, int t_stride, const float *f, int f_stride,
                          float *y, size_t n);

#endif
