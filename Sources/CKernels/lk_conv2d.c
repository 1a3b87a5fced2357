// lk_conv2d_f32_packed (lk_gemm.h): convolution as a direct loop, as matrix
// products, or by the depthwise kernel (lk_depthwise.c), from weights
// packed once (lk_conv2d_pack_weights: per group, panels of mr output
// channels, each tap's mr weights together, the layout both the direct
// block and the matrix product's microkernel read) and scratch the caller
// allocates once per thread (lk_conv2d_work_size): nothing is allocated or
// packed per call but B's panels.
//
// Direct (most convolutions): the input rows a pixel range reads are copied
// once per group, zero-padded and split by column stride, so that every
// kernel tap of an output row reads contiguous cells; each output row is
// then one register-blocked pass over the taps for up to mr output
// channels (lk_gemm_isa.conv_rows). No im2col matrix is written (kH*kW
// times the input).
//
// Matrix products: for one group, with K = C/group * kH * kW rows (c, ky, kx)
// and one column per output pixel, Y_g[Mg x P] = W_g[Mg x K] * X_g[K x P]. A
// 1x1 kernel of stride 1 without pads reads X_g straight from the input (it
// is the input, C/group x H*W); otherwise (output rows too narrow for the
// direct loop's vectors, or a strided 1x1 kernel) X_g's columns [first,
// first + count) are gathered first (im2col). (Gathering panel by panel
// while packing B, with no K x count buffer, measured no faster: the
// per-segment work of the gather costs, not the buffer's memory traffic.)
//
// Every path computes an output as bias, then one FMA a tap in (c, ky, kx)
// order, so how a layer is split into calls (channel ranges, pixel ranges,
// threads) and which path runs change no bit of the result.

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

// The direct path's copy of the input rows a pixel range reads
// (lk_direct_layout, lk_gemm_internal.h): `rows` padded rows from padded
// row `first_row` (input row first_row - pad_top) of each of cg channels,
// `plane` floats apart, zeros outside the input. Each row is split by
// column phase: padded column q lands at (q % sw) * phase_w + q / sw, so a
// row of output pixels (stride sw) reads each kernel tap's cells
// contiguously.
lk_direct_layout lk_direct_layout_for(const lk_conv2d_shape *s, size_t first, size_t count) {
    size_t ow = s->out_width, last = first + count - 1;
    lk_direct_layout l;
    l.first_row = first / ow * s->stride_h;
    l.rows = (last / ow - first / ow) * s->stride_h + (s->kernel_h - 1) * s->dilation_h + 1;
    l.phase_w = ow + (s->kernel_w - 1) * s->dilation_w / s->stride_w;
    l.row = s->stride_w * l.phase_w;
    l.plane = l.rows * l.row;
    return l;
}

// The floats a layout of any `count` pixels needs at most (a range may
// start mid-row and so span one more row).
size_t lk_direct_plane_max(const lk_conv2d_shape *s, size_t count) {
    size_t ow = s->out_width, span = (count + ow - 2) / ow + 1;
    if (span > s->out_height) span = s->out_height;
    lk_direct_layout l = lk_direct_layout_for(s, 0, span * ow);
    return l.plane;
}

// `line`: l->row floats of scratch (unused for stride 1).
void lk_direct_pad(const lk_conv2d_shape *s, const lk_direct_layout *l, const float *x, size_t cg,
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

// Tap p = (c, ky, kx)'s offset in the padded, phase-split rows of layout l.
static void lk_direct_offsets(const lk_conv2d_shape *s, const lk_direct_layout *l, size_t cg, ptrdiff_t *off) {
    size_t sw = s->stride_w;
    for (size_t c = 0, p = 0; c < cg; c++) {
        for (size_t ky = 0; ky < s->kernel_h; ky++) {
            for (size_t kx = 0; kx < s->kernel_w; kx++, p++) {
                size_t q = kx * s->dilation_w;
                off[p] = (ptrdiff_t)(c * l->plane + ky * s->dilation_h * l->row + q % sw * l->phase_w + q / sw);
            }
        }
    }
}

// Output channels [m0, m1) and pixels [first, first + count) computed
// directly, group by group: the group's input rows are copied padded and
// phase-split (lk_direct_pad), then each output row's pixels are one
// register-blocked pass over the K = C/group * kH * kW taps for up to mr
// output channels at a time (isa->conv_rows, reading the packed weight
// panels), with no im2col matrix and no packing of B.
static void lk_conv2d_direct(const lk_gemm_isa *isa, const lk_conv2d_shape *s, const float *x, const float *packed,
                             const float *bias, float *y, size_t m0, size_t m1, size_t first, size_t count,
                             float *work) {
    size_t g = s->group, cg = s->channels / g, mg = s->out_channels / g, mr = isa->mr;
    size_t kh = s->kernel_h, kw = s->kernel_w, k = cg * kh * kw, ow = s->out_width;
    size_t pixels = s->out_height * ow, last = first + count - 1;
    size_t panels = (mg + mr - 1) / mr;
    lk_direct_layout l = lk_direct_layout_for(s, first, count);
    ptrdiff_t *off = (ptrdiff_t *)work;
    float *padded = (float *)(off + k), *line = padded + cg * l.plane;
    lk_direct_offsets(s, &l, cg, off);
    for (size_t gi = m0 / mg; gi < g && gi * mg < m1; gi++) {
        size_t lo = m0 > gi * mg ? m0 - gi * mg : 0, hi = m1 < (gi + 1) * mg ? m1 - gi * mg : mg;
        lk_direct_pad(s, &l, x + gi * cg * s->height * s->width, cg, padded, line);
        const float *wg = packed + gi * panels * k * mr;
        // The first and last rows may be partial; the ones between go in one call.
        for (size_t oy = first / ow; oy <= last / ow;) {
            size_t xa = oy == first / ow ? first % ow : 0, xb = oy == last / ow ? last % ow + 1 : ow;
            size_t lines = xa > 0 || xb < ow ? 1 : (last + 1) / ow - oy;
            const float *b = padded + (oy * s->stride_h - l.first_row) * l.row + xa;
            for (size_t i0 = lo; i0 < hi; i0 += mr) {
                size_t mi = gi * mg + i0, rows = hi - i0 < mr ? hi - i0 : mr;
                isa->conv_rows(k, rows, wg + i0 * k, b, off, xb - xa, lines, s->stride_h * l.row,
                               bias ? bias + mi : NULL, y + mi * pixels + oy * ow + xa, pixels, ow);
            }
            oy += lines;
        }
    }
}

// A 1x1 kernel of stride 1 without pads: the input is X_g already.
static int lk_conv2d_is_pointwise(const lk_conv2d_shape *s) {
    return s->kernel_h == 1 && s->kernel_w == 1 && s->stride_h == 1 && s->stride_w == 1 && s->pad_top == 0
        && s->pad_left == 0 && s->out_height == s->height && s->out_width == s->width;
}

// Output channels [m0, m1) and pixels [first, first + count), vectorized
// along output channels for outputs too narrow to fill a vector along the
// row (7x7 maps on AVX-512): the input rows are padded and phase-split as
// for the direct loop, then each row's pixels, up to mr at a time, are one
// pass over the K taps for nr output channels (isa->conv_cv, weights packed
// as [group][nr-channel panel][K][nr]) into a tile stored transposed.
// See lk_conv2d_path for where it pays.
static void lk_conv2d_channels(const lk_gemm_isa *isa, const lk_conv2d_shape *s, const float *x, const float *packed,
                               const float *bias, float *y, size_t m0, size_t m1, size_t first, size_t count,
                               float *work) {
    size_t g = s->group, cg = s->channels / g, mg = s->out_channels / g, mr = isa->mr, nr = isa->nr;
    size_t kh = s->kernel_h, kw = s->kernel_w, k = cg * kh * kw, ow = s->out_width;
    size_t pixels = s->out_height * ow, last = first + count - 1;
    size_t panels = (mg + nr - 1) / nr;
    lk_direct_layout l = lk_direct_layout_for(s, first, count);
    ptrdiff_t *off = (ptrdiff_t *)work;
    float *padded = (float *)(off + k), *line = padded + cg * l.plane, *bias_nr = line + l.row, *tile = bias_nr + nr;
    // A 1x1 kernel of stride 1 without pads reads its input as it is: the
    // copy would be the input's own rows (and was 40% of 960->320 on 7x7,
    // once for each channel range a thread took).
    int pointwise = lk_conv2d_is_pointwise(s);
    if (pointwise) {
        l = (lk_direct_layout){0, s->height, s->width, s->width, s->height * s->width};
    }
    lk_direct_offsets(s, &l, cg, off);
    for (size_t gi = m0 / mg; gi < g && gi * mg < m1; gi++) {
        size_t lo = m0 > gi * mg ? m0 - gi * mg : 0, hi = m1 < (gi + 1) * mg ? m1 - gi * mg : mg;
        const float *xg = x + gi * cg * s->height * s->width, *rows = pointwise ? xg : padded;
        if (!pointwise) lk_direct_pad(s, &l, xg, cg, padded, line);
        for (size_t j0 = lo; j0 < hi; j0 += nr) {
            size_t cols = hi - j0 < nr ? hi - j0 : nr, mj = gi * mg + j0;
            const float *wp = packed + (gi * panels + j0 / nr) * k * nr;
            for (size_t j = 0; j < nr; j++) bias_nr[j] = bias && j < cols ? bias[mj + j] : 0.0f;
            for (size_t oy = first / ow; oy <= last / ow; oy++) {
                size_t xa = oy == first / ow ? first % ow : 0, xb = oy == last / ow ? last % ow + 1 : ow;
                const float *b = rows + (oy * s->stride_h - l.first_row) * l.row;
                for (size_t x0 = xa; x0 < xb; x0 += mr) {
                    size_t r_count = xb - x0 < mr ? xb - x0 : mr;
                    isa->conv_cv(k, r_count, wp, b + x0, off, bias_nr, tile);
                    float *out = y + mj * pixels + oy * ow + x0;
                    for (size_t j = 0; j < cols; j++) {
                        for (size_t r = 0; r < r_count; r++) out[j * pixels + r] = tile[r * nr + j];
                    }
                }
            }
        }
    }
}

// One input and one output channel a group: the weights stay [M][kH * kW].
static int lk_conv2d_is_depthwise(const lk_conv2d_shape *s) {
    return s->group == s->channels && s->group == s->out_channels;
}

static const lk_gemm_isa *lk_conv2d_isa(lk_isa isa) {
    return isa > lk_kernels_isa() ? NULL : lk_gemm_for(isa);
}

lk_conv_path lk_conv2d_layout(lk_isa isa, const lk_conv2d_shape *s);

lk_conv_path lk_conv2d_path(lk_isa isa, const lk_conv2d_shape *s) {
    const lk_gemm_isa *gi = lk_conv2d_isa(isa);
    if (!gi) return LK_CONV_AUTO;
    size_t mg = s->out_channels / s->group;
    if (lk_conv2d_is_depthwise(s)) return LK_CONV_DEPTHWISE;
    // A 1x1 kernel (stride 1, no pads) is a matrix product on the input as
    // it is, except on rows under a quarter of a pixel panel (7x7 maps on
    // AVX-512: 49 pixels in two 32-lane panels), which run along the output
    // channels instead, every lane used, the input read in place; its
    // weights are packed in that layout on first use (lk_conv2d_layout is
    // by the weights alone). One thread, AVX-512: 960->320 on 7x7 0.37 ->
    // 0.27 ms, 320->1280 0.48 -> 0.40, 1152->320 0.44 -> 0.32 (onnxruntime
    // in MobileNetV2: 0.28, 0.40); on 14x14 the matrix product stays
    // ahead (96->576: 0.224 against 0.253 with the rows copied).
    if (lk_conv2d_is_pointwise(s)) {
        return s->out_width * 4 < gi->nr && mg >= gi->nr && s->channels / s->group >= 16 ? LK_CONV_CHANNELS
                                                                                         : LK_CONV_POINTWISE;
    }
    // A strided 1x1 kernel gathers its pixels and multiplies (128->256 1x1
    // stride 2 on 28x28, one thread: 0.076 ms gathered against 0.092 ms
    // direct). Otherwise direct unless an output row fills less than half a
    // vector (7x7 maps on AVX-512) and a group has enough output channels
    // for a matrix product's register block: the flattened pixels of a
    // matrix product then use the lanes better (measured: 512 channels 3x3
    // on 7x7, 2.1 ms im2col, 3.1 ms direct).
    if (s->kernel_h == 1 && s->kernel_w == 1 && mg >= gi->mr) return LK_CONV_IM2COL;
    // A panel of output channels or more, 16 input channels or more a group:
    // vectorized along the output channels, every lane used whatever the
    // row's width (one thread, AVX-512: 512->512 3x3 on 7x7 1.27 ms against
    // 1.75 im2col; 256->256 on 14x14 1.00 against 1.10 direct; 64->64 on
    // 56x56 0.97 against 1.04 direct). The 3->64 7x7 stem stays direct
    // (1.15 against 0.98: 3 input channels give 147 taps a panel).
    if (lk_conv2d_layout(isa, s) == LK_CONV_CHANNELS) return LK_CONV_CHANNELS;
    if (mg >= gi->mr && s->out_width * 4 < gi->nr) return LK_CONV_IM2COL;
    return LK_CONV_DIRECT;
}

lk_conv_path lk_conv2d_layout(lk_isa isa, const lk_conv2d_shape *s) {
    const lk_gemm_isa *gi = lk_conv2d_isa(isa);
    size_t mg = s->out_channels / s->group, cg = s->channels / s->group;
    int one = s->kernel_h == 1 && s->kernel_w == 1;
    return gi && !lk_conv2d_is_depthwise(s) && !one && mg >= gi->nr && cg >= 16 ? LK_CONV_CHANNELS : LK_CONV_AUTO;
}

size_t lk_conv2d_channel_block(lk_isa isa, lk_conv_path path, const lk_conv2d_shape *s) {
    const lk_gemm_isa *gi = lk_conv2d_isa(isa);
    if (!gi) return 0;
    if (path == LK_CONV_AUTO) path = lk_conv2d_path(isa, s);
    return path == LK_CONV_DEPTHWISE ? 1 : path == LK_CONV_CHANNELS ? gi->nr : gi->mr;
}

// The panel height of `path`'s layout: nr channels for CHANNELS, else mr.
static size_t lk_conv2d_panel(const lk_gemm_isa *gi, lk_conv_path path) {
    return path == LK_CONV_CHANNELS ? gi->nr : gi->mr;
}

size_t lk_conv2d_packed_size(lk_isa isa, lk_conv_path path, const lk_conv2d_shape *s) {
    const lk_gemm_isa *gi = lk_conv2d_isa(isa);
    if (!gi) return 0;
    size_t g = s->group, mg = s->out_channels / g, k = s->channels / g * s->kernel_h * s->kernel_w;
    size_t panel = lk_conv2d_panel(gi, path);
    if (lk_conv2d_is_depthwise(s)) return s->out_channels * k;
    return g * (mg + panel - 1) / panel * panel * k;
}

// Per group, blocks of mr output channels, each tap's mr weights together
// (zeros past the group's last channel): what the direct block and the
// matrix product's microkernel both read, so one packing serves every path.
int lk_conv2d_pack_weights(lk_isa isa, lk_conv_path path, const lk_conv2d_shape *s, const float *w, float *packed) {
    const lk_gemm_isa *gi = lk_conv2d_isa(isa);
    if (!gi) return -1;
    size_t g = s->group, mg = s->out_channels / g, k = s->channels / g * s->kernel_h * s->kernel_w;
    size_t mr = lk_conv2d_panel(gi, path);
    if (lk_conv2d_is_depthwise(s)) {
        memcpy(packed, w, s->out_channels * k * sizeof(float));
        return 0;
    }
    size_t panels = (mg + mr - 1) / mr;
    for (size_t gr = 0; gr < g; gr++) {
        const float *wg = w + gr * mg * k;
        for (size_t b = 0; b < panels; b++) {
            float *dst = packed + (gr * panels + b) * k * mr;
            for (size_t p = 0; p < k; p++) {
                for (size_t i = 0; i < mr; i++) {
                    size_t row = b * mr + i;
                    dst[p * mr + i] = row < mg ? wg[row * k + p] : 0.0f;
                }
            }
        }
    }
    return 0;
}

static int lk_conv2d_path_fits(const lk_conv2d_shape *s, lk_conv_path path) {
    int depthwise = lk_conv2d_is_depthwise(s);
    switch (path) {
    case LK_CONV_DEPTHWISE: return depthwise;
    case LK_CONV_POINTWISE: return !depthwise && lk_conv2d_is_pointwise(s);
    case LK_CONV_DIRECT:
    case LK_CONV_CHANNELS:
    case LK_CONV_IM2COL: return !depthwise;
    case LK_CONV_AUTO: break;
    }
    return 0;
}

size_t lk_conv2d_work_size(lk_isa isa, lk_conv_path path, const lk_conv2d_shape *s, size_t count) {
    const lk_gemm_isa *gi = lk_conv2d_isa(isa);
    if (!gi || count == 0) return 0;
    if (path == LK_CONV_AUTO) path = lk_conv2d_path(isa, s);
    size_t cg = s->channels / s->group, k = cg * s->kernel_h * s->kernel_w;
    switch (path) {
    case LK_CONV_DEPTHWISE: return lk_depthwise_work_size(s, count);
    case LK_CONV_DIRECT:
    case LK_CONV_CHANNELS: {
        size_t plane = lk_direct_plane_max(s, count), row = s->stride_w * (s->out_width + (s->kernel_w - 1) * s->dilation_w / s->stride_w);
        size_t tile = path == LK_CONV_CHANNELS ? gi->nr * (gi->mr + 1) : 0;
        return k * sizeof(ptrdiff_t) / sizeof(float) + cg * plane + row + tile;
    }
    case LK_CONV_POINTWISE: return LK_KC * gi->nr;
    case LK_CONV_IM2COL: return LK_KC * gi->nr + k * count;
    case LK_CONV_AUTO: break;
    }
    return 0;
}

int lk_conv2d_f32_packed(lk_isa isa, lk_conv_path path, const lk_conv2d_shape *s, const float *x,
                         const float *packed, const float *bias, float *y, size_t m0, size_t m1, size_t first,
                         size_t count, float *work) {
    const lk_gemm_isa *gi = lk_conv2d_isa(isa);
    if (!gi) return -1;
    if (path == LK_CONV_AUTO) path = lk_conv2d_path(isa, s);
    size_t g = s->group, mg = s->out_channels / g, mr = lk_conv2d_channel_block(isa, path, s);
    size_t pixels = s->out_height * s->out_width, plane = s->height * s->width;
    if (!lk_conv2d_path_fits(s, path) || m1 > s->out_channels || m0 > m1 || first + count > pixels
        || (m0 % mg) % mr != 0) {
        return -1;
    }
    if (count == 0 || m0 == m1) return 0;
    switch (path) {
    case LK_CONV_DEPTHWISE:
        lk_depthwise_run(gi, s, x, packed, bias, y, m0, m1, first, count, work);
        return 0;
    case LK_CONV_DIRECT:
        lk_conv2d_direct(gi, s, x, packed, bias, y, m0, m1, first, count, work);
        return 0;
    case LK_CONV_CHANNELS:
        lk_conv2d_channels(gi, s, x, packed, bias, y, m0, m1, first, count, work);
        return 0;
    case LK_CONV_POINTWISE:
    case LK_CONV_IM2COL: {
        size_t cg = s->channels / g, k = cg * s->kernel_h * s->kernel_w, panels = (mg + gi->mr - 1) / gi->mr;
        float *bpack = work, *col = work + LK_KC * gi->nr;
        for (size_t gr = m0 / mg; gr < g && gr * mg < m1; gr++) {
            size_t lo = m0 > gr * mg ? m0 - gr * mg : 0, hi = m1 < (gr + 1) * mg ? m1 - gr * mg : mg;
            const float *xg = x + gr * cg * plane, *b = xg + first;
            size_t ldb = plane;
            if (path == LK_CONV_IM2COL) {
                lk_im2col(s, xg, cg, first, count, col);
                b = col;
                ldb = count;
            }
            size_t mi = gr * mg + lo;
            lk_sgemm_packed_run(gi, hi - lo, count, k, packed + (gr * panels * gi->mr + lo) * k, b, ldb,
                                y + mi * pixels + first, pixels, bias ? bias + mi : NULL, bpack);
        }
        return 0;
    }
    case LK_CONV_AUTO: break;
    }
    return -1;
}

// The unpacked entry points: weights packed and work allocated per call.
static int lk_conv2d_once(lk_isa isa, const lk_conv2d_shape *s, const float *x, const float *w, const float *bias,
                          float *y, size_t first, size_t count) {
    if (isa > lk_kernels_isa()) return -1;
    if (count == 0) return 0;
    lk_conv_path path = lk_conv2d_path(isa, s);
    size_t packed_size = lk_conv2d_packed_size(isa, path, s), work_size = lk_conv2d_work_size(isa, path, s, count);
    float *packed = malloc((packed_size + work_size) * sizeof(float));
    if (!packed) return -1;
    lk_conv2d_pack_weights(isa, path, s, w, packed);
    int status = lk_conv2d_f32_packed(isa, path, s, x, packed, bias, y, 0, s->out_channels, first, count,
                                      packed + packed_size);
    free(packed);
    return status;
}

int lk_conv2d_f32(const lk_conv2d_shape *shape, const float *x, const float *w, const float *bias,
                  float *y, size_t first, size_t count) {
    return lk_conv2d_once(lk_kernels_isa(), shape, x, w, bias, y, first, count);
}

int lk_conv2d_f32_isa(lk_isa isa, const lk_conv2d_shape *shape, const float *x, const float *w,
                      const float *bias, float *y, size_t first, size_t count) {
    return lk_conv2d_once(isa, shape, x, w, bias, y, first, count);
}
