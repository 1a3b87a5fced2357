#ifndef LK_SOFTMAX_H
#define LK_SOFTMAX_H

// Softmax, LogSoftmax and Hardmax along one axis of a row-major tensor
// viewed as [outer, axis, inner].

#include <stddef.h>

/// What lk_softmax_f32 computes along the axis.
typedef enum {
    LK_SOFTMAX = 0,      ///< exp(x - max) / sum(exp(x - max)).
    LK_LOG_SOFTMAX = 1,  ///< (x - max) - log(sum(exp(x - max))).
    LK_HARDMAX = 2,      ///< 1 at the first maximum, 0 elsewhere.
} lk_softmax_kind;

/// `kind` along the middle axis, for the `outer` blocks of axis x inner
/// floats of `x`, into `y` (which must not overlap `x`). Subtracting the
/// maximum keeps exp from overflowing; sums are in float. `scratch` holds
/// 2 * inner floats. For (log) softmax a slice with NaN, or with +inf, is
/// all NaN; so is one whose every value is -inf.
void lk_softmax_f32(const float *x, float *y, size_t outer, size_t axis, size_t inner, float *scratch,
                    lk_softmax_kind kind);

#endif
