// lk_softmax.h. Contiguous slices (inner == 1) are one row each; otherwise
// a block's axis rows are combined element-wise along `inner`, so every
// loop runs over contiguous floats and the exponentials go through
// lk_unary_f32 (SIMD) over the whole block.

#include "lk_softmax.h"

#include <math.h>

#include "lk_reduce.h"
#include "lk_vector.h"

static void lk_softmax_row(const float *restrict x, float *restrict y, size_t n) {
    float m = lk_reduce_max(x, n);
    for (size_t i = 0; i < n; i++) y[i] = x[i] - m;
    lk_unary_f32(LK_EXP, y, y, n);
    float sum = lk_reduce_sum(y, n);
    for (size_t i = 0; i < n; i++) y[i] /= sum;
}

static void lk_softmax_block(const float *restrict x, float *restrict y, size_t axis, size_t inner,
                             float *restrict m, float *restrict sum) {
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
    for (size_t a = 0; a < axis; a++) {
        for (size_t j = 0; j < inner; j++) y[a * inner + j] /= sum[j];
    }
}

void lk_softmax_f32(const float *x, float *y, size_t outer, size_t axis, size_t inner, float *scratch) {
    size_t block = axis * inner;
    for (size_t o = 0; o < outer; o++) {
        if (inner == 1) {
            lk_softmax_row(x + o * block, y + o * block, axis);
        } else {
            lk_softmax_block(x + o * block, y + o * block, axis, inner, scratch, scratch + inner);
        }
    }
}
