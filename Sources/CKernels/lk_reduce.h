#ifndef LK_REDUCE_H
#define LK_REDUCE_H

// Sum and maximum of a float array for lk_pool.c and lk_softmax.c, with
// eight independent partial results so the loops vectorize without the
// compiler reassociating float arithmetic.

#include <math.h>
#include <stddef.h>

#define LK_REDUCE_LANES 8

/// x[0] + ... + x[n-1] (0 for n = 0), in float.
static inline float lk_reduce_sum(const float *restrict x, size_t n) {
    float acc[LK_REDUCE_LANES] = {0};
    size_t i = 0;
    for (; i + LK_REDUCE_LANES <= n; i += LK_REDUCE_LANES) {
        for (int j = 0; j < LK_REDUCE_LANES; j++) acc[j] += x[i + j];
    }
    float sum = 0.0f;
    for (; i < n; i++) sum += x[i];
    for (int j = 0; j < LK_REDUCE_LANES; j++) sum += acc[j];
    return sum;
}

/// The largest of x[0..<n], NaN if any is NaN (-inf when n is 0).
static inline float lk_reduce_max(const float *restrict x, size_t n) {
    float acc[LK_REDUCE_LANES];
    for (int j = 0; j < LK_REDUCE_LANES; j++) acc[j] = -INFINITY;
    size_t i = 0;
    for (; i + LK_REDUCE_LANES <= n; i += LK_REDUCE_LANES) {
        for (int j = 0; j < LK_REDUCE_LANES; j++) acc[j] = (x[i + j] > acc[j] || x[i + j] != x[i + j]) ? x[i + j] : acc[j];
    }
    float m = -INFINITY;
    for (; i < n; i++) m = (x[i] > m || x[i] != x[i]) ? x[i] : m;
    for (int j = 0; j < LK_REDUCE_LANES; j++) m = (acc[j] > m || acc[j] != acc[j]) ? acc[j] : m;
    return m;
}

#endif
