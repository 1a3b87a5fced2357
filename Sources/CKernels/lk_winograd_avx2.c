// avx2 path of lk_winograd.h (lk_winograd_body.h): the transforms vectorized by the
// compiler for this target, a 6x16 register block for the plane products.
// Built without target flags: the functions carry the target attribute and run
// only after lk_winograd.c checked the CPU.

#include "lk_winograd_internal.h"

#ifdef LK_HAVE_X86_WINOGRAD
#include <immintrin.h>

#define LK_TARGET __attribute__((target("avx2,fma")))
#define LK_INLINE static inline __attribute__((always_inline))
#define LK_W 8
typedef __m256 lk_v;
#define LK_PS(op) _mm256_##op##_ps
#define LK_WG_MR 6
#define LK_WG_ISA lk_winograd_avx2

typedef __m256i lk_lanes; // maskload/maskstore take their mask as integers
LK_TARGET LK_INLINE lk_lanes lk_lanes_upto(size_t left) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(left >= 8 ? 8 : (int)left),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
LK_TARGET LK_INLINE lk_v lk_load_lanes(const float *p, lk_lanes k) { return _mm256_maskload_ps(p, k); }
LK_TARGET LK_INLINE void lk_store_lanes(float *p, lk_lanes k, lk_v v) { _mm256_maskstore_ps(p, k, v); }

#include "lk_winograd_body.h"
#endif
