// lk_pool.h: windowed and global pooling. The windowed kernel walks each
// output row once per kernel cell, adding (or maxing) a strided input row
// into it over exactly the output columns whose window cell lies inside the
// input, so the inner loop has no branch and the compiler vectorizes it.

#include "lk_pool.h"

#include <math.h>

// The number of cells start + i * dilation (i < kernel) inside [lo, hi).
static long lk_cells_inside(long start, long dilation, long kernel, long lo, long hi) {
    long first = start >= lo ? 0 : (lo - start + dilation - 1) / dilation;
    if (hi - 1 < start) return 0;
    long last = (hi - 1 - start) / dilation;
    if (last > kernel - 1) last = kernel - 1;
    return last >= first ? last - first + 1 : 0;
}

static void lk_pool2d_plane(const lk_pool2d_params *p, const float *restrict x, float *restrict y) {
    const int is_max = p->kind == LK_POOL_MAX;
    for (long oy = 0; oy < p->out_h; oy++) {
        float *restrict row = y + oy * p->out_w;
        for (long ox = 0; ox < p->out_w; ox++) row[ox] = is_max ? -INFINITY : 0.0f;
        long top = oy * p->stride_h - p->pad_top;
        for (long ky = 0; ky < p->kernel_h; ky++) {
            long iy = top + ky * p->dilation_h;
            if (iy < 0 || iy >= p->in_h) continue;
            const float *restrict in = x + iy * p->in_w;
            for (long kx = 0; kx < p->kernel_w; kx++) {
                // Column ix = ox * stride_w + shift lies in [0, in_w) for ox in [lo, hi).
                long shift = kx * p->dilation_w - p->pad_left;
                long lo = shift >= 0 ? 0 : (-shift + p->stride_w - 1) / p->stride_w;
                long hi = p->in_w - 1 - shift < 0 ? 0 : (p->in_w - 1 - shift) / p->stride_w + 1;
                if (hi > p->out_w) hi = p->out_w;
                const long sw = p->stride_w;
                if (is_max) {
                    for (long ox = lo; ox < hi; ox++) {
                        float v = in[ox * sw + shift], m = row[ox];
                        row[ox] = v > m ? v : m;
                    }
                } else {
                    for (long ox = lo; ox < hi; ox++) row[ox] += in[ox * sw + shift];
                }
            }
        }
        if (is_max) continue;
        const int include_pad = p->kind == LK_POOL_AVERAGE_INCLUDE_PAD;
        long rows = include_pad
            ? lk_cells_inside(top, p->dilation_h, p->kernel_h, -p->pad_top, p->in_h + p->pad_bottom)
            : lk_cells_inside(top, p->dilation_h, p->kernel_h, 0, p->in_h);
        for (long ox = 0; ox < p->out_w; ox++) {
            long left = ox * p->stride_w - p->pad_left;
            long cols = include_pad
                ? lk_cells_inside(left, p->dilation_w, p->kernel_w, -p->pad_left, p->in_w + p->pad_right)
                : lk_cells_inside(left, p->dilation_w, p->kernel_w, 0, p->in_w);
            long count = rows * cols;
            row[ox] = count > 0 ? row[ox] / (float)count : 0.0f;
        }
    }
}

void lk_pool2d_f32(const lk_pool2d_params *params, const float *x, float *y, size_t planes) {
    size_t in_plane = (size_t)(params->in_h * params->in_w);
    size_t out_plane = (size_t)(params->out_h * params->out_w);
    for (size_t i = 0; i < planes; i++) lk_pool2d_plane(params, x + i * in_plane, y + i * out_plane);
}

// Eight independent partial results, so the loop vectorizes without
// reassociating float arithmetic.
#define LK_LANES 8

static float lk_plane_sum(const float *restrict x, size_t n) {
    float acc[LK_LANES] = {0};
    size_t i = 0;
    for (; i + LK_LANES <= n; i += LK_LANES) {
        for (int j = 0; j < LK_LANES; j++) acc[j] += x[i + j];
    }
    float sum = 0.0f;
    for (; i < n; i++) sum += x[i];
    for (int j = 0; j < LK_LANES; j++) sum += acc[j];
    return sum;
}

static float lk_plane_max(const float *restrict x, size_t n) {
    float acc[LK_LANES];
    for (int j = 0; j < LK_LANES; j++) acc[j] = -INFINITY;
    size_t i = 0;
    for (; i + LK_LANES <= n; i += LK_LANES) {
        for (int j = 0; j < LK_LANES; j++) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
    }
    float m = -INFINITY;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    for (int j = 0; j < LK_LANES; j++) m = acc[j] > m ? acc[j] : m;
    return m;
}

void lk_global_pool_f32(int max, const float *x, float *y, size_t plane, size_t planes) {
    for (size_t i = 0; i < planes; i++) {
        const float *p = x + i * plane;
        y[i] = max ? lk_plane_max(p, plane) : (plane > 0 ? lk_plane_sum(p, plane) / (float)plane : 0.0f);
    }
}
