// AVX-512F microkernel of lk_gemm.h: an 8x32 register block (lk_gemm_simd.h).
// Built without -mavx512f: the functions carry the target attribute and run
// only after lk_gemm.c checked the CPU. Masked loads and stores touch no
// byte of the masked-off lanes (which load as 0).

#include "lk_gemm_internal.h"

#ifdef LK_HAVE_X86_GEMM
#include <immintrin.h>

#include "lk_simd_avx512.h"

#define LK_GEMM_MR 8
#define LK_GEMM_ISA lk_gemm_avx512

#include "lk_gemm_simd.h"
#endif
