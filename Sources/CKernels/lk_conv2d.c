// lk_conv2d_f32 (lk_gemm.h): convolution as matrix products, or a direct
// loop when depthwise.
//
// For one group, with K = C/group * kH * kW rows (c, ky, kx) and one column
// per output pixel, Y_g[Mg x P] = W_g[Mg x K] * X_g[K x P]. A 1x1 kernel of
// stride 1 without pads reads X_g straight from the input (it is the input,
// C/group x H*W); otherwise X_g's columns [first, first + count) are
// gathered first (im2col). (Gathering panel by panel while packing B, with
// no K x count buffer, measured no faster: the per-segment work of the
// gather costs, not the buffer's memory traffic.) Depthwise convolutions
// (one input channel per output channel) have K = kH*kW, too few for a matrix product to pay: they
// run as kH*kW row updates (axpy, vectorized when stride_w is 1) per output
// row.

#include "lk_gemm_internal.h"

#include <stdlib.h>
#include <string.h>

// Output columns ox0 .. ox0 + seg - 1 read input column ox * sw + off. The
// ones inside [0, width) are ox0 + [*lo, *hi), possibly empty.
static void lk_valid_span(size_t ox0, size_t seg, size_t sw, ptrdiff_t off, size_t width, size_t *lo,
                          size_t *hi) {
    ptrdiff_t s = (ptrdiff_t)sw, o = (ptrdiff_t)ox0, l, h;
    if (sw == 1) { // no division: this runs once per row segment and tap
        l = -off - o;
        h = (ptrdiff_t)width - off - o;
    } else {
        ptrdiff_t first = off >= 0 ? 0 : (-off + s - 1) / s;
        ptrdiff_t last = (ptrdiff_t)width - 1 - off;
        l = first - o;
        h = (last < 0 ? 0 : last / s + 1) - o;
    }
    l = l < 0 ? 0 : (l > (ptrdiff_t)seg ? (ptrdiff_t)seg : l);
    h = h < l ? l : (h > (ptrdiff_t)seg ? (ptrdiff_t)seg : h);
    *lo = (size_t)l;
    *hi = (size_t)h;
}

// The input row that output row oy reads at kernel row ky, or NULL in the padding.
static const float *lk_input_row(const lk_conv2d_shape *s, const float *plane, size_t oy, size_t ky) {
    ptrdiff_t iy = (ptrdiff_t)(oy * s->stride_h + ky * s->dilation_h) - (ptrdiff_t)s->pad_top;
    return iy < 0 || iy >= (ptrdiff_t)s->height ? NULL : plane + (size_t)iy * s->width;
}

// X_g's columns [first, first + count): row (c, ky, kx) of `cg` channels of `x`.
static void lk_im2col(const lk_conv2d_shape *s, const float *x, size_t cg, size_t first, size_t count,
                      float *col) {
    size_t ow = s->out_width, sw = s->stride_w;
    for (size_t c = 0; c < cg; c++) {
        const float *plane = x + c * s->height * s->width;
        for (size_t ky = 0; ky < s->kernel_h; ky++) {
            for (size_t kx = 0; kx < s->kernel_w; kx++) {
                ptrdiff_t off = (ptrdiff_t)(kx * s->dilation_w) - (ptrdiff_t)s->pad_left;
                for (size_t p = first, seg; p < first + count; p += seg, col += seg) {
                    size_t oy = p / ow, ox0 = p % ow, lo = 0, hi = 0;
                    seg = ow - ox0 < first + count - p ? ow - ox0 : first + count - p;
                    const float *row = lk_input_row(s, plane, oy, ky);
                    if (row) lk_valid_span(ox0, seg, sw, off, s->width, &lo, &hi);
                    const float *src = row ? row + (ptrdiff_t)(ox0 * sw) + off : NULL;
                    memset(col, 0, lo * sizeof(float));
                    if (sw == 1 && hi > lo) {
                        memcpy(col + lo, src + lo, (hi - lo) * sizeof(float));
                    } else {
                        for (size_t j = lo; j < hi; j++) col[j] = src[j * sw];
                    }
                    memset(col + hi, 0, (seg - hi) * sizeof(float));
                }
            }
        }
    }
}

static void lk_depthwise(const lk_gemm_isa *isa, const lk_conv2d_shape *s, const float *x,
                         const float *w, const float *bias, float *y, size_t first, size_t count) {
    size_t ow = s->out_width, sw = s->stride_w, taps = s->kernel_h * s->kernel_w;
    for (size_t c = 0; c < s->channels; c++) {
        const float *plane = x + c * s->height * s->width, *wc = w + c * taps;
        float *yc = y + c * s->out_height * ow;
        for (size_t p = first, seg; p < first + count; p += seg) {
            size_t oy = p / ow, ox0 = p % ow;
            seg = ow - ox0 < first + count - p ? ow - ox0 : first + count - p;
            float *out = yc + p, b = bias ? bias[c] : 0.0f;
            for (size_t j = 0; j < seg; j++) out[j] = b;
            for (size_t ky = 0; ky < s->kernel_h; ky++) {
                const float *row = lk_input_row(s, plane, oy, ky);
                for (size_t kx = 0; row && kx < s->kernel_w; kx++) {
                    ptrdiff_t off = (ptrdiff_t)(kx * s->dilation_w) - (ptrdiff_t)s->pad_left;
                    size_t lo, hi;
                    lk_valid_span(ox0, seg, sw, off, s->width, &lo, &hi);
                    if (hi > lo) {
                        isa->axpy(hi - lo, wc[ky * s->kernel_w + kx], row + (ptrdiff_t)((ox0 + lo) * sw) + off,
                                  sw, out + lo);
                    }
                }
            }
        }
    }
}

static int lk_conv2d_run(const lk_gemm_isa *isa, const lk_conv2d_shape *s, const float *x,
                         const float *w, const float *bias, float *y, size_t first, size_t count) {
    if (count == 0) return 0;
    size_t g = s->group, plane = s->height * s->width, pixels = s->out_height * s->out_width;
    if (g == s->channels && g == s->out_channels) {
        lk_depthwise(isa, s, x, w, bias, y, first, count);
        return 0;
    }
    size_t cg = s->channels / g, mg = s->out_channels / g, k = cg * s->kernel_h * s->kernel_w;
    int pointwise = s->kernel_h == 1 && s->kernel_w == 1 && s->stride_h == 1 && s->stride_w == 1
        && s->pad_top == 0 && s->pad_left == 0 && s->out_height == s->height && s->out_width == s->width;
    float *col = NULL;
    if (!pointwise && !(col = malloc(k * count * sizeof(float)))) return -1;
    int status = 0;
    for (size_t i = 0; i < g && status == 0; i++) {
        const float *xg = x + i * cg * plane;
        if (!pointwise) lk_im2col(s, xg, cg, first, count, col);
        status = lk_sgemm_run(isa, mg, count, k, 1.0f, w + i * mg * k, k, 1, pointwise ? xg + first : col,
                              pointwise ? plane : count, y + i * mg * pixels + first, pixels,
                              bias ? bias + i * mg : NULL, NULL, 0);
    }
    free(col);
    return status;
}

int lk_conv2d_f32(const lk_conv2d_shape *shape, const float *x, const float *w, const float *bias,
                  float *y, size_t first, size_t count) {
    return lk_conv2d_run(lk_gemm_for(lk_kernels_isa()), shape, x, w, bias, y, first, count);
}

int lk_conv2d_f32_isa(lk_isa isa, const lk_conv2d_shape *shape, const float *x, const float *w,
                      const float *bias, float *y, size_t first, size_t count) {
    if (isa > lk_kernels_isa()) return -1;
    return lk_conv2d_run(lk_gemm_for(isa), shape, x, w, bias, y, first, count);
}
