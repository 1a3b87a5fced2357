#ifndef LK_VECTOR_INTERNAL_H
#define LK_VECTOR_INTERNAL_H

// The per-instruction-set halves of lk_vector.h, called by its dispatcher
// (lk_vector.c) only after it checked the CPU and the op. Strides are 0 or 1.

#include "lk_vector.h"

#include <math.h>

// lk_vector.c: Python's float remainder (LK_IMOD), exact; every path calls it.
float lk_imod(float a, float b);

#if defined(__x86_64__) && defined(__ELF__)
#define LK_HAVE_X86_VECTOR 1

// The ISA files' small helpers, always inlined: lk_vector_simd.h's
// wrappers then cost nothing, in debug builds too.
#define LK_INLINE static inline __attribute__((always_inline))

// lk_sleef_shim.S: y = fn(x) block by block, `blocks` blocks of 8 floats
// (ymm) or 16 (zmm), where fn is a SLEEF vector function taking and
// returning ymm0 (zmm0). The map2 forms pass a in ymm0/zmm0 and b in
// ymm1/zmm1, stepping a_step and b_step bytes between blocks (0: the same
// block again, a broadcast scalar). C cannot call SLEEF's vector functions
// directly here: without -mavx on the command line clang passes __m256 and
// __m512 arguments on the stack (see the shim's comment).
typedef void lk_sleef_map_fn(const void *fn, const float *x, float *y, size_t blocks);
typedef void lk_sleef_map2_fn(const void *fn, const float *a, size_t a_step, const float *b,
                              size_t b_step, float *y, size_t blocks);
lk_sleef_map_fn lk_sleef_map_ymm, lk_sleef_map_zmm;
lk_sleef_map2_fn lk_sleef_map2_ymm, lk_sleef_map2_zmm;

// lk_vector.c: SLEEF's `fn` on n floats through `map` (`map2`), whose blocks
// are `width` floats (8 with the ymm mappers, 16 with the zmm ones; at most
// LK_SLEEF_MAX_WIDTH). Whole blocks go straight from the arrays, the last
// 1..width-1 floats through a zero-padded copy, so nothing past n is read or
// written. In lk_sleef_binary a scalar operand (stride 0) becomes one
// broadcast block that the shim repeats (step 0). Plain C, no vector types:
// both ISA files call the same code.
#define LK_SLEEF_MAX_WIDTH 16
void lk_sleef_unary(lk_sleef_map_fn *map, size_t width, const void *fn, const float *x, float *y,
                    size_t n);
void lk_sleef_binary(lk_sleef_map2_fn *map2, size_t width, const void *fn, const float *a,
                     int a_stride, const float *b, int b_stride, float *y, size_t n);

// The SLEEF 3.5 functions used (libsleef). Declared without their vector
// types on purpose: only their addresses are taken, for the shim to call.
#define LK_SLEEF_FUNCTIONS(X) \
    X(Sleef_logf8_u10avx2) X(Sleef_log1pf8_u10avx2) X(Sleef_expm1f8_u10avx2) \
    X(Sleef_sinf8_u10avx2) \
    X(Sleef_cosf8_u10avx2) X(Sleef_powf8_u10avx2) \
    X(Sleef_tanf8_u10avx2) X(Sleef_asinf8_u10avx2) X(Sleef_acosf8_u10avx2) X(Sleef_atanf8_u10avx2) \
    X(Sleef_sinhf8_u10avx2) X(Sleef_coshf8_u10avx2) \
    X(Sleef_asinhf8_u10avx2) X(Sleef_acoshf8_u10avx2) X(Sleef_atanhf8_u10avx2) \
    X(Sleef_logf16_u10avx512f) X(Sleef_log1pf16_u10avx512f) X(Sleef_expm1f16_u10avx512f) \
    X(Sleef_sinf16_u10avx512f) \
    X(Sleef_cosf16_u10avx512f) X(Sleef_powf16_u10avx512f) \
    X(Sleef_tanf16_u10avx512f) X(Sleef_asinf16_u10avx512f) X(Sleef_acosf16_u10avx512f) X(Sleef_atanf16_u10avx512f) \
    X(Sleef_sinhf16_u10avx512f) X(Sleef_coshf16_u10avx512f) \
    X(Sleef_asinhf16_u10avx512f) X(Sleef_acoshf16_u10avx512f) X(Sleef_atanhf16_u10avx512f)
#define LK_DECLARE_SLEEF(name) void name(void);
LK_SLEEF_FUNCTIONS(LK_DECLARE_SLEEF)
#undef LK_DECLARE_SLEEF

void lk_unary_avx2(lk_unary_op op, const float *x, float *y, size_t n);
void lk_binary_avx2(lk_binary_op op, const float *a, int a_stride, const float *b, int b_stride,
                    float *y, size_t n);
void lk_select_avx2(const float *cond, const float *a, int a_stride, const float *b, int b_stride,
                    float *y, size_t n);
void lk_affine_clamp_avx2(const float *x, float a, float b, float lo, float hi, float *y, size_t n);
void lk_select_cmp_avx2(lk_binary_op cmp, const float *a, int a_stride, const float *b, int b_stride,
                        const float *t, int t_stride, const float *f, int f_stride, float *y, size_t n);
void lk_affine_clamp_avx512(const float *x, float a, float b, float lo, float hi, float *y, size_t n);
void lk_select_cmp_avx512(lk_binary_op cmp, const float *a, int a_stride, const float *b, int b_stride,
                          const float *t, int t_stride, const float *f, int f_stride, float *y, size_t n);
void lk_unary_avx512(lk_unary_op op, const float *x, float *y, size_t n);
void lk_binary_avx512(lk_binary_op op, const float *a, int a_stride, const float *b, int b_stride,
                      float *y, size_t n);
void lk_select_avx512(const float *cond, const float *a, int a_stride, const float *b, int b_stride,
                      float *y, size_t n);
#endif

#endif
