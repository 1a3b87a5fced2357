#ifndef LK_SIMD_AVX2_H
#define LK_SIMD_AVX2_H

// The AVX2+FMA vocabulary the register-blocked kernels (lk_gemm_simd.h,
// lk_winograd_body.h) are written in: the vector type, its width, the
// target attribute, and masked loads and stores that touch no byte of the
// masked-off lanes (which load as 0). Included after <immintrin.h> by a
// file built without target flags, whose functions run only after its
// dispatcher checked the CPU.

#define LK_TARGET __attribute__((target("avx2,fma")))
#define LK_INLINE static inline __attribute__((always_inline))
#define LK_W 8
typedef __m256 lk_v;
#define LK_PS(op) _mm256_##op##_ps

typedef __m256i lk_lanes; // maskload/maskstore take their mask as integers
LK_TARGET LK_INLINE lk_lanes lk_lanes_upto(size_t left) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(left >= 8 ? 8 : (int)left),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
LK_TARGET LK_INLINE lk_v lk_load_lanes(const float *p, lk_lanes k) { return _mm256_maskload_ps(p, k); }
LK_TARGET LK_INLINE void lk_store_lanes(float *p, lk_lanes k, lk_v v) { _mm256_maskstore_ps(p, k, v); }

// The sum of v's lanes, in a fixed order (halves added pairwise).
LK_TARGET LK_INLINE float lk_sum_lanes(lk_v v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// Lanes from a bit mask (bit l: lane l), the depthwise plane path's masks.
LK_TARGET LK_INLINE lk_lanes lk_lanes_bits(uint32_t bits) {
    const __m256i lane = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)bits), lane), lane);
}

// Lanes 0, 2, ..., 14 of lo:hi (the stride-2 depthwise path's columns):
// the shuffle leaves lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6, the permute puts
// the 64-bit pairs in order.
LK_TARGET LK_INLINE lk_v lk_even_lanes(lk_v lo, lk_v hi) {
    __m256 pairs = _mm256_shuffle_ps(lo, hi, 0x88);
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(pairs), 0xD8));
}
// Lanes 1, 3, ..., 15 of lo:hi.
LK_TARGET LK_INLINE lk_v lk_odd_lanes(lk_v lo, lk_v hi) {
    __m256 pairs = _mm256_shuffle_ps(lo, hi, 0xDD);
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(pairs), 0xD8));
}

#include "lk_simd_pair.h"

#endif
