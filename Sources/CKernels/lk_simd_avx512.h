#ifndef LK_SIMD_AVX512_H
#define LK_SIMD_AVX512_H

// The AVX-512F vocabulary the register-blocked kernels (lk_gemm_simd.h,
// lk_winograd_body.h) are written in: the vector type, its width, the
// target attribute, and masked loads and stores that touch no byte of the
// masked-off lanes (which load as 0). Included after <immintrin.h> by a
// file built without target flags, whose functions run only after its
// dispatcher checked the CPU.

#define LK_TARGET __attribute__((target("avx512f")))
#define LK_INLINE static inline __attribute__((always_inline))
#define LK_W 16
typedef __m512 lk_v;
#define LK_PS(op) _mm512_##op##_ps

typedef __mmask16 lk_lanes;
LK_TARGET LK_INLINE lk_lanes lk_lanes_upto(size_t left) {
    return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}
LK_TARGET LK_INLINE lk_v lk_load_lanes(const float *p, lk_lanes k) { return _mm512_maskz_loadu_ps(k, p); }
LK_TARGET LK_INLINE void lk_store_lanes(float *p, lk_lanes k, lk_v v) { _mm512_mask_storeu_ps(p, k, v); }

// The sum of v's lanes, in a fixed order (halves added pairwise).
LK_TARGET LK_INLINE float lk_sum_lanes(lk_v v) { return _mm512_reduce_add_ps(v); }

// Lanes from a bit mask (bit l: lane l), the depthwise plane path's masks.
LK_TARGET LK_INLINE lk_lanes lk_lanes_bits(uint32_t bits) { return (__mmask16)bits; }

// Lanes 0, 2, ..., 30 of lo:hi (the stride-2 depthwise path's columns).
LK_TARGET LK_INLINE lk_v lk_even_lanes(lk_v lo, lk_v hi) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_permutex2var_ps(lo, even, hi);
}
// Lanes 1, 3, ..., 31 of lo:hi.
LK_TARGET LK_INLINE lk_v lk_odd_lanes(lk_v lo, lk_v hi) {
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    return _mm512_permutex2var_ps(lo, odd, hi);
}

#include "lk_simd_pair.h"

#endif
