// AVX-512F path of lk_vector.h: 16 floats a step; its own exp (also inside
// sigmoid and softplus), SLEEF 3.5 for the other transcendental functions
// (its *_u10avx512f versions: at most 1.0 ulp), native instructions for the
// exact ones. Built without -mavx512f: every
// function carries the target attribute and runs only after lk_vector.c
// checked the CPU. Only AVX-512F instructions are used (no DQ: logic on
// floats goes through the integer forms).

#include "lk_vector_internal.h"

#ifdef LK_HAVE_X86_VECTOR
#include <immintrin.h>

#define LK_AVX512 __attribute__((target("avx512f")))
#define LK_INLINE static inline __attribute__((always_inline))

typedef __m512 v16;

LK_AVX512 LK_INLINE v16 lk_abs16(v16 x) {
    return _mm512_castsi512_ps(_mm512_and_epi32(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
}

LK_AVX512 LK_INLINE v16 lk_neg16(v16 x) {
    return _mm512_castsi512_ps(_mm512_xor_epi32(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u)));
}

// e^x on 16 lanes: x = n*ln2 + r, |r| <= ln2/2 (ln2 split in hi/lo so
// n*ln2_hi is exact), e^r = 1 + r + r^2*P(r) with Cephes' degree-5 P, and
// 2^n applied by vscalefps, which rounds once, also into the subnormals,
// and overflows to inf. x is clamped first to [LK_EXP_X_MIN, LK_EXP_X_MAX]
// (outside it the result is 0 or inf anyway) so that r stays finite; the
// clamp keeps NaN (max_ps/min_ps return their second operand for NaN).
// Measured: 8.4e-8 max relative error over [-87, 88.7] (SLEEF's u10 expf:
// 8.2e-8) at 0.15 ns a float in L1/L2, SLEEF 0.20 ns.
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
LK_AVX512 LK_INLINE v16 lk_exp16(v16 x) {
    x = _mm512_min_ps(_mm512_set1_ps(LK_EXP_X_MAX), _mm512_max_ps(_mm512_set1_ps(LK_EXP_X_MIN), x));
    v16 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(LK_LOG2E)),
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v16 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LK_LN2_HI), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LK_LN2_LO), r);
    v16 p = _mm512_set1_ps(LK_EXP_C5);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(LK_EXP_C4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(LK_EXP_C3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(LK_EXP_C2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(LK_EXP_C1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(LK_EXP_C0));
    p = _mm512_fmadd_ps(_mm512_mul_ps(r, r), p, r);
    return _mm512_scalef_ps(_mm512_add_ps(p, _mm512_set1_ps(1.0f)), n);
}

// sigmoid(x) = 1/(1+e) for x >= 0 and e/(1+e) for x < 0, e = exp(-|x|) in
// (0, 1]: never overflows, and the x < 0 tail keeps e's relative accuracy.
// The quotient is corrected once with the exact remainder (d + dlo = 1 + e
// exactly, Fast2Sum), so it adds about half an ulp to exp's error.
LK_AVX512 LK_INLINE v16 lk_sigmoid16(v16 x) {
    const v16 one = _mm512_set1_ps(1.0f);
    v16 e = lk_exp16(lk_neg16(lk_abs16(x)));
    v16 d = _mm512_add_ps(one, e);
    v16 dlo = _mm512_add_ps(_mm512_sub_ps(one, d), e);
    __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    v16 num = _mm512_mask_blend_ps(negative, one, e);
    v16 inv = _mm512_div_ps(one, d);
    v16 q = _mm512_mul_ps(num, inv);
    v16 r = _mm512_fnmadd_ps(q, dlo, _mm512_fnmadd_ps(q, d, num)); // num - q*(d + dlo)
    return _mm512_fmadd_ps(r, inv, q);
}

LK_AVX512 LK_INLINE v16 lk_recip16(v16 x) { return _mm512_div_ps(_mm512_set1_ps(1.0f), x); }
LK_AVX512 LK_INLINE v16 lk_floor16(v16 x) {
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}
LK_AVX512 LK_INLINE v16 lk_ceil16(v16 x) {
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
}

// Composite ops run in chunks of LK_CHUNK floats through stack buffers
// (in L1): a vector pass, SLEEF's pass through the shim, a vector pass.
#define LK_CHUNK 512

LK_AVX512 LK_INLINE __mmask16 lk_mask16(size_t left) {
    return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}

// log1p through SLEEF, whose log1pf returns inf for x above ~1e38: above
// LK_LOG1P_BIG, log1p(x) = log(x) to far below an ulp, so x is scaled by
// 2^-64 first and 64*ln2 added back.
#define LK_LOG1P_BIG 1.2676506e30f // 2^100
#define LK_64_LN2 44.3614195558365f
LK_AVX512 static void lk_log1p_avx512(const float *x, float *y, size_t n) {
    float t[LK_CHUNK];
    for (size_t i = 0; i < n; i += LK_CHUNK) {
        size_t m = n - i < LK_CHUNK ? n - i : LK_CHUNK;
        for (size_t j = 0; j < m; j += 16) {
            __mmask16 k = lk_mask16(m - j);
            v16 v = _mm512_maskz_loadu_ps(k, x + i + j);
            __mmask16 big = _mm512_cmp_ps_mask(v, _mm512_set1_ps(LK_LOG1P_BIG), _CMP_GT_OQ);
            _mm512_storeu_ps(t + j, _mm512_mask_mul_ps(v, big, v, _mm512_set1_ps(0x1p-64f)));
        }
        size_t blocks = (m + 15) / 16;
        lk_sleef_map_zmm((const void *)Sleef_log1pf16_u10avx512f, t, t, blocks);
        for (size_t j = 0; j < m; j += 16) {
            __mmask16 k = lk_mask16(m - j);
            v16 v = _mm512_maskz_loadu_ps(k, x + i + j);
            __mmask16 big = _mm512_cmp_ps_mask(v, _mm512_set1_ps(LK_LOG1P_BIG), _CMP_GT_OQ);
            v16 l = _mm512_loadu_ps(t + j);
            _mm512_mask_storeu_ps(y + i + j, k, _mm512_mask_add_ps(l, big, l, _mm512_set1_ps(LK_64_LN2)));
        }
    }
}

// softplus(x) = max(x, 0) + log1p(e), e = exp(-|x|) in (0, 1]: no overflow,
// and for x << 0 the result keeps e's relative accuracy. For e < 2^-12,
// log1p(e) is e - e^2/2 within 2e-8 relative; that form replaces SLEEF's
// log1p there, which loses accuracy for e near FLT_MIN (measured: 1.8e-7
// relative in softplus at x = -87.3). max_ps gives 0 for NaN x, but
// log1p(exp(NaN)) is NaN, so NaN still comes out.
#define LK_LOG1P_SERIES_MAX 2.44140625e-4f // 2^-12
LK_AVX512 static void lk_softplus_avx512(const float *x, float *y, size_t n) {
    float e[LK_CHUNK], l[LK_CHUNK];
    for (size_t i = 0; i < n; i += LK_CHUNK) {
        size_t m = n - i < LK_CHUNK ? n - i : LK_CHUNK;
        for (size_t j = 0; j < m; j += 16) {
            v16 v = _mm512_maskz_loadu_ps(lk_mask16(m - j), x + i + j);
            _mm512_storeu_ps(e + j, lk_exp16(lk_neg16(lk_abs16(v))));
        }
        lk_sleef_map_zmm((const void *)Sleef_log1pf16_u10avx512f, e, l, (m + 15) / 16);
        for (size_t j = 0; j < m; j += 16) {
            __mmask16 k = lk_mask16(m - j);
            v16 v = _mm512_maskz_loadu_ps(k, x + i + j);
            v16 ev = _mm512_loadu_ps(e + j);
            __mmask16 small = _mm512_cmp_ps_mask(ev, _mm512_set1_ps(LK_LOG1P_SERIES_MAX), _CMP_LT_OQ);
            v16 series = _mm512_fmadd_ps(_mm512_mul_ps(ev, _mm512_set1_ps(-0.5f)), ev, ev);
            v16 lv = _mm512_mask_blend_ps(small, _mm512_loadu_ps(l + j), series);
            _mm512_mask_storeu_ps(y + i + j, k, _mm512_add_ps(_mm512_max_ps(v, _mm512_setzero_ps()), lv));
        }
    }
}

// One loop per op, so the op is chosen once per call. The last 1..15
// elements go through masked loads and stores: no byte past n is touched
// (masked-off lanes load as 0 and are computed but never stored).
#define LK_UNARY16(F) \
    do { \
        size_t i = 0; \
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, F(_mm512_loadu_ps(x + i))); \
        if (i < n) { \
            __mmask16 m = (__mmask16)((1u << (n - i)) - 1); \
            _mm512_mask_storeu_ps(y + i, m, F(_mm512_maskz_loadu_ps(m, x + i))); \
        } \
        return; \
    } while (0)

LK_AVX512 void lk_unary_avx512(lk_unary_op op, const float *x, float *y, size_t n) {
    switch (op) {
    case LK_EXP: LK_UNARY16(lk_exp16);
    case LK_LOG: lk_sleef_unary(lk_sleef_map_zmm, 16, (const void *)Sleef_logf16_u10avx512f, x, y, n); return;
    case LK_LOG1P: lk_log1p_avx512(x, y, n); return;
    case LK_EXPM1: lk_sleef_unary(lk_sleef_map_zmm, 16, (const void *)Sleef_expm1f16_u10avx512f, x, y, n); return;
    case LK_SQRT: LK_UNARY16(_mm512_sqrt_ps);
    case LK_ABS: LK_UNARY16(lk_abs16);
    case LK_NEG: LK_UNARY16(lk_neg16);
    case LK_RECIPROCAL: LK_UNARY16(lk_recip16);
    case LK_TANH: lk_sleef_unary(lk_sleef_map_zmm, 16, (const void *)Sleef_tanhf16_u10avx512f, x, y, n); return;
    case LK_SIGMOID: LK_UNARY16(lk_sigmoid16);
    case LK_SOFTPLUS: lk_softplus_avx512(x, y, n); return;
    case LK_ERF: lk_sleef_unary(lk_sleef_map_zmm, 16, (const void *)Sleef_erff16_u10avx512f, x, y, n); return;
    case LK_SIN: lk_sleef_unary(lk_sleef_map_zmm, 16, (const void *)Sleef_sinf16_u10avx512f, x, y, n); return;
    case LK_COS: lk_sleef_unary(lk_sleef_map_zmm, 16, (const void *)Sleef_cosf16_u10avx512f, x, y, n); return;
    case LK_FLOOR: LK_UNARY16(lk_floor16);
    case LK_CEIL: LK_UNARY16(lk_ceil16);
    case LK_UNARY_OP_COUNT: return;
    }
}

LK_AVX512 LK_INLINE v16 lk_bool16(__mmask16 m) { return _mm512_maskz_mov_ps(m, _mm512_set1_ps(1.0f)); }

// max_ps/min_ps return b when either operand is NaN; where a is NaN, take a.
LK_AVX512 LK_INLINE v16 lk_max16(v16 a, v16 b) {
    return _mm512_mask_mov_ps(_mm512_max_ps(a, b), _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), a);
}
LK_AVX512 LK_INLINE v16 lk_min16(v16 a, v16 b) {
    return _mm512_mask_mov_ps(_mm512_min_ps(a, b), _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), a);
}
LK_AVX512 LK_INLINE v16 lk_gt16(v16 a, v16 b) { return lk_bool16(_mm512_cmp_ps_mask(a, b, _CMP_GT_OQ)); }
LK_AVX512 LK_INLINE v16 lk_ge16(v16 a, v16 b) { return lk_bool16(_mm512_cmp_ps_mask(a, b, _CMP_GE_OQ)); }
LK_AVX512 LK_INLINE v16 lk_lt16(v16 a, v16 b) { return lk_bool16(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)); }
LK_AVX512 LK_INLINE v16 lk_le16(v16 a, v16 b) { return lk_bool16(_mm512_cmp_ps_mask(a, b, _CMP_LE_OQ)); }
LK_AVX512 LK_INLINE v16 lk_eq16(v16 a, v16 b) { return lk_bool16(_mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ)); }
LK_AVX512 LK_INLINE v16 lk_ne16(v16 a, v16 b) { return lk_bool16(_mm512_cmp_ps_mask(a, b, _CMP_NEQ_UQ)); }

// The loop for one op F and one stride pair: LA/LB load a full vector,
// MA/MB a masked one (mask m); a scalar operand is broadcast once (av/bv).
#define LK_BINARY16_LOOP(F, LA, LB, MA, MB) \
    do { \
        size_t i = 0; \
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, F(LA, LB)); \
        if (i < n) { \
            __mmask16 m = (__mmask16)((1u << (n - i)) - 1); \
            (void)m; \
            _mm512_mask_storeu_ps(y + i, m, F(MA, MB)); \
        } \
    } while (0)

#define LK_BINARY16(F) \
    do { \
        if (a_stride && b_stride) { \
            LK_BINARY16_LOOP(F, _mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), \
                             _mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)); \
        } else if (a_stride) { \
            const v16 bv = _mm512_set1_ps(b[0]); \
            LK_BINARY16_LOOP(F, _mm512_loadu_ps(a + i), bv, _mm512_maskz_loadu_ps(m, a + i), bv); \
        } else if (b_stride) { \
            const v16 av = _mm512_set1_ps(a[0]); \
            LK_BINARY16_LOOP(F, av, _mm512_loadu_ps(b + i), av, _mm512_maskz_loadu_ps(m, b + i)); \
        } else { \
            const v16 av = _mm512_set1_ps(a[0]), bv = _mm512_set1_ps(b[0]); \
            LK_BINARY16_LOOP(F, av, bv, av, bv); \
        } \
        return; \
    } while (0)

LK_AVX512 void lk_binary_avx512(lk_binary_op op, const float *a, int a_stride, const float *b,
                                int b_stride, float *y, size_t n) {
    if (n == 0) return;
    switch (op) {
    case LK_ADD: LK_BINARY16(_mm512_add_ps);
    case LK_SUB: LK_BINARY16(_mm512_sub_ps);
    case LK_MUL: LK_BINARY16(_mm512_mul_ps);
    case LK_DIV: LK_BINARY16(_mm512_div_ps);
    case LK_POW: lk_sleef_binary(lk_sleef_map2_zmm, 16, (const void *)Sleef_powf16_u10avx512f, a, a_stride, b, b_stride, y, n); return;
    case LK_MIN: LK_BINARY16(lk_min16);
    case LK_MAX: LK_BINARY16(lk_max16);
    case LK_GT: LK_BINARY16(lk_gt16);
    case LK_GE: LK_BINARY16(lk_ge16);
    case LK_LT: LK_BINARY16(lk_lt16);
    case LK_LE: LK_BINARY16(lk_le16);
    case LK_EQ: LK_BINARY16(lk_eq16);
    case LK_NE: LK_BINARY16(lk_ne16);
    case LK_BINARY_OP_COUNT: return;
    }
}

LK_AVX512 void lk_select_avx512(const float *cond, const float *a, int a_stride, const float *b,
                                int b_stride, float *y, size_t n) {
    if (n == 0) return;
    const v16 zero = _mm512_setzero_ps();
    const v16 a0 = _mm512_set1_ps(a[0]), b0 = _mm512_set1_ps(b[0]);
    size_t i = 0;
    for (; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        // NEQ_UQ: NaN conditions are true, as NaN != 0 is in C.
        __mmask16 take_a = _mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m, cond + i), zero, _CMP_NEQ_UQ);
        v16 va = a_stride ? _mm512_maskz_loadu_ps(m, a + i) : a0;
        v16 vb = b_stride ? _mm512_maskz_loadu_ps(m, b + i) : b0;
        _mm512_mask_storeu_ps(y + i, m, _mm512_mask_blend_ps(take_a, vb, va));
    }
}
#endif
