// AVX-512F microkernel of lk_gemm.h: an 8x32 register block (lk_gemm_simd.h).
// Built without -mavx512f: the functions carry the target attribute and run
// only after lk_gemm.c checked the CPU. Masked loads and stores touch no
// byte of the masked-off lanes (which load as 0).

#include "lk_gemm_internal.h"

#ifdef LK_HAVE_X86_GEMM
#include <immintrin.h>

#define LK_TARGET __attribute__((target("avx512f")))
#define LK_W 16
typedef __m512 lk_v;
#define LK_PS(op) _mm512_##op##_ps
#define LK_GEMM_MR 8
#define LK_GEMM_ISA lk_gemm_avx512

#define LK_INLINE static inline __attribute__((always_inline))
typedef __mmask16 lk_lanes;
LK_TARGET LK_INLINE lk_lanes lk_lanes_upto(size_t left) {
    return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}
LK_TARGET LK_INLINE lk_v lk_load_lanes(const float *p, lk_lanes k) { return _mm512_maskz_loadu_ps(k, p); }
LK_TARGET LK_INLINE void lk_store_lanes(float *p, lk_lanes k, lk_v v) { _mm512_mask_storeu_ps(p, k, v); }
LK_TARGET LK_INLINE lk_lanes lk_lanes_bits(uint32_t bits) { return (__mmask16)bits; }

#include "lk_gemm_simd.h"
#endif
