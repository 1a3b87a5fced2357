// AVX2+FMA path of lk_vector.h: 8 floats a step; its own exp (also inside
// sigmoid and softplus), tanh and erf, SLEEF 3.5 for the other transcendental functions
// (its *_u10avx2 versions: at most 1.0 ulp), native instructions for the
// exact ones. The algorithms are lk_vector_simd.h's, shared with
// lk_vector_avx512.c; this file maps that file's names to AVX2
// intrinsics. Built without -mavx2: every function carries the target
// attribute and runs only after lk_vector.c checked the CPU.

#include "lk_vector_internal.h"

#ifdef LK_HAVE_X86_VECTOR
#include <immintrin.h>

#define LK_TARGET __attribute__((target("avx2,fma")))
#define LK_W 8
typedef __m256 lk_v;
typedef __m256 lk_m;      // compares give all-ones lanes, as blendv and and_ps take them
typedef __m256i lk_lanes; // maskload/maskstore take their mask as integers
#define LK_PS(op) _mm256_##op##_ps
#define LK_SLEEF(f) Sleef_##f##f8_u10avx2
#define LK_SLEEF_MAP lk_sleef_map_ymm
#define LK_SLEEF_MAP2 lk_sleef_map2_ymm
#define LK_UNARY_NAME lk_unary_avx2
#define LK_BINARY_NAME lk_binary_avx2
#define LK_SELECT_NAME lk_select_avx2
#define LK_AFFINE_CLAMP_NAME lk_affine_clamp_avx2
#define LK_SELECT_CMP_NAME lk_select_cmp_avx2

LK_TARGET LK_INLINE lk_v lk_abs(lk_v x) {
    return _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
}
LK_TARGET LK_INLINE lk_v lk_neg(lk_v x) { return _mm256_xor_ps(x, _mm256_set1_ps(-0.0f)); }
LK_TARGET LK_INLINE lk_v lk_copysign(lk_v m, lk_v s) {
    const lk_v sign = _mm256_set1_ps(-0.0f);
    return _mm256_or_ps(_mm256_andnot_ps(sign, m), _mm256_and_ps(sign, s));
}
LK_TARGET LK_INLINE lk_v lk_floor(lk_v x) { return _mm256_floor_ps(x); }
LK_TARGET LK_INLINE lk_v lk_ceil(lk_v x) { return _mm256_ceil_ps(x); }
LK_TARGET LK_INLINE lk_v lk_round(lk_v x) {
    return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

#define lk_cmp(a, b, pred) _mm256_cmp_ps(a, b, pred)
LK_TARGET LK_INLINE lk_v lk_blend(lk_m m, lk_v a, lk_v b) { return _mm256_blendv_ps(a, b, m); }
LK_TARGET LK_INLINE lk_v lk_bool(lk_m m) { return _mm256_and_ps(m, _mm256_set1_ps(1.0f)); }

// maskload/maskstore touch no byte of the masked-off lanes (they load as 0).
LK_TARGET LK_INLINE lk_lanes lk_lanes_upto(size_t left) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(left >= 8 ? 8 : (int)left),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
LK_TARGET LK_INLINE lk_v lk_load_lanes(const float *p, lk_lanes k) { return _mm256_maskload_ps(p, k); }
LK_TARGET LK_INLINE void lk_store_lanes(float *p, lk_lanes k, lk_v v) { _mm256_maskstore_ps(p, k, v); }

// Without vscalefps, 2^n is applied as two powers of two
// 2^(n/2) * 2^(n - n/2), each a normal float for n in [-159, 128], so the
// second product rounds once into the subnormals or overflows to inf
// exactly where e^x does.
LK_TARGET LK_INLINE lk_v lk_exp_scale(lk_v p, lk_v n) {
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i n1 = _mm256_srai_epi32(ni, 1);
    __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    lk_v s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    lk_v s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

// a + (b where m, +0 elsewhere). Unlike AVX-512's masked add this turns a
// -0 outside m into +0: log1p(-0) is +0 on this path (-0 on the others).
// Kept as it was; a blendv instead of the and would match the others.
LK_TARGET LK_INLINE lk_v lk_add_where(lk_m m, lk_v a, lk_v b) {
    return _mm256_add_ps(a, _mm256_and_ps(m, b));
}

#include "lk_vector_simd.h"
#endif
