// avx512 path of lk_winograd.h (lk_winograd_body.h): the transforms vectorized by the
// compiler for this target, a 8x32 register block for the plane products.
// Built without target flags: the functions carry the target attribute and run
// only after lk_winograd.c checked the CPU.

#include "lk_winograd_internal.h"

#ifdef LK_HAVE_X86_WINOGRAD
#include <immintrin.h>

#define LK_TARGET __attribute__((target("avx512f")))
#define LK_INLINE static inline __attribute__((always_inline))
#define LK_W 16
typedef __m512 lk_v;
#define LK_PS(op) _mm512_##op##_ps
#define LK_WG_MR 8
#define LK_WG_ISA lk_winograd_avx512

typedef __mmask16 lk_lanes;
LK_TARGET LK_INLINE lk_lanes lk_lanes_upto(size_t left) {
    return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}
LK_TARGET LK_INLINE lk_v lk_load_lanes(const float *p, lk_lanes k) { return _mm512_maskz_loadu_ps(k, p); }
LK_TARGET LK_INLINE void lk_store_lanes(float *p, lk_lanes k, lk_v v) { _mm512_mask_storeu_ps(p, k, v); }

#include "lk_winograd_body.h"
#endif
