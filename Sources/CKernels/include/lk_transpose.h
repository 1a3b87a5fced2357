#ifndef LK_TRANSPOSE_H
#define LK_TRANSPOSE_H

// Matrix transposition for the backward passes' packings.

#include <stddef.h>

/// dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols. `src` and
/// `dst` must not overlap. Works in tiles, so that a source whose rows lie
/// a page apart (planes of an NCHW tensor) is read a cache line at a time
/// instead of one float per line.
void lk_transpose_f32(size_t rows, size_t cols, const float *src, size_t lds, float *dst, size_t ldd);

#endif
