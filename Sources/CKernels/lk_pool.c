// lk_pool.h: windowed and global pooling, separably: for each output row,
// the window's input rows are first folded (added, or maxed) into one
// padded row `v` (pad cells hold 0, or -inf for max), then each kernel
// column folds v's strided cells into the output row. That is kH + kW
// passes over a row instead of kH * kW, every pass spans whole rows at the
// same offsets (so the loops vectorize with no branch, and no vector load
// straddles an earlier vector store: per-tap column spans made the stores
// and loads of the output row misalign, and store-to-load forwarding
// stalls cost more than the pooling), and the spans and divisors are
// worked out once per call, not per row.

#include "lk_pool.h"

#include "lk_kernels.h"

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

// 1 / count, or 0 for no cell (an empty window averages to 0).
static float lk_inverse_count(long count) { return count > 0 ? 1.0f / (float)count : 0.0f; }

// Window columns q in [0, lk_padded_width) read input column q - pad_left.
static long lk_padded_width(const lk_pool2d_params *p) {
    long windows = (p->out_w - 1) * p->stride_w + (p->kernel_w - 1) * p->dilation_w + 1;
    long input = p->pad_left + p->in_w;
    return windows > input ? windows : input;
}

// y[i] = max(y[i], x[i]) or y[i] + x[i], for i < n. A NaN in the window
// propagates, as onnxruntime's MaxPool does: once y[i] is NaN it stays (NaN
// > v is false), and a NaN x[i] is taken (x != x).
static inline __attribute__((always_inline)) void lk_pool_fold(int is_max, const float *restrict x,
                                                               float *restrict y, long n, long stride) {
    if (is_max) {
        for (long i = 0; i < n; i++) {
            float v = x[i * stride], m = y[i];
            y[i] = (v > m || v != v) ? v : m;
        }
    } else {
        for (long i = 0; i < n; i++) y[i] += x[i * stride];
    }
}

// `v`: lk_padded_width floats whose cells outside [q_lo, q_hi) hold the pad
// value; `scale[ox]`: 1 / the divisor's column factor (averages only).
static inline __attribute__((always_inline)) void
lk_pool2d_plane_body(const lk_pool2d_params *p, float *restrict v, long q_lo, long q_hi,
                     const float *restrict scale, const float *restrict x, float *restrict y) {
    const int is_max = p->kind == LK_POOL_MAX;
    const float empty = is_max ? -INFINITY : 0.0f;
    const long sw = p->stride_w, ow = p->out_w;
    for (long oy = 0; oy < p->out_h; oy++) {
        long top = oy * p->stride_h - p->pad_top;
        if (is_max && p->kernel_h == 3 && p->dilation_h == 1 && top >= 0 && top + 2 < p->in_h) {
            // Three rows inside the input: their folds in one pass over v,
            // in the same order (the same NaN rule).
            const float *r0 = x + top * p->in_w + q_lo - p->pad_left, *r1 = r0 + p->in_w, *r2 = r1 + p->in_w;
            for (long q = 0; q < q_hi - q_lo; q++) {
                float m = empty, a = r0[q], b = r1[q], c = r2[q];
                m = (a > m || a != a) ? a : m;
                m = (b > m || b != b) ? b : m;
                v[q_lo + q] = (c > m || c != c) ? c : m;
            }
        } else {
        for (long q = q_lo; q < q_hi; q++) v[q] = empty;
        for (long ky = 0; ky < p->kernel_h; ky++) {
            long iy = top + ky * p->dilation_h;
            if (iy < 0 || iy >= p->in_h) continue;
            lk_pool_fold(is_max, x + iy * p->in_w + q_lo - p->pad_left, v + q_lo, q_hi - q_lo, 1);
        }
        }
        float *restrict row = y + oy * ow;
        if (is_max && p->kernel_w == 3 && sw == 2 && p->dilation_w == 1) {
            // 3x3 stride 2 (resnet, squeezenet): the three column folds in
            // one pass, in the same order (the same NaN rule).
            for (long ox = 0; ox < ow; ox++) {
                float m = empty, a = v[2 * ox], b = v[2 * ox + 1], c = v[2 * ox + 2];
                m = (a > m || a != a) ? a : m;
                m = (b > m || b != b) ? b : m;
                row[ox] = (c > m || c != c) ? c : m;
            }
            continue;
        }
        for (long ox = 0; ox < ow; ox++) row[ox] = empty;
        for (long kx = 0; kx < p->kernel_w; kx++) {
            const float *src = v + kx * p->dilation_w;
            // Constant strides 1 and 2 (the common ones) vectorize.
            if (sw == 1) {
                lk_pool_fold(is_max, src, row, ow, 1);
            } else if (sw == 2) {
                lk_pool_fold(is_max, src, row, ow, 2);
            } else {
                lk_pool_fold(is_max, src, row, ow, sw);
            }
        }
        if (is_max) continue;
        float rows = lk_inverse_count(lk_window_cells(p, top, 0));
        for (long ox = 0; ox < ow; ox++) row[ox] *= rows * scale[ox];
    }
}

static void lk_pool2d_plane(const lk_pool2d_params *p, float *restrict v, long q_lo, long q_hi,
                            const float *restrict scale, const float *restrict x, float *restrict y) {
    lk_pool2d_plane_body(p, v, q_lo, q_hi, scale, x, y);
}

#if defined(__x86_64__)
// The same loops compiled for AVX2: 8 lanes, and the stride-2 column folds
// vectorize as shuffles (SSE2 gathers them lane by lane). Squeezenet's
// first MaxPool (64x111x111, 3x3 stride 2, ceil) took 0.310 ms at 1 thread
// with the SSE2 loops, 0.186 ms with these, 0.136 ms with the one-pass
// 3x3 stride-2 column fold below as well, 0.112 ms with the one-pass
// 3-row fold too (clang -O2 harness, medians of 15, load 4.2-5.6,
// identical bytes); squeezenet's three MaxPools in the model 0.55 ms
// before, 0.31 ms without the row fold, 0.21 ms with it (onnxruntime,
// NCHWc: 0.11 ms; 1 thread, medians of 3 profiles, load 4.5).
#define LK_POOL_HAVE_AVX2 1
__attribute__((target("avx2"))) static void
lk_pool2d_plane_avx2(const lk_pool2d_params *p, float *restrict v, long q_lo, long q_hi,
                     const float *restrict scale, const float *restrict x, float *restrict y) {
    lk_pool2d_plane_body(p, v, q_lo, q_hi, scale, x, y);
}
#endif

size_t lk_pool2d_backward_scratch_floats(const lk_pool2d_params *params) {
    return (size_t)(params->out_w + params->in_w);
}

size_t lk_pool2d_scratch_floats(const lk_pool2d_params *params) {
    return (size_t)(lk_padded_width(params) + params->out_w);
}

void lk_pool2d_f32(const lk_pool2d_params *params, const float *x, float *y, size_t planes, float *scratch) {
    lk_pool2d_f32_isa(lk_kernels_isa(), params, x, y, planes, scratch);
}

void lk_pool2d_f32_isa(lk_isa isa, const lk_pool2d_params *params, const float *x, float *y, size_t planes,
                       float *scratch) {
    const lk_pool2d_params *p = params;
    long width = lk_padded_width(p);
    float *v = scratch, *scale = scratch + width;
    // The window columns that hold input cells; the others stay padding.
    long q_lo = p->pad_left > 0 ? p->pad_left : 0, q_hi = p->pad_left + p->in_w;
    if (q_hi > width) q_hi = width;
    for (long q = 0; q < width; q++) v[q] = p->kind == LK_POOL_MAX ? -INFINITY : 0.0f;
    for (long ox = 0; ox < p->out_w; ox++) {
        scale[ox] = lk_inverse_count(lk_window_cells(p, ox * p->stride_w - p->pad_left, 1));
    }
    size_t in_plane = (size_t)(p->in_h * p->in_w), out_plane = (size_t)(p->out_h * p->out_w);
#ifdef LK_POOL_HAVE_AVX2
    if (isa != LK_ISA_SCALAR && lk_kernels_isa() != LK_ISA_SCALAR) {
        for (size_t i = 0; i < planes; i++) {
            lk_pool2d_plane_avx2(p, v, q_lo, q_hi, scale, x + i * in_plane, y + i * out_plane);
        }
        return;
    }
#endif
    for (size_t i = 0; i < planes; i++) {
        lk_pool2d_plane(p, v, q_lo, q_hi, scale, x + i * in_plane, y + i * out_plane);
    }
}

void lk_global_pool_f32(int max, const float *x, float *y, size_t plane, size_t planes) {
    for (size_t i = 0; i < planes; i++) {
        const float *p = x + i * plane;
        y[i] = max ? lk_reduce_max(p, plane) : (plane > 0 ? lk_reduce_sum(p, plane) / (float)plane : 0.0f);
    }
}

// The backward pass, window by window in output order: an average sends
// g / count to each cell inside the input; a maximum sends all of g to the
// window's first maximal cell in row-major window order (strictly greater
// replaces; a NaN, which the forward pass propagates, is the maximum and
// the first NaN keeps it). Each plane's cells receive their shares in a
// fixed order, so the result does not depend on how planes are split.
void lk_pool2d_backward_f32(const lk_pool2d_params *p, const float *x, const float *g, float *dx, size_t planes,
                            float *scratch) {
    const long in_plane = p->in_h * p->in_w, out_plane = p->out_h * p->out_w;
    const int is_max = p->kind == LK_POOL_MAX;
    // An average's column divisors, once for every plane and row (they were
    // a division per window: most of the pass on 2x2 windows).
    float *col_share = scratch;
    float *spread = !is_max && p->dilation_w == 1 && p->stride_w >= p->kernel_w ? scratch + p->out_w : NULL;
    if (!is_max) {
        for (long ow = 0; ow < p->out_w; ow++) {
            col_share[ow] = lk_inverse_count(lk_window_cells(p, ow * p->stride_w - p->pad_left, 1));
        }
    }
    for (size_t n = 0; n < planes; n++) {
        const float *xp = x + n * in_plane, *gp = g + n * out_plane;
        float *dp = dx + n * in_plane;
        for (long i = 0; i < in_plane; i++) dp[i] = 0;
        for (long oh = 0; oh < p->out_h; oh++) {
            const long row0 = oh * p->stride_h - p->pad_top;
            const float *go = gp + oh * p->out_w;
            if (!is_max) {
                // Window row by window row: a cell still receives its shares
                // in (oh, ow) order, so the sums are those of a window-by-window walk.
                const float row_share = lk_inverse_count(lk_window_cells(p, row0, 0));
                if (spread) {
                    // Windows that do not overlap along the row: each cell's
                    // share from this window row is set once in `spread`,
                    // then added to every row of the window.
                    for (long c = 0; c < p->in_w; c++) spread[c] = 0;
                    for (long ow = 0; ow < p->out_w; ow++) {
                        const float share = go[ow] * row_share * col_share[ow];
                        const long col0 = ow * p->stride_w - p->pad_left;
                        for (long kw = 0; kw < p->kernel_w; kw++) {
                            const long c = col0 + kw;
                            if (c >= 0 && c < p->in_w) spread[c] = share;
                        }
                    }
                }
                for (long kh = 0; kh < p->kernel_h; kh++) {
                    const long r = row0 + kh * p->dilation_h;
                    if (r < 0 || r >= p->in_h) continue;
                    float *drow = dp + r * p->in_w;
                    if (spread) {
                        for (long c = 0; c < p->in_w; c++) drow[c] += spread[c];
                        continue;
                    }
                    for (long ow = 0; ow < p->out_w; ow++) {
                        const float share = go[ow] * row_share * col_share[ow];
                        const long col0 = ow * p->stride_w - p->pad_left;
                        for (long kw = 0; kw < p->kernel_w; kw++) {
                            const long c = col0 + kw * p->dilation_w;
                            if (c >= 0 && c < p->in_w) drow[c] += share;
                        }
                    }
                }
                continue;
            }
            for (long ow = 0; ow < p->out_w; ow++) {
                const long col0 = ow * p->stride_w - p->pad_left;
                long chosen = -1;
                float best = 0;
                for (long kh = 0; kh < p->kernel_h; kh++) {
                    const long r = row0 + kh * p->dilation_h;
                    if (r < 0 || r >= p->in_h) continue;
                    for (long kw = 0; kw < p->kernel_w; kw++) {
                        const long c = col0 + kw * p->dilation_w;
                        if (c < 0 || c >= p->in_w) continue;
                        const float v = xp[r * p->in_w + c];
                        if (chosen < 0 || (best == best && (v > best || v != v))) {
                            chosen = r * p->in_w + c;
                            best = v;
                        }
                    }
                }
                if (chosen >= 0) dp[chosen] += go[ow];
            }
        }
    }
}
