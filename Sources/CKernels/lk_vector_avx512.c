// AVX-512F path of lk_vector.h: 16 floats a step; its own exp (also inside
// sigmoid and softplus), tanh and erf, SLEEF 3.5 for the other transcendental functions
// (its *_u10avx512f versions: at most 1.0 ulp), native instructions for the
// exact ones. The algorithms are lk_vector_simd.h's, shared with
// lk_vector_avx2.c; this file maps that file's names to AVX-512
// intrinsics. Built without -mavx512f: every function carries the target
// attribute and runs only after lk_vector.c checked the CPU. Only AVX-512F
// instructions are used (no DQ: logic on floats goes through the integer
// forms).

#include "lk_vector_internal.h"

#ifdef LK_HAVE_X86_VECTOR
#include <immintrin.h>

#define LK_TARGET __attribute__((target("avx512f")))
#define LK_W 16
typedef __m512 lk_v;
typedef __mmask16 lk_m;     // compares give a bit a lane
typedef __mmask16 lk_lanes; // and so do masked loads and stores take
#define LK_PS(op) _mm512_##op##_ps
#define LK_SLEEF(f) Sleef_##f##f16_u10avx512f
#define LK_SLEEF_MAP lk_sleef_map_zmm
#define LK_SLEEF_MAP2 lk_sleef_map2_zmm
#define LK_UNARY_NAME lk_unary_avx512
#define LK_BINARY_NAME lk_binary_avx512
#define LK_SELECT_NAME lk_select_avx512
#define LK_AFFINE_CLAMP_NAME lk_affine_clamp_avx512
#define LK_SELECT_CMP_NAME lk_select_cmp_avx512

LK_TARGET LK_INLINE lk_v lk_abs(lk_v x) {
    return _mm512_castsi512_ps(_mm512_and_epi32(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
}
LK_TARGET LK_INLINE lk_v lk_neg(lk_v x) {
    return _mm512_castsi512_ps(_mm512_xor_epi32(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u)));
}
LK_TARGET LK_INLINE lk_v lk_copysign(lk_v m, lk_v s) {
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    return _mm512_castsi512_ps(_mm512_or_epi32(_mm512_andnot_epi32(sign, _mm512_castps_si512(m)),
                                               _mm512_and_epi32(sign, _mm512_castps_si512(s))));
}
LK_TARGET LK_INLINE lk_v lk_floor(lk_v x) {
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}
LK_TARGET LK_INLINE lk_v lk_ceil(lk_v x) {
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
}
LK_TARGET LK_INLINE lk_v lk_round(lk_v x) {
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

#define lk_cmp(a, b, pred) _mm512_cmp_ps_mask(a, b, pred)
LK_TARGET LK_INLINE lk_v lk_blend(lk_m m, lk_v a, lk_v b) { return _mm512_mask_blend_ps(m, a, b); }
LK_TARGET LK_INLINE lk_v lk_bool(lk_m m) { return _mm512_maskz_mov_ps(m, _mm512_set1_ps(1.0f)); }

// Masked-off lanes load as 0 and are never stored; they fault on nothing.
LK_TARGET LK_INLINE lk_lanes lk_lanes_upto(size_t left) {
    return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}
LK_TARGET LK_INLINE lk_v lk_load_lanes(const float *p, lk_lanes k) { return _mm512_maskz_loadu_ps(k, p); }
LK_TARGET LK_INLINE void lk_store_lanes(float *p, lk_lanes k, lk_v v) { _mm512_mask_storeu_ps(p, k, v); }

// vscalefps: one rounding, also into the subnormals; overflows to inf.
LK_TARGET LK_INLINE lk_v lk_exp_scale(lk_v p, lk_v n) { return _mm512_scalef_ps(p, n); }

LK_TARGET LK_INLINE lk_v lk_add_where(lk_m m, lk_v a, lk_v b) { return _mm512_mask_add_ps(a, m, a, b); }

#include "lk_vector_simd.h"
#endif
