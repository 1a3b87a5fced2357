// Depthwise convolution (group == C == M: one input channel a filter), the
// path lk_conv2d_f32_packed takes for MobileNet's 3x3 and 5x5 layers.
//
// Each channel's input rows for a pixel range are copied once, zero-padded
// and split by column stride (lk_direct_pad, shared with the direct path),
// so that every tap of an output row reads contiguous cells with no bounds
// checks; each output row is then one pass of isa->dw_row: four vectors of
// pixels at a time, one FMA a tap, the taps' weights broadcast once a row.
// The general direct path ran these layers as 1-channel matrix products
// (one output channel of an 8-row register block used): 32x112x112 3x3,
// measured 0.139 ms (the old direct loop) against 0.097 ms for this one
// (one thread, AVX-512).
//
// Small maps at stride 1 with output rows as wide as input rows (MobileNet's
// 7x7..28x28 3x3 pad 1 layers) skip the copy and the call a row: the plane
// path (isa->dw_plane) runs a channel's flattened pixels four vectors at a
// time, each tap a masked load straight from the input (lanes outside the
// image load 0, so the sums are the padded copy's, bit for bit). 960
// channels 7x7, one thread, AVX-512: 0.070 -> 0.020 ms (onnxruntime 0.021).
// Column stride 2 skips the copy too (isa->dw_s2, lk_depthwise_s2 below).

#include "lk_gemm_internal.h"

#include <string.h>

size_t lk_depthwise_work_size(const lk_conv2d_shape *s, size_t count) {
    size_t taps = s->kernel_h * s->kernel_w;
    size_t row = s->stride_w * (s->out_width + (s->kernel_w - 1) * s->dilation_w / s->stride_w);
    // Plus the plane path's lane masks: a uint32 a tap a vector of >= 8 lanes.
    // Or the stride-2 path's column masks: a uint32 a kernel column a
    // vector of >= 8 output columns.
    return taps * sizeof(ptrdiff_t) / sizeof(float) + lk_direct_plane_max(s, count) + row
        + taps * (count / 8 + 2) + s->kernel_w * (s->out_width / 8 + 1);
}

static int lk_depthwise_unpadded_mode = 0;

void lk_depthwise_force_unpadded(int mode) { lk_depthwise_unpadded_mode = mode; }

// The plane path up to 64 vectors of pixels a call (1024 on AVX-512, 512 on
// AVX2). Measured one thread, 3x3 pad 1, plane / rows ms (scratch harness,
// load ~3): AVX-512 960ch 7x7 0.020 / 0.070, 384ch 14x14 0.025 / 0.056,
// 192ch 28x28 0.050 / 0.068, 144ch 56x56 0.168 / 0.147 (the row pairs'
// shared loads win on wide rows), 32ch 112x112 0.207 / 0.106; AVX2 960ch 7x7
// 0.025 / 0.064, 384ch 14x14 0.036 / 0.056, 192ch 28x28 0.078 / 0.074.
#define LK_DW_PLANE_VECTORS 64
// The largest kernel side of the plane path (its mask scratch).
#define LK_DW_PLANE_MAX_SIDE 16

static int lk_depthwise_plane_fits(const lk_gemm_isa *isa, const lk_conv2d_shape *s) {
    if (!isa->dw_plane || s->stride_h != 1 || s->stride_w != 1 || s->out_width != s->width
        || s->kernel_h > LK_DW_PLANE_MAX_SIDE || s->kernel_w > LK_DW_PLANE_MAX_SIDE) {
        return 0;
    }
    if (lk_depthwise_unpadded_mode) return lk_depthwise_unpadded_mode > 0;
    // By the map, not the call's range: a thread's rows of a wide map stay on
    // the row kernel. nr: two vectors.
    return s->out_height * s->out_width <= LK_DW_PLANE_VECTORS * (isa->nr / 2);
}

// The plane path (isa->dw_plane): pixels [first, first + count) of every
// channel in [m0, m1) straight from the input, the padding as masked lanes.
static void lk_depthwise_plane(const lk_gemm_isa *isa, const lk_conv2d_shape *s, const float *x, const float *w,
                               const float *bias, float *y, size_t m0, size_t m1, size_t first, size_t count,
                               float *work) {
    size_t kh = s->kernel_h, kw = s->kernel_w, taps = kh * kw, ow = s->out_width, lanes = isa->nr / 2;
    size_t h = s->height, wd = s->width, plane = h * wd, pixels = s->out_height * ow;
    ptrdiff_t *off = (ptrdiff_t *)work;
    uint32_t *bits = (uint32_t *)(off + taps);
    for (size_t ky = 0, t = 0; ky < kh; ky++) {
        for (size_t kx = 0; kx < kw; kx++, t++) {
            off[t] = ((ptrdiff_t)(ky * s->dilation_h) - (ptrdiff_t)s->pad_top) * (ptrdiff_t)wd
                + (ptrdiff_t)(kx * s->dilation_w) - (ptrdiff_t)s->pad_left;
        }
    }
    // A lane is inside the image for tap (ky, kx) when its row is for ky and
    // its column for kx: a row mask per ky and a column mask per kx a vector,
    // one pass over the pixels (a division a lane a tap cost 0.1 ms a call on
    // 56x56).
    uint32_t rows[LK_DW_PLANE_MAX_SIDE], cols[LK_DW_PLANE_MAX_SIDE];
    size_t oy = first / ow, ox = first % ow;
    for (size_t v = 0; v * lanes < count; v++) {
        for (size_t k = 0; k < kh; k++) rows[k] = 0;
        for (size_t k = 0; k < kw; k++) cols[k] = 0;
        for (size_t l = 0; l < lanes && v * lanes + l < count; l++) {
            for (size_t k = 0; k < kh; k++) {
                size_t iy = oy + k * s->dilation_h;
                rows[k] |= (uint32_t)(iy >= s->pad_top && iy - s->pad_top < h) << l;
            }
            for (size_t k = 0; k < kw; k++) {
                size_t ix = ox + k * s->dilation_w;
                cols[k] |= (uint32_t)(ix >= s->pad_left && ix - s->pad_left < wd) << l;
            }
            if (++ox == ow) ox = 0, oy++;
        }
        for (size_t ky = 0, t = 0; ky < kh; ky++) {
            for (size_t kx = 0; kx < kw; kx++, t++) bits[v * taps + t] = rows[ky] & cols[kx];
        }
    }
    isa->dw_plane(taps, w + m0 * taps, bias ? bias + m0 : NULL, m1 - m0, x + m0 * plane + first, plane, off, bits,
                  count, y + m0 * pixels + first, pixels);
}

// The stride-2 path (isa->dw_s2): pixels [first, first + count) of every
// channel in [m0, m1) straight from the input, each kernel column's cells of
// a vector of output columns as the even lanes of two masked loads. The
// padded copy it replaces cost more than the arithmetic: 576 channels
// 14x14 -> 7x7, one thread, AVX-512, 0.145 ms with 60% of it in the copy.
static void lk_depthwise_s2(const lk_gemm_isa *isa, const lk_conv2d_shape *s, const float *x, const float *w,
                            const float *bias, float *y, size_t m0, size_t m1, size_t first, size_t count,
                            float *work) {
    size_t kw = s->kernel_w, lanes = isa->nr / 2, vectors = (s->out_width + lanes - 1) / lanes;
    ptrdiff_t *col = (ptrdiff_t *)work;
    uint32_t *bits = (uint32_t *)(col + kw);
    for (size_t kx = 0; kx < kw; kx++) {
        col[kx] = (ptrdiff_t)(kx * s->dilation_w) - (ptrdiff_t)s->pad_left;
        for (size_t v = 0; v < vectors; v++) {
            uint32_t inside = 0;
            for (size_t l = 0; l < 2 * lanes; l++) {
                ptrdiff_t c = (ptrdiff_t)(2 * v * lanes + l) + col[kx];
                inside |= (uint32_t)(c >= 0 && c < (ptrdiff_t)s->width) << l;
            }
            bits[kx * vectors + v] = inside;
        }
    }
    size_t taps = s->kernel_h * kw, plane = s->height * s->width, pixels = s->out_height * s->out_width;
    isa->dw_s2(s, w + m0 * taps, bias ? bias + m0 : NULL, m1 - m0, x + m0 * plane, y + m0 * pixels, first, count,
               col, bits);
}

void lk_depthwise_run(const lk_gemm_isa *isa, const lk_conv2d_shape *s, const float *x, const float *w,
                      const float *bias, float *y, size_t m0, size_t m1, size_t first, size_t count, float *work) {
    if (lk_depthwise_plane_fits(isa, s)) {
        lk_depthwise_plane(isa, s, x, w, bias, y, m0, m1, first, count, work);
        return;
    }
    if (isa->dw_s2 && s->stride_w == 2 && lk_depthwise_unpadded_mode >= 0) {
        lk_depthwise_s2(isa, s, x, w, bias, y, m0, m1, first, count, work);
        return;
    }
    size_t kh = s->kernel_h, kw = s->kernel_w, taps = kh * kw, ow = s->out_width, sw = s->stride_w;
    size_t pixels = s->out_height * ow, last = first + count - 1, plane = s->height * s->width;
    lk_direct_layout l = lk_direct_layout_for(s, first, count);
    ptrdiff_t *off = (ptrdiff_t *)work;
    float *padded = (float *)(off + taps), *line = padded + l.plane;
    for (size_t ky = 0, t = 0; ky < kh; ky++) {
        for (size_t kx = 0; kx < kw; kx++, t++) {
            size_t q = kx * s->dilation_w;
            off[t] = (ptrdiff_t)(ky * s->dilation_h * l.row + q % sw * l.phase_w + q / sw);
        }
    }
    // Whole rows two at a time where the kernel pairs them (3x3, 5x5, row
    // stride 1, no dilation): with masked short last steps, measured 0.135
    // -> 0.097 ms on 32x112x112 3x3 (one thread, AVX-512; onnxruntime 0.111).
    int pairs = isa->dw_pair && kh == kw && (kh == 3 || kh == 5) && s->stride_h == 1 && s->dilation_h == 1
        && s->dilation_w == 1;
    for (size_t m = m0; m < m1; m++) {
        lk_direct_pad(s, &l, x + m * plane, 1, padded, line);
        float b = bias ? bias[m] : 0.0f;
        for (size_t oy = first / ow; oy <= last / ow;) {
            size_t xa = oy == first / ow ? first % ow : 0, xb = oy == last / ow ? last % ow + 1 : ow;
            const float *src = padded + (oy * s->stride_h - l.first_row) * l.row + xa;
            float *dst = y + m * pixels + oy * ow + xa;
            if (pairs && xa == 0 && oy + 1 < last / ow + (last % ow == ow - 1)) {
                isa->dw_pair(kh, w + m * taps, src, off, l.row, ow, b, dst, dst + ow);
                oy += 2;
                continue;
            }
            isa->dw_row(taps, w + m * taps, src, off, xb - xa, b, dst);
            oy++;
        }
    }
}
