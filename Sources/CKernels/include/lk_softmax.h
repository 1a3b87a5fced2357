#ifndef LK_SOFTMAX_H
#define LK_SOFTMAX_H

// Softmax along one axis of a row-major tensor viewed as [outer, axis, inner].

#include <stddef.h>

/// y = exp(x - max) / sum(exp(x - max)) along the middle axis, for the
/// `outer` blocks of axis x inner floats of `x`, into `y` (which must not
/// overlap `x`). Subtracting the maximum keeps exp from overflowing; sums
/// are in float. `scratch` holds 2 * inner floats. A slice with NaN, or with
/// +inf, is all NaN; so is one whose every value is -inf.
void lk_softmax_f32(const float *x, float *y, size_t outer, size_t axis, size_t inner, float *scratch);

#endif
