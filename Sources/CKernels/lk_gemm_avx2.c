// AVX2+FMA microkernel of lk_gemm.h: a 6x16 register block (lk_gemm_simd.h).
// Built without -mavx2: the functions carry the target attribute and run
// only after lk_gemm.c checked the CPU.

#include "lk_gemm_internal.h"

#ifdef LK_HAVE_X86_GEMM
#include <immintrin.h>

#define LK_TARGET __attribute__((target("avx2,fma")))
#define LK_W 8
typedef __m256 lk_v;
#define LK_PS(op) _mm256_##op##_ps
#define LK_GEMM_MR 6
#define LK_GEMM_ISA lk_gemm_avx2

#include "lk_gemm_simd.h"
#endif
