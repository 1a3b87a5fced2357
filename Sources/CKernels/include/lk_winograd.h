#ifndef LK_WINOGRAD_H
#define LK_WINOGRAD_H

// Winograd convolution F(m x m, 3 x 3), m = 2 or 4, for the 3x3 stride-1
// dilation-1 ungrouped convolutions that make most of a CNN's work:
// each m x m output tile is A^T [ sum_c (G g_c G^T) . (B^T d_c B) ] A, with
// d_c the (m+2) x (m+2) input patch of channel c. Run in the batched-GEMM
// form: the input tiles of a block of tile rows transformed into (m+2)^2
// planes [C x tiles], one matrix product per plane with the pre-transformed
// weights U [M x C], and the output transform, bias added, into the output.
//
// Interpolation points: F(2x2): 0, 1, -1, inf. F(4x4): 0, 1, -1, 1/2, -2,
// inf, chosen by measured error against float64 (random data, 64 channels:
// max error 4.7e-7 of the sum of |w||x| terms, against 1.3e-6 for the usual
// 0, +-1, +-2 and 1.0e-6 for 0, +-1, +-1/2).
//
// Like the other kernels they run on AVX-512F, AVX2+FMA or portable C; the
// packed weights depend on the instruction set (its register block), so
// pack and run with the same one.

#include <stddef.h>

#include "lk_gemm.h"

/// Floats of `lk_winograd_pack_weights`'s output for F(tile x tile, 3x3)
/// on `isa` with `out_channels` M and `channels` C; 0 for a tile other than
/// 2 or 4.
size_t lk_winograd_weights_floats(lk_isa isa, int tile, size_t out_channels, size_t channels);

/// The weights w [M][C][3][3] transformed (G g G^T, computed in double and
/// rounded once) into `packed` (lk_winograd_weights_floats floats), laid
/// out for `isa`'s matrix-product block. Returns 0; 1 when a weight is inf
/// or NaN (packed as computed, but not for use: the transform would spread
/// it over the tile); -1 for a tile other than 2 or 4, or an `isa` this CPU
/// lacks.
int lk_winograd_pack_weights(lk_isa isa, int tile, size_t out_channels, size_t channels, const float *w,
                             float *packed);

/// Output rows [tile_row_first * tile, min(OH, (tile_row_first + tile_rows) * tile))
/// of every output channel of one image (x C x H x W, y M x OH x OW), from
/// weights packed for the same `isa` and tile; bias (M values) may be
/// NULL. `shape` must be a 3x3 kernel, stride 1, dilation 1, group 1; the
/// trailing pads follow from OH = H + pad_top + pad_bottom - 2 (likewise
/// OW). Single-threaded: callers split the tile rows. Returns 0; 1 when
/// an input cell of these rows is inf or NaN (the rows are then left
/// partly written: a transform mixes a tile's cells, so one inf would turn
/// a whole tile's outputs to NaN where a direct sum gives inf in some and
/// finite values in others; run the direct path for them); -1 when the
/// work buffer cannot be allocated (y untouched); -2 for a shape, tile or
/// isa it does not take. The work buffer is the calling thread's, kept
/// between calls (freed when the thread exits).
int lk_winograd_conv2d_f32(lk_isa isa, int tile, const lk_conv2d_shape *shape, const float *x,
                           const float *packed, const float *bias, float *y, size_t tile_row_first,
                           size_t tile_rows);

#endif
