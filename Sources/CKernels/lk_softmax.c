// lk_softmax.h. Contiguous slices (inner == 1) are one row each; otherwise
// a block's axis rows are combined element-wise along `inner`, so every
// loop runs over contiguous floats and the exponentials go through
// lk_unary_f32 (SIMD) over the whole block.

#include "lk_softmax.h"

#include <math.h>

#include "lk_reduce.h"
#include "lk_vector.h"

static void lk_softmax_row(const float *restrict x, float *restrict y, size_t n, lk_softmax_kind kind) {
    float m = lk_reduce_max(x, n);
    for (size_t i = 0; i < n; i++) y[i] = x[i] - m;
    lk_unary_f32(LK_EXP, y, y, n);
    float sum = lk_reduce_sum(y, n);
    if (kind == LK_LOG_SOFTMAX) {
        float log_sum = logf(sum);
        for (size_t i = 0; i < n; i++) y[i] = (x[i] - m) - log_sum;
    } else {
        for (size_t i = 0; i < n; i++) y[i] /= sum;
    }
}

static void lk_softmax_block(const float *restrict x, float *restrict y, size_t axis, size_t inner,
                             float *restrict m, float *restrict sum, lk_softmax_kind kind) {
    for (size_t j = 0; j < inner; j++) m[j] = -INFINITY;
    for (size_t a = 0; a < axis; a++) {
        const float *row = x + a * inner;
        for (size_t j = 0; j < inner; j++) m[j] = row[j] > m[j] ? row[j] : m[j];
    }
    for (size_t a = 0; a < axis; a++) {
        for (size_t j = 0; j < inner; j++) y[a * inner + j] = x[a * inner + j] - m[j];
    }
    lk_unary_f32(LK_EXP, y, y, axis * inner);
    for (size_t j = 0; j < inner; j++) sum[j] = 0.0f;
    for (size_t a = 0; a < axis; a++) {
        for (size_t j = 0; j < inner; j++) sum[j] += y[a * inner + j];
    }
    if (kind == LK_LOG_SOFTMAX) {
        for (size_t j = 0; j < inner; j++) sum[j] = logf(sum[j]);
        for (size_t a = 0; a < axis; a++) {
            for (size_t j = 0; j < inner; j++) y[a * inner + j] = (x[a * inner + j] - m[j]) - sum[j];
        }
    } else {
        for (size_t a = 0; a < axis; a++) {
            for (size_t j = 0; j < inner; j++) y[a * inner + j] /= sum[j];
        }
    }
}

// 1 at the first largest value of each axis column (the first NaN, if any), 0 elsewhere.
static void lk_hardmax_block(const float *restrict x, float *restrict y, size_t axis, size_t inner) {
    for (size_t j = 0; j < inner; j++) {
        size_t best = 0;
        for (size_t a = 1; a < axis; a++) {
            float v = x[a * inner + j], b = x[best * inner + j];
            if (b == b && (v > b || v != v)) best = a;
        }
        for (size_t a = 0; a < axis; a++) y[a * inner + j] = a == best ? 1.0f : 0.0f;
    }
}

void lk_softmax_f32(const float *x, float *y, size_t outer, size_t axis, size_t inner, float *scratch,
                    lk_softmax_kind kind) {
    size_t block = axis * inner;
    for (size_t o = 0; o < outer; o++) {
        if (kind == LK_HARDMAX) {
            lk_hardmax_block(x + o * block, y + o * block, axis, inner);
        } else if (inner == 1) {
            lk_softmax_row(x + o * block, y + o * block, axis, kind);
        } else {
            lk_softmax_block(x + o * block, y + o * block, axis, inner, scratch, scratch + inner, kind);
        }
    }
}
