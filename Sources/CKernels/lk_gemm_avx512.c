// AVX-512F microkernel of lk_gemm.h: an 8x32 register block (lk_gemm_simd.h).
// Built without -mavx512f: the functions carry the target attribute and run
// only after lk_gemm.c checked the CPU.

#include "lk_gemm_internal.h"

#ifdef LK_HAVE_X86_GEMM
#include <immintrin.h>

#define LK_TARGET __attribute__((target("avx512f")))
#define LK_W 16
typedef __m512 lk_v;
#define LK_PS(op) _mm512_##op##_ps
#define LK_GEMM_MR 8
#define LK_GEMM_ISA lk_gemm_avx512

#include "lk_gemm_simd.h"
#endif
