// AVX2+FMA microkernel of lk_gemm.h: a 6x16 register block (lk_gemm_simd.h).
// Built without -mavx2: the functions carry the target attribute and run
// only after lk_gemm.c checked the CPU. Masked loads and stores touch no
// byte of the masked-off lanes (which load as 0).

#include "lk_gemm_internal.h"

#ifdef LK_HAVE_X86_GEMM
#include <immintrin.h>

#include "lk_simd_avx2.h"

#define LK_GEMM_MR 6
#define LK_GEMM_ISA lk_gemm_avx2

#include "lk_gemm_simd.h"
#endif
