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

// Lanes from a bit mask (bit l: lane l), the depthwise plane path's masks.
LK_TARGET LK_INLINE lk_lanes lk_lanes_bits(uint32_t bits) {
    const __m256i lane = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)bits), lane), lane);
}

#include "lk_simd_pair.h"

#endif
