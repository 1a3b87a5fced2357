// lk_pool.h: windowed and global pooling. The windowed kernel walks each
// output row once per kernel cell, adding (or maxing) a strided input row
// into it over exactly the output columns whose window cell lies inside the
// input, so the inner loop has no branch and the compiler vectorizes it.

#include "lk_pool.h"

#include <math.h>

#include "lk_reduce.h"

// The number of cells start + i * dilation (i < kernel) inside [lo, hi).
static long lk_cells_inside(long start, long dilation, long kernel, long lo, long hi) {
    long first = start >= lo ? 0 : (lo - start + dilation - 1) / dilation;
    if (hi - 1 < start) return 0;
    long last = (hi - 1 - start) / dilation;
    if (last > kernel - 1) last = kernel - 1;
    return last >= first ? last - first + 1 : 0;
}

// The cells of a window starting at `start` along rows (`axis` 0) or
// columns (1) that the divisor counts: those inside the input, or inside
// the padded extent when pad cells count.
static long lk_window_cells(const lk_pool2d_params *p, long start, int axis) {
    const int include_pad = p->kind == LK_POOL_AVERAGE_INCLUDE_PAD;
    long dilation = axis ? p->dilation_w : p->dilation_h, kernel = axis ? p->kernel_w : p->kernel_h;
    long extent = axis ? p->in_w : p->in_h;
    long before = include_pad ? (axis ? p->pad_left : p->pad_top) : 0;
    long after = include_pad ? (axis ? p->pad_right : p->pad_bottom) : 0;
    return lk_cells_inside(start, dilation, kernel, -before, extent + after);
}

// `columns[ox]`: the divisor's column factor of output column ox (averages only).
static void lk_pool2d_plane(const lk_pool2d_params *p, const float *restrict columns, const float *restrict x,
                            float *restrict y) {
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
        float rows = (float)lk_window_cells(p, top, 0);
        for (long ox = 0; ox < p->out_w; ox++) {
            float count = rows * columns[ox];
            row[ox] = count > 0 ? row[ox] / count : 0.0f;
        }
    }
}

void lk_pool2d_f32(const lk_pool2d_params *params, const float *x, float *y, size_t planes, float *columns) {
    size_t in_plane = (size_t)(params->in_h * params->in_w);
    size_t out_plane = (size_t)(params->out_h * params->out_w);
    for (long ox = 0; ox < params->out_w; ox++) {
        columns[ox] = (float)lk_window_cells(params, ox * params->stride_w - params->pad_left, 1);
    }
    for (size_t i = 0; i < planes; i++) lk_pool2d_plane(params, columns, x + i * in_plane, y + i * out_plane);
}

void lk_global_pool_f32(int max, const float *x, float *y, size_t plane, size_t planes) {
    for (size_t i = 0; i < planes; i++) {
        const float *p = x + i * plane;
        y[i] = max ? lk_reduce_max(p, plane) : (plane > 0 ? lk_reduce_sum(p, plane) / (float)plane : 0.0f);
    }
}
