// lk_conv2d_f32 (lk_gemm.h): convolution as a direct loop, or as matrix
// products.
//
// Direct (most convolutions): the input rows a pixel range reads are copied
// once per group, zero-padded and split by column stride, so that every
// kernel tap of an output row reads contiguous cells; each output row is
// then one register-blocked pass over the taps for up to mr output
// channels (lk_gemm_isa.conv_rows). No im2col matrix is written (kH*kW
// times the input) and nothing is packed but the weights, which is what a
// small layer (8 channels of 16x16) spent most of its time on.
//
// Matrix products: for one group, with K = C/group * kH * kW rows (c, ky, kx)
// and one column per output pixel, Y_g[Mg x P] = W_g[Mg x K] * X_g[K x P]. A
// 1x1 kernel of stride 1 without pads reads X_g straight from the input (it
// is the input, C/group x H*W); otherwise (output rows too narrow for the
// direct loop's vectors) X_g's columns [first, first + count) are gathered
// first (im2col). (Gathering panel by panel while packing B, with no K x
// count buffer, measured no faster: the per-segment work of the gather
// costs, not the buffer's memory traffic.)

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

// The direct path's copy of the input rows a pixel range reads: `rows`
// padded rows from padded row `first_row` (input row first_row - pad_top)
// of each of cg channels, `plane` floats apart, zeros outside the input.
// Each row is split by column phase: padded column q lands at
// (q % sw) * phase_w + q / sw, so a row of output pixels (stride sw) reads
// each kernel tap's cells contiguously.
typedef struct {
    size_t first_row, rows, phase_w, row, plane;
} lk_direct_layout;

// `line`: l->row floats of scratch (unused for stride 1).
static void lk_direct_pad(const lk_conv2d_shape *s, const lk_direct_layout *l, const float *x, size_t cg,
                          float *restrict dst, float *restrict line) {
    size_t sw = s->stride_w, pw = l->phase_w, len = l->row, pl = s->pad_left;
    // Padded columns [lo, hi) hold input cells, the others zeros.
    size_t lo = pl < len ? pl : len, hi = pl + s->width < len ? pl + s->width : len;
    for (size_t c = 0; c < cg; c++) {
        for (size_t r = 0; r < l->rows; r++) {
            float *restrict out = dst + c * l->plane + r * len;
            ptrdiff_t iy = (ptrdiff_t)(l->first_row + r) - (ptrdiff_t)s->pad_top;
            if (iy < 0 || iy >= (ptrdiff_t)s->height) {
                memset(out, 0, len * sizeof(float));
                continue;
            }
            // The padded row (straight into place for stride 1), then split
            // by phase in plain loops that vectorize (no bounds in them).
            float *restrict cells = sw == 1 ? out : line;
            memset(cells, 0, lo * sizeof(float));
            memcpy(cells + lo, x + (c * s->height + (size_t)iy) * s->width + (lo - pl), (hi - lo) * sizeof(float));
            memset(cells + hi, 0, (len - hi) * sizeof(float));
            if (sw == 2) {
                float *restrict odd = out + pw;
                for (size_t t = 0; t < pw; t++) {
                    out[t] = line[2 * t];
                    odd[t] = line[2 * t + 1];
                }
            } else if (sw > 2) {
                for (size_t ph = 0; ph < sw; ph++) {
                    for (size_t t = 0; t < pw; t++) out[ph * pw + t] = line[t * sw + ph];
                }
            }
        }
    }
}

// Output pixels [first, first + count) computed directly, group by group:
// the group's input rows are copied padded and phase-split (lk_direct_pad),
// then each output row's pixels are one register-blocked pass over the
// K = C/group * kH * kW taps for up to mr output channels at a time
// (isa->conv_rows), with no im2col matrix and no packing of B.
static int lk_conv2d_direct(const lk_gemm_isa *isa, const lk_conv2d_shape *s, const float *x, const float *w,
                            const float *bias, float *y, size_t first, size_t count) {
    size_t g = s->group, cg = s->channels / g, mg = s->out_channels / g;
    size_t kh = s->kernel_h, kw = s->kernel_w, k = cg * kh * kw, ow = s->out_width;
    size_t sw = s->stride_w, pixels = s->out_height * ow, last = first + count - 1;
    lk_direct_layout l;
    l.first_row = first / ow * s->stride_h;
    l.rows = (last / ow - first / ow) * s->stride_h + (kh - 1) * s->dilation_h + 1;
    l.phase_w = ow + (kw - 1) * s->dilation_w / sw;
    l.row = sw * l.phase_w;
    l.plane = l.rows * l.row;
    // One allocation: tap offsets, the padded rows, the packed weights, a row.
    ptrdiff_t *off = malloc(k * sizeof(ptrdiff_t) + (cg * l.plane + mg * k + l.row) * sizeof(float));
    if (!off) return -1;
    float *padded = (float *)(off + k), *packed = padded + cg * l.plane, *line = packed + mg * k;
    for (size_t c = 0, p = 0; c < cg; c++) {
        for (size_t ky = 0; ky < kh; ky++) {
            for (size_t kx = 0; kx < kw; kx++, p++) {
                size_t q = kx * s->dilation_w;
                off[p] = (ptrdiff_t)(c * l.plane + ky * s->dilation_h * l.row + q % sw * l.phase_w + q / sw);
            }
        }
    }
    for (size_t gi = 0; gi < g; gi++) {
        lk_direct_pad(s, &l, x + gi * cg * s->height * s->width, cg, padded, line);
        // Blocks of up to mr output channels, each tap's mr weights together.
        const float *wg = w + gi * mg * k;
        for (size_t i0 = 0; i0 < mg; i0 += isa->mr) {
            size_t rows = mg - i0 < isa->mr ? mg - i0 : isa->mr;
            for (size_t p = 0; p < k; p++) {
                for (size_t i = 0; i < rows; i++) packed[i0 * k + p * rows + i] = wg[(i0 + i) * k + p];
            }
        }
        // The first and last rows may be partial; the ones between go in one call.
        for (size_t oy = first / ow; oy <= last / ow;) {
            size_t xa = oy == first / ow ? first % ow : 0, xb = oy == last / ow ? last % ow + 1 : ow;
            size_t lines = xa > 0 || xb < ow ? 1 : (last + 1) / ow - oy;
            const float *b = padded + (oy * s->stride_h - l.first_row) * l.row + xa;
            for (size_t i0 = 0; i0 < mg; i0 += isa->mr) {
                size_t m0 = gi * mg + i0, rows = mg - i0 < isa->mr ? mg - i0 : isa->mr;
                isa->conv_rows(k, rows, packed + i0 * k, b, off, xb - xa, lines, s->stride_h * l.row,
                               bias ? bias + m0 : NULL, y + m0 * pixels + oy * ow + xa, pixels, ow);
            }
            oy += lines;
        }
    }
    free(off);
    return 0;
}

static int lk_conv2d_run(const lk_gemm_isa *isa, const lk_conv2d_shape *s, const float *x,
                         const float *w, const float *bias, float *y, size_t first, size_t count) {
    if (count == 0) return 0;
    size_t g = s->group, plane = s->height * s->width, pixels = s->out_height * s->out_width;
    size_t cg = s->channels / g, mg = s->out_channels / g, k = cg * s->kernel_h * s->kernel_w;
    int pointwise = s->kernel_h == 1 && s->kernel_w == 1 && s->stride_h == 1 && s->stride_w == 1
        && s->pad_top == 0 && s->pad_left == 0 && s->out_height == s->height && s->out_width == s->width;
    // Direct unless an output row fills less than half a vector (7x7 maps
    // on AVX-512) and a group has enough output channels for a matrix
    // product's register block: the flattened pixels of a matrix product
    // then use the lanes better (measured: 512 channels 3x3 on 7x7, 2.1 ms
    // im2col, 3.1 ms direct).
    if (!pointwise && (s->out_width * 4 >= isa->nr || mg < isa->mr)) {
        return lk_conv2d_direct(isa, s, x, w, bias, y, first, count);
    }
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
