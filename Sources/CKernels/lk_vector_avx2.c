// AVX2+FMA path of lk_vector.h: 8 floats a step; its own exp (also inside
// sigmoid and softplus), SLEEF 3.5 for the other transcendental functions
// (its *_u10avx2 versions: at most 1.0 ulp), native instructions for the
// exact ones; the same algorithms as
// lk_vector_avx512.c. Built without -mavx2: every function carries the
// target attribute and runs only after lk_vector.c checked the CPU.

#include "lk_vector_internal.h"

#ifdef LK_HAVE_X86_VECTOR
#include <immintrin.h>

#define LK_AVX2 __attribute__((target("avx2,fma")))
#define LK_INLINE static inline __attribute__((always_inline))

typedef __m256 v8;

LK_AVX2 LK_INLINE v8 lk_abs8(v8 x) {
    return _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
}

LK_AVX2 LK_INLINE v8 lk_neg8(v8 x) { return _mm256_xor_ps(x, _mm256_set1_ps(-0.0f)); }

// e^x on 8 lanes, lk_exp16's algorithm; without vscalefps, 2^n is applied
// as two powers of two 2^(n/2) * 2^(n - n/2), each a normal float for n in
// [-159, 128], so the second product rounds once into the subnormals or
// overflows to inf exactly where e^x does.
#define LK_EXP_X_MAX 89.0f
#define LK_EXP_X_MIN -110.0f
#define LK_LOG2E 1.44269504088896341f
#define LK_LN2_HI 0.693359375f
#define LK_LN2_LO -2.12194440e-4f
#define LK_EXP_C5 1.9875691500e-4f
#define LK_EXP_C4 1.3981999507e-3f
#define LK_EXP_C3 8.3334519073e-3f
#define LK_EXP_C2 4.1665795894e-2f
#define LK_EXP_C1 1.6666665459e-1f
#define LK_EXP_C0 5.0000001201e-1f
LK_AVX2 LK_INLINE v8 lk_exp8(v8 x) {
    x = _mm256_min_ps(_mm256_set1_ps(LK_EXP_X_MAX), _mm256_max_ps(_mm256_set1_ps(LK_EXP_X_MIN), x));
    v8 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(LK_LOG2E)),
                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v8 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LK_LN2_HI), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LK_LN2_LO), r);
    v8 p = _mm256_set1_ps(LK_EXP_C5);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(LK_EXP_C4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(LK_EXP_C3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(LK_EXP_C2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(LK_EXP_C1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(LK_EXP_C0));
    p = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(r, r), p, r), _mm256_set1_ps(1.0f));
    // NaN x gives a garbage n, but p is NaN and stays NaN.
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i n1 = _mm256_srai_epi32(ni, 1);
    __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    v8 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    v8 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

// See lk_sigmoid16.
LK_AVX2 LK_INLINE v8 lk_sigmoid8(v8 x) {
    const v8 one = _mm256_set1_ps(1.0f);
    v8 e = lk_exp8(lk_neg8(lk_abs8(x)));
    v8 d = _mm256_add_ps(one, e);
    v8 dlo = _mm256_add_ps(_mm256_sub_ps(one, d), e);
    v8 negative = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
    v8 num = _mm256_blendv_ps(one, e, negative);
    v8 inv = _mm256_div_ps(one, d);
    v8 q = _mm256_mul_ps(num, inv);
    v8 r = _mm256_fnmadd_ps(q, dlo, _mm256_fnmadd_ps(q, d, num));
    return _mm256_fmadd_ps(r, inv, q);
}

LK_AVX2 LK_INLINE v8 lk_recip8(v8 x) { return _mm256_div_ps(_mm256_set1_ps(1.0f), x); }
LK_AVX2 LK_INLINE v8 lk_floor8(v8 x) { return _mm256_floor_ps(x); }
LK_AVX2 LK_INLINE v8 lk_ceil8(v8 x) { return _mm256_ceil_ps(x); }

// Lanes [0, count) set, for the masked tail (count in 1..7).
LK_AVX2 LK_INLINE __m256i lk_tail_mask8(size_t count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#define LK_CHUNK 512

// Lanes [0, min(left, 8)) set.
LK_AVX2 LK_INLINE __m256i lk_mask8(size_t left) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(left >= 8 ? 8 : (int)left),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// See lk_log1p_avx512.
#define LK_LOG1P_BIG 1.2676506e30f // 2^100
#define LK_64_LN2 44.3614195558365f
LK_AVX2 static void lk_log1p_avx2(const float *x, float *y, size_t n) {
    float t[LK_CHUNK];
    for (size_t i = 0; i < n; i += LK_CHUNK) {
        size_t m = n - i < LK_CHUNK ? n - i : LK_CHUNK;
        for (size_t j = 0; j < m; j += 8) {
            v8 v = _mm256_maskload_ps(x + i + j, lk_mask8(m - j));
            v8 big = _mm256_cmp_ps(v, _mm256_set1_ps(LK_LOG1P_BIG), _CMP_GT_OQ);
            _mm256_storeu_ps(t + j, _mm256_blendv_ps(v, _mm256_mul_ps(v, _mm256_set1_ps(0x1p-64f)), big));
        }
        lk_sleef_map_ymm((const void *)Sleef_log1pf8_u10avx2, t, t, (m + 7) / 8);
        for (size_t j = 0; j < m; j += 8) {
            __m256i k = lk_mask8(m - j);
            v8 v = _mm256_maskload_ps(x + i + j, k);
            v8 big = _mm256_cmp_ps(v, _mm256_set1_ps(LK_LOG1P_BIG), _CMP_GT_OQ);
            v8 l = _mm256_loadu_ps(t + j);
            _mm256_maskstore_ps(y + i + j, k, _mm256_add_ps(l, _mm256_and_ps(big, _mm256_set1_ps(LK_64_LN2))));
        }
    }
}

// See lk_softplus_avx512.
#define LK_LOG1P_SERIES_MAX 2.44140625e-4f // 2^-12
LK_AVX2 static void lk_softplus_avx2(const float *x, float *y, size_t n) {
    float e[LK_CHUNK], l[LK_CHUNK];
    for (size_t i = 0; i < n; i += LK_CHUNK) {
        size_t m = n - i < LK_CHUNK ? n - i : LK_CHUNK;
        for (size_t j = 0; j < m; j += 8) {
            v8 v = _mm256_maskload_ps(x + i + j, lk_mask8(m - j));
            _mm256_storeu_ps(e + j, lk_exp8(lk_neg8(lk_abs8(v))));
        }
        lk_sleef_map_ymm((const void *)Sleef_log1pf8_u10avx2, e, l, (m + 7) / 8);
        for (size_t j = 0; j < m; j += 8) {
            __m256i k = lk_mask8(m - j);
            v8 v = _mm256_maskload_ps(x + i + j, k);
            v8 ev = _mm256_loadu_ps(e + j);
            v8 small = _mm256_cmp_ps(ev, _mm256_set1_ps(LK_LOG1P_SERIES_MAX), _CMP_LT_OQ);
            v8 series = _mm256_fmadd_ps(_mm256_mul_ps(ev, _mm256_set1_ps(-0.5f)), ev, ev);
            v8 lv = _mm256_blendv_ps(_mm256_loadu_ps(l + j), series, small);
            _mm256_maskstore_ps(y + i + j, k, _mm256_add_ps(_mm256_max_ps(v, _mm256_setzero_ps()), lv));
        }
    }
}

// One loop per op; the last 1..7 elements through maskload/maskstore, which
// touch no byte of the masked-off lanes (they load as 0).
#define LK_UNARY8(F) \
    do { \
        size_t i = 0; \
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, F(_mm256_loadu_ps(x + i))); \
        if (i < n) { \
            __m256i m = lk_tail_mask8(n - i); \
            _mm256_maskstore_ps(y + i, m, F(_mm256_maskload_ps(x + i, m))); \
        } \
        return; \
    } while (0)

LK_AVX2 void lk_unary_avx2(lk_unary_op op, const float *x, float *y, size_t n) {
    switch (op) {
    case LK_EXP: LK_UNARY8(lk_exp8);
    case LK_LOG: lk_sleef_unary(lk_sleef_map_ymm, 8, (const void *)Sleef_logf8_u10avx2, x, y, n); return;
    case LK_LOG1P: lk_log1p_avx2(x, y, n); return;
    case LK_EXPM1: lk_sleef_unary(lk_sleef_map_ymm, 8, (const void *)Sleef_expm1f8_u10avx2, x, y, n); return;
    case LK_SQRT: LK_UNARY8(_mm256_sqrt_ps);
    case LK_ABS: LK_UNARY8(lk_abs8);
    case LK_NEG: LK_UNARY8(lk_neg8);
    case LK_RECIPROCAL: LK_UNARY8(lk_recip8);
    case LK_TANH: lk_sleef_unary(lk_sleef_map_ymm, 8, (const void *)Sleef_tanhf8_u10avx2, x, y, n); return;
    case LK_SIGMOID: LK_UNARY8(lk_sigmoid8);
    case LK_SOFTPLUS: lk_softplus_avx2(x, y, n); return;
    case LK_ERF: lk_sleef_unary(lk_sleef_map_ymm, 8, (const void *)Sleef_erff8_u10avx2, x, y, n); return;
    case LK_SIN: lk_sleef_unary(lk_sleef_map_ymm, 8, (const void *)Sleef_sinf8_u10avx2, x, y, n); return;
    case LK_COS: lk_sleef_unary(lk_sleef_map_ymm, 8, (const void *)Sleef_cosf8_u10avx2, x, y, n); return;
    case LK_FLOOR: LK_UNARY8(lk_floor8);
    case LK_CEIL: LK_UNARY8(lk_ceil8);
    case LK_UNARY_OP_COUNT: return;
    }
}

LK_AVX2 LK_INLINE v8 lk_bool8(v8 mask) { return _mm256_and_ps(mask, _mm256_set1_ps(1.0f)); }

// max_ps/min_ps return b when either operand is NaN; where a is NaN, take a.
LK_AVX2 LK_INLINE v8 lk_max8(v8 a, v8 b) {
    return _mm256_blendv_ps(_mm256_max_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
}
LK_AVX2 LK_INLINE v8 lk_min8(v8 a, v8 b) {
    return _mm256_blendv_ps(_mm256_min_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
}
LK_AVX2 LK_INLINE v8 lk_gt8(v8 a, v8 b) { return lk_bool8(_mm256_cmp_ps(a, b, _CMP_GT_OQ)); }
LK_AVX2 LK_INLINE v8 lk_ge8(v8 a, v8 b) { return lk_bool8(_mm256_cmp_ps(a, b, _CMP_GE_OQ)); }
LK_AVX2 LK_INLINE v8 lk_lt8(v8 a, v8 b) { return lk_bool8(_mm256_cmp_ps(a, b, _CMP_LT_OQ)); }
LK_AVX2 LK_INLINE v8 lk_le8(v8 a, v8 b) { return lk_bool8(_mm256_cmp_ps(a, b, _CMP_LE_OQ)); }
LK_AVX2 LK_INLINE v8 lk_eq8(v8 a, v8 b) { return lk_bool8(_mm256_cmp_ps(a, b, _CMP_EQ_OQ)); }
LK_AVX2 LK_INLINE v8 lk_ne8(v8 a, v8 b) { return lk_bool8(_mm256_cmp_ps(a, b, _CMP_NEQ_UQ)); }

// See LK_BINARY16_LOOP.
#define LK_BINARY8_LOOP(F, LA, LB, MA, MB) \
    do { \
        size_t i = 0; \
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, F(LA, LB)); \
        if (i < n) { \
            __m256i m = lk_tail_mask8(n - i); \
            (void)m; \
            _mm256_maskstore_ps(y + i, m, F(MA, MB)); \
        } \
    } while (0)

#define LK_BINARY8(F) \
    do { \
        if (a_stride && b_stride) { \
            LK_BINARY8_LOOP(F, _mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), \
                            _mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m)); \
        } else if (a_stride) { \
            const v8 bv = _mm256_set1_ps(b[0]); \
            LK_BINARY8_LOOP(F, _mm256_loadu_ps(a + i), bv, _mm256_maskload_ps(a + i, m), bv); \
        } else if (b_stride) { \
            const v8 av = _mm256_set1_ps(a[0]); \
            LK_BINARY8_LOOP(F, av, _mm256_loadu_ps(b + i), av, _mm256_maskload_ps(b + i, m)); \
        } else { \
            const v8 av = _mm256_set1_ps(a[0]), bv = _mm256_set1_ps(b[0]); \
            LK_BINARY8_LOOP(F, av, bv, av, bv); \
        } \
        return; \
    } while (0)

LK_AVX2 void lk_binary_avx2(lk_binary_op op, const float *a, int a_stride, const float *b,
                            int b_stride, float *y, size_t n) {
    if (n == 0) return;
    switch (op) {
    case LK_ADD: LK_BINARY8(_mm256_add_ps);
    case LK_SUB: LK_BINARY8(_mm256_sub_ps);
    case LK_MUL: LK_BINARY8(_mm256_mul_ps);
    case LK_DIV: LK_BINARY8(_mm256_div_ps);
    case LK_POW: lk_sleef_binary(lk_sleef_map2_ymm, 8, (const void *)Sleef_powf8_u10avx2, a, a_stride, b, b_stride, y, n); return;
    case LK_MIN: LK_BINARY8(lk_min8);
    case LK_MAX: LK_BINARY8(lk_max8);
    case LK_GT: LK_BINARY8(lk_gt8);
    case LK_GE: LK_BINARY8(lk_ge8);
    case LK_LT: LK_BINARY8(lk_lt8);
    case LK_LE: LK_BINARY8(lk_le8);
    case LK_EQ: LK_BINARY8(lk_eq8);
    case LK_NE: LK_BINARY8(lk_ne8);
    case LK_BINARY_OP_COUNT: return;
    }
}

LK_AVX2 void lk_select_avx2(const float *cond, const float *a, int a_stride, const float *b,
                            int b_stride, float *y, size_t n) {
    if (n == 0) return;
    const v8 zero = _mm256_setzero_ps();
    const v8 a0 = _mm256_set1_ps(a[0]), b0 = _mm256_set1_ps(b[0]);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v8 take_a = _mm256_cmp_ps(_mm256_loadu_ps(cond + i), zero, _CMP_NEQ_UQ);
        v8 va = a_stride ? _mm256_loadu_ps(a + i) : a0;
        v8 vb = b_stride ? _mm256_loadu_ps(b + i) : b0;
        _mm256_storeu_ps(y + i, _mm256_blendv_ps(vb, va, take_a));
    }
    if (i < n) {
        __m256i m = lk_tail_mask8(n - i);
        v8 take_a = _mm256_cmp_ps(_mm256_maskload_ps(cond + i, m), zero, _CMP_NEQ_UQ);
        v8 va = a_stride ? _mm256_maskload_ps(a + i, m) : a0;
        v8 vb = b_stride ? _mm256_maskload_ps(b + i, m) : b0;
        _mm256_maskstore_ps(y + i, m, _mm256_blendv_ps(vb, va, take_a));
    }
}
#endif
