#ifndef LK_WINOGRAD_INTERNAL_H
#define LK_WINOGRAD_INTERNAL_H

// The per-instruction-set halves of lk_winograd.h (lk_winograd_body.h),
// used by its driver (lk_winograd.c) after it checked the CPU.

#include "lk_winograd.h"

/// One block of tile rows of one image, as the transforms see it.
typedef struct {
    size_t channels, out_channels, height, width, out_height, out_width, pad_top, pad_left;
    size_t mp;       ///< out_channels rounded up to the register block's rows
    size_t tw;       ///< tiles a row: ceil(OW / tile)
    size_t r0, rb;   ///< the block's first tile row and its tile rows
    size_t tp;       ///< floats between rows of a plane (>= rb * tw)
    size_t wl;       ///< a padded line: (tw + 1) * tile floats
} lk_wg_block;

/// C[mr x cols] = A * B over k steps (cols <= nr): `a` packed, mr values a
/// step; B rows `ldb` floats apart; C rows `ldc` apart. Stores (no
/// accumulation); nothing past `cols` columns is read or written.
typedef void lk_wg_kernel_fn(size_t k, const float *a, const float *b, size_t ldb, float *c, size_t ldc,
                             size_t cols);
/// Two row panels at once for cols <= nr / 2: a0 -> c, a1 -> c + mr * ldc.
typedef void lk_wg_narrow_fn(size_t k, const float *a0, const float *a1, const float *b, size_t ldb,
                             float *c, size_t ldc, size_t cols);
/// The input transform of every channel of a block into v[(m+2)^2][C][tp],
/// with `scratch` of (rb * tile + 3 + tile + 2) * wl floats. Returns
/// nonzero when an input cell it read is inf or NaN.
typedef int lk_wg_input_fn(const lk_wg_block *b, const float *x, float *v, float *scratch);
/// The output transform of o[(m+2)^2][mp][tp] into y (M x OH x OW), bias
/// added, rows of the block only; `scratch` of (tile + 1) * wl floats.
typedef void lk_wg_output_fn(const lk_wg_block *b, const float *o, const float *bias, float *y,
                             float *scratch);

typedef struct {
    size_t mr, nr;
    lk_wg_kernel_fn *kernel;
    lk_wg_narrow_fn *narrow;
    lk_wg_input_fn *input[2];   ///< F(2x2), F(4x4)
    lk_wg_output_fn *output[2];
} lk_winograd_isa;

extern const lk_winograd_isa lk_winograd_scalar;
#if defined(__x86_64__)
#define LK_HAVE_X86_WINOGRAD 1
extern const lk_winograd_isa lk_winograd_avx2, lk_winograd_avx512;
#endif

#endif
