#ifndef LK_VECTOR_INTERNAL_H
#define LK_VECTOR_INTERNAL_H

// The per-instruction-set halves of lk_vector.h, called by its dispatcher
// (lk_vector.c) only after it checked the CPU and the op. Strides are 0 or 1.

#include "lk_vector.h"

#if defined(__x86_64__) || defined(__i386__)
#define LK_HAVE_X86_VECTOR 1
void lk_unary_avx2(lk_unary_op op, const float *x, float *y, size_t n);
void lk_binary_avx2(lk_binary_op op, const float *a, int a_stride, const float *b, int b_stride,
                    float *y, size_t n);
void lk_select_avx2(const float *cond, const float *a, int a_stride, const float *b, int b_stride,
                    float *y, size_t n);
void lk_unary_avx512(lk_unary_op op, const float *x, float *y, size_t n);
void lk_binary_avx512(lk_binary_op op, const float *a, int a_stride, const float *b, int b_stride,
                      float *y, size_t n);
void lk_select_avx512(const float *cond, const float *a, int a_stride, const float *b, int b_stride,
                      float *y, size_t n);
#endif

#endif
