// avx512 path of lk_winograd.h (lk_winograd_body.h): the transforms vectorized by the
// compiler for this target, a 8x32 register block for the plane products.
// Built without target flags: the functions carry the target attribute and run
// only after lk_winograd.c checked the CPU.

#include "lk_winograd_internal.h"

#ifdef LK_HAVE_X86_WINOGRAD
#include <immintrin.h>

#include "lk_simd_avx512.h"

#define LK_WG_MR 8
#define LK_WG_ISA lk_winograd_avx512

#include "lk_winograd_body.h"
#endif
