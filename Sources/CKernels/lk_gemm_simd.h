// The body of lk_gemm_avx2.c and lk_gemm_avx512.c, written once (no include
// guard: each includes it once after defining, for its instruction set,
//   LK_TARGET   the target attribute of every function here
//   LK_W        floats a vector (8, 16)
//   lk_v        the vector type
//   LK_PS(op)   the _ps intrinsic named op
//   LK_GEMM_MR  rows of the register block (its columns: two vectors)
//   LK_GEMM_ISA the lk_gemm_isa to define
// and lk_lanes, lk_lanes_upto(n) (lanes [0, min(n, LK_W))), lk_load_lanes(p,
// k), lk_store_lanes(p, k, v): masked loads and stores that touch only k's
// lanes).
//
// The microkernel keeps an MR x 2W block of C in 2*MR registers: each k
// step loads two vectors of B, broadcasts MR values of A and does 2*MR
// FMAs (AVX2 6x16: 12 of 16 registers; AVX-512 8x32: 16 of 32). A block
// narrower than 2W columns goes through masked loads and stores. The direct
// convolution's block (lk_conv_rows) has the same MR x 2W shape, its B rows
// read in place from the padded input at per-tap offsets.

#if LK_GEMM_MR > 8
#error "lk_conv_rows instantiates at most 8 rows"
#endif

#define LK_GEMM_NR (2 * LK_W)
// Rows of B lk_gemv streams at once: 8 broadcasts, c's vector and a load (10
// registers, AVX2 has 16).
#define LK_GEMV_BLOCK 8

LK_TARGET LK_INLINE void lk_gemm_block(size_t k, const float *a, const float *b, size_t ldb, float *c,
                                       size_t ldc, size_t cols, const float *bias, int masked) {
    lk_lanes m0 = lk_lanes_upto(masked ? cols : LK_W);
    lk_lanes m1 = lk_lanes_upto(masked ? (cols > LK_W ? cols - LK_W : 0) : LK_W);
    lk_v lo[LK_GEMM_MR], hi[LK_GEMM_MR];
#pragma clang loop unroll(full)
    for (int i = 0; i < LK_GEMM_MR; i++) {
        if (bias) {
            lo[i] = hi[i] = LK_PS(set1)(bias[i]);
            continue;
        }
        lo[i] = masked ? lk_load_lanes(c + i * ldc, m0) : LK_PS(loadu)(c + i * ldc);
        hi[i] = masked ? lk_load_lanes(c + i * ldc + LK_W, m1) : LK_PS(loadu)(c + i * ldc + LK_W);
    }
    for (size_t p = 0; p < k; p++) {
        // Packed weights stream from L3 when they outgrow L2 (512->512 3x3:
        // 9.4 MB); fetching them 2 KB ahead measured 2.5 -> 1.75 ms there
        // (one thread, im2col; 1 KB ahead: 1.95 ms), no change at 56x56.
        __builtin_prefetch(a + 64 * LK_GEMM_MR);
        lk_v b0 = masked ? lk_load_lanes(b, m0) : LK_PS(loadu)(b);
        lk_v b1 = masked ? lk_load_lanes(b + LK_W, m1) : LK_PS(loadu)(b + LK_W);
#pragma clang loop unroll(full)
        for (int i = 0; i < LK_GEMM_MR; i++) {
            lk_v ai = LK_PS(set1)(a[i]);
            lo[i] = LK_PS(fmadd)(ai, b0, lo[i]);
            hi[i] = LK_PS(fmadd)(ai, b1, hi[i]);
        }
        a += LK_GEMM_MR;
        b += ldb;
    }
#pragma clang loop unroll(full)
    for (int i = 0; i < LK_GEMM_MR; i++) lk_store_pair(c + i * ldc, masked, m0, m1, lo[i], hi[i]);
}

LK_TARGET static void lk_gemm_kernel(size_t k, const float *a, const float *b, size_t ldb, float *c,
                                     size_t ldc, size_t cols, const float *bias) {
    if (cols == LK_GEMM_NR) {
        lk_gemm_block(k, a, b, ldb, c, ldc, cols, bias, 0);
    } else {
        lk_gemm_block(k, a, b, ldb, c, ldc, cols, bias, 1);
    }
}

LK_TARGET static void lk_gemm_pack_b(size_t k, size_t cols, const float *b, size_t ldb, float *dst) {
    lk_lanes m0 = lk_lanes_upto(cols), m1 = lk_lanes_upto(cols > LK_W ? cols - LK_W : 0);
    for (size_t p = 0; p < k; p++, b += ldb, dst += LK_GEMM_NR) {
        LK_PS(storeu)(dst, lk_load_lanes(b, m0));
        LK_PS(storeu)(dst + LK_W, lk_load_lanes(b + LK_W, m1));
    }
}

// c[j] += sum over q < rows of ap[q] * row[q][j], for every column j < n,
// in q order onto c's value (`rows` is a constant after inlining).
LK_TARGET LK_INLINE void lk_gemv_rows(size_t n, const lk_v *ap, const float *const *row, float *c, const int rows) {
    size_t body = n / LK_W * LK_W;
    for (size_t j = 0; j < body; j += LK_W) {
        lk_v y = LK_PS(loadu)(c + j);
#pragma clang loop unroll(full)
        for (int q = 0; q < rows; q++) y = LK_PS(fmadd)(ap[q], LK_PS(loadu)(row[q] + j), y);
        LK_PS(storeu)(c + j, y);
    }
    if (body < n) {
        lk_lanes tail = lk_lanes_upto(n - body);
        lk_v y = lk_load_lanes(c + body, tail);
#pragma clang loop unroll(full)
        for (int q = 0; q < rows; q++) y = LK_PS(fmadd)(ap[q], lk_load_lanes(row[q] + body, tail), y);
        lk_store_lanes(c + body, tail, y);
    }
}

// c[j] += alpha * sum_p a[p * a_col] * b[p * ldb + j]: B streamed in blocks
// of LK_GEMV_BLOCK rows, each row whole and in order, into c (which the
// caches hold: 200 KB for GPT-2's 50257 logits). Each column's sum runs over
// p in order onto c's value, however the columns are split. Whole rows are
// the longest runs of B the prefetcher can see: GPT-2 small's 768 x 50257
// output projection, not in cache, took 5.0-5.5 ms read so against 9.1 ms
// by strips of 16 vectors down every row (1 KB runs), its 768 x 3072 0.27
// against 0.33-0.40 ms (one thread, scratch harness).
LK_TARGET static void lk_gemv(size_t k, size_t n, float alpha, const float *a, size_t a_col, const float *b,
                              size_t ldb, float *c) {
    lk_v ap[LK_GEMV_BLOCK];
    const float *row[LK_GEMV_BLOCK];
    size_t p = 0;
    for (; p + LK_GEMV_BLOCK <= k; p += LK_GEMV_BLOCK) {
#pragma clang loop unroll(full)
        for (int q = 0; q < LK_GEMV_BLOCK; q++) {
            ap[q] = LK_PS(set1)(alpha * a[(p + q) * a_col]);
            row[q] = b + (p + q) * ldb;
        }
        lk_gemv_rows(n, ap, row, c, LK_GEMV_BLOCK);
    }
    for (; p < k; p++) {
        ap[0] = LK_PS(set1)(alpha * a[p * a_col]);
        row[0] = b + p * ldb;
        lk_gemv_rows(n, ap, row, c, 1);
    }
}

// c[j] += alpha * sum_p a[p] * bt[j * ldbt + p]: four rows of B at a time,
// each read once from start to end against the same vector of a (four
// sequential streams). A classifier exported from PyTorch gives its Linear
// weights so ([M, K], transB), and this is the order they stream fastest
// from memory: MobileNetV2's 1280 -> 1000 classifier at batch 1, weights
// not in cache, took 0.16 ms read so against 0.30 ms by lk_gemv (then in strips) on
// the transposed copy (one thread, scratch harness).
LK_TARGET static void lk_gemv_bt(size_t k, size_t n, float alpha, const float *a, const float *bt, size_t ldbt,
                                 float *c) {
    size_t body = k / LK_W * LK_W;
    lk_lanes tail = lk_lanes_upto(k - body);
    for (size_t j = 0; j < n; j += 4) {
        size_t rows = n - j < 4 ? n - j : 4;
        const float *row[4];
        lk_v acc[4];
#pragma clang loop unroll(full)
        for (size_t i = 0; i < 4; i++) {
            // Past the last row, the last row again (its sum unused).
            row[i] = bt + (j + (i < rows ? i : rows - 1)) * ldbt;
            acc[i] = LK_PS(setzero)();
        }
        for (size_t p = 0; p < body; p += LK_W) {
            lk_v x = LK_PS(loadu)(a + p);
#pragma clang loop unroll(full)
            for (size_t i = 0; i < 4; i++) acc[i] = LK_PS(fmadd)(LK_PS(loadu)(row[i] + p), x, acc[i]);
        }
        if (body < k) {
            lk_v x = lk_load_lanes(a + body, tail);
#pragma clang loop unroll(full)
            for (size_t i = 0; i < 4; i++) acc[i] = LK_PS(fmadd)(lk_load_lanes(row[i] + body, tail), x, acc[i]);
        }
        for (size_t i = 0; i < rows; i++) c[j + i] += alpha * lk_sum_lanes(acc[i]);
    }
}

// The direct convolution's register block: R output channels (a constant
// after inlining) x NV vectors of pixels, all in registers over the k taps.
// Vector v reads b[v] + off[p] and writes c[v], masked to lanes m[v]: the
// two halves of one row's pixels, or the same pixels of two rows.
LK_TARGET LK_INLINE void lk_conv_block(size_t k, const float *a, const float *const b[2],
                                       const ptrdiff_t *off, const float *bias, float *const c[2],
                                       size_t ldc, const lk_lanes m[2], const int R, const int NV) {
    lk_v acc[LK_GEMM_MR][2];
#pragma clang loop unroll(full)
    for (int i = 0; i < R; i++) {
        acc[i][0] = acc[i][1] = bias ? LK_PS(set1)(bias[i]) : LK_PS(setzero)();
    }
    for (size_t p = 0; p < k; p++, a += LK_GEMM_MR) {
        lk_v x0 = lk_load_lanes(b[0] + off[p], m[0]), x1 = NV > 1 ? lk_load_lanes(b[1] + off[p], m[1]) : x0;
#pragma clang loop unroll(full)
        for (int i = 0; i < R; i++) {
            lk_v ai = LK_PS(set1)(a[i]);
            acc[i][0] = LK_PS(fmadd)(ai, x0, acc[i][0]);
            if (NV > 1) acc[i][1] = LK_PS(fmadd)(ai, x1, acc[i][1]);
        }
    }
#pragma clang loop unroll(full)
    for (int i = 0; i < R; i++) {
        lk_store_lanes(c[0] + i * ldc, m[0], acc[i][0]);
        if (NV > 1) lk_store_lanes(c[1] + i * ldc, m[1], acc[i][1]);
    }
}

// R rows: a line's pixels two vectors at a time (one for a last short
// piece); lines of one vector or less two at a time, so that narrow
// outputs (7 or 14 pixels wide) still keep 2R accumulators busy.
LK_TARGET LK_INLINE void lk_conv_rows_of(size_t k, const float *a, const float *b, const ptrdiff_t *off,
                                         size_t n, size_t lines, size_t b_line, const float *bias, float *c,
                                         size_t ldc, size_t c_line, const int R) {
    if (n <= LK_W) {
        lk_lanes m[2] = {lk_lanes_upto(n), lk_lanes_upto(n)};
        for (size_t t = 0; t < lines; t += 2) {
            const float *bt[2] = {b + t * b_line, b + (t + 1) * b_line};
            float *ct[2] = {c + t * c_line, c + (t + 1) * c_line};
            if (t + 1 < lines) {
                lk_conv_block(k, a, bt, off, bias, ct, ldc, m, R, 2);
            } else {
                lk_conv_block(k, a, bt, off, bias, ct, ldc, m, R, 1);
            }
        }
        return;
    }
    for (size_t t = 0; t < lines; t++) {
        for (size_t j = 0; j < n; j += 2 * LK_W) {
            size_t cols = n - j < 2 * LK_W ? n - j : 2 * LK_W;
            const float *bj = b + t * b_line + j;
            float *cj = c + t * c_line + j;
            const float *bt[2] = {bj, bj + LK_W};
            float *ct[2] = {cj, cj + LK_W};
            lk_lanes m[2] = {lk_lanes_upto(cols), lk_lanes_upto(cols > LK_W ? cols - LK_W : 0)};
            if (cols > LK_W) {
                lk_conv_block(k, a, bt, off, bias, ct, ldc, m, R, 2);
            } else {
                lk_conv_block(k, a, bt, off, bias, ct, ldc, m, R, 1);
            }
        }
    }
}

LK_TARGET static void lk_conv_rows(size_t k, size_t rows, const float *a, const float *b, const ptrdiff_t *off,
                                   size_t n, size_t lines, size_t b_line, const float *bias, float *c, size_t ldc,
                                   size_t c_line) {
    switch (rows) {
#define LK_CONV_ROWS_CASE(r)                                                                                   \
    case r: lk_conv_rows_of(k, a, b, off, n, lines, b_line, bias, c, ldc, c_line, r); break;
    LK_CONV_ROWS_CASE(1)
    LK_CONV_ROWS_CASE(2)
    LK_CONV_ROWS_CASE(3)
    LK_CONV_ROWS_CASE(4)
    LK_CONV_ROWS_CASE(5)
    LK_CONV_ROWS_CASE(6)
#if LK_GEMM_MR > 6
    LK_CONV_ROWS_CASE(7)
    LK_CONV_ROWS_CASE(8)
#endif
#undef LK_CONV_ROWS_CASE
    default: break;
    }
}

// The depthwise convolution's row (lk_depthwise.c): c[j] = bias + sum over
// taps t of w[t] * b[off[t] + j], j < n. T taps (a constant after inlining:
// 9 or 25 keep their broadcast weights in registers; 0: `taps`, weights
// read a tap at a time) and up to four vectors of pixels a step, so four
// FMA chains hide the FMA latency; the last vector of a row's last step is
// masked (a short last step of one masked block of 4 vectors measured 30%
// slower on 112-wide rows). Each output is bias, then one FMA per tap in
// tap order, whatever the row's length or position.
LK_TARGET LK_INLINE void lk_dw_row_block(size_t taps, const float *w, const lk_v *wv, const float *b,
                                         const ptrdiff_t *off, size_t left, lk_v bv, float *c, const size_t T,
                                         const int NV) {
    const size_t t_count = T ? T : taps;
    lk_lanes last = lk_lanes_upto(left - (size_t)(NV - 1) * LK_W);
    lk_v acc[4];
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; v++) acc[v] = bv;
#pragma clang loop unroll(full)
    for (size_t t = 0; t < t_count; t++) {
        const float *s = b + off[t];
        lk_v wt = T ? wv[t] : LK_PS(set1)(w[t]);
#pragma clang loop unroll(full)
        for (int v = 0; v < NV; v++) {
            lk_v xv = v < NV - 1 ? LK_PS(loadu)(s + v * LK_W) : lk_load_lanes(s + v * LK_W, last);
            acc[v] = LK_PS(fmadd)(wt, xv, acc[v]);
        }
    }
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; v++) {
        if (v < NV - 1) {
            LK_PS(storeu)(c + v * LK_W, acc[v]);
        } else {
            lk_store_lanes(c + v * LK_W, last, acc[v]);
        }
    }
}

LK_TARGET LK_INLINE void lk_dw_row_of(size_t taps, const float *w, const float *b, const ptrdiff_t *off, size_t n,
                                      float bias, float *c, const size_t T) {
    lk_v wv[25];
    if (T) {
#pragma clang loop unroll(full)
        for (size_t t = 0; t < T; t++) wv[t] = LK_PS(set1)(w[t]);
    }
    lk_v bv = LK_PS(set1)(bias);
    size_t j = 0;
    for (; j + 4 * LK_W <= n; j += 4 * LK_W) lk_dw_row_block(taps, w, wv, b + j, off, 4 * LK_W, bv, c + j, T, 4);
    size_t left = n - j;
    if (left > 3 * LK_W) {
        lk_dw_row_block(taps, w, wv, b + j, off, left, bv, c + j, T, 4);
    } else if (left > 2 * LK_W) {
        lk_dw_row_block(taps, w, wv, b + j, off, left, bv, c + j, T, 3);
    } else if (left > LK_W) {
        lk_dw_row_block(taps, w, wv, b + j, off, left, bv, c + j, T, 2);
    } else if (left > 0) {
        lk_dw_row_block(taps, w, wv, b + j, off, left, bv, c + j, T, 1);
    }
}

// Two output rows of a KxK depthwise kernel at row stride 1 and dilation
// 1: the K + 1 input rows they read are loaded once for both (row r is
// tap row r of the first and r - 1 of the second), 4K(K + 1) loads for
// eight vectors of output instead of 8K^2. Columns: tap kx reads
// b + col[kx], the next input row is `line` floats on. Same FMA order per
// output as lk_dw_row (bias, then taps row by row).
LK_TARGET LK_INLINE void lk_dw_pair_block(const lk_v *wv, const float *b, const ptrdiff_t *col, size_t line,
                                          size_t left, lk_v bv, float *c0, float *c1, const int K, const int NV) {
    // Vectors 0 .. NV - 2 are whole; the last one holds `left` - (NV - 1) W lanes.
    lk_lanes last = lk_lanes_upto(left - (size_t)(NV - 1) * LK_W);
    lk_v a0[4], a1[4];
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; v++) a0[v] = a1[v] = bv;
#pragma clang loop unroll(full)
    for (int r = 0; r <= K; r++) {
#pragma clang loop unroll(full)
        for (int kx = 0; kx < K; kx++) {
            const float *s = b + (size_t)r * line + col[kx];
#pragma clang loop unroll(full)
            for (int v = 0; v < NV; v++) {
                lk_v xv = v < NV - 1 ? LK_PS(loadu)(s + v * LK_W) : lk_load_lanes(s + v * LK_W, last);
                if (r < K) a0[v] = LK_PS(fmadd)(wv[r * K + kx], xv, a0[v]);
                if (r > 0) a1[v] = LK_PS(fmadd)(wv[(r - 1) * K + kx], xv, a1[v]);
            }
        }
    }
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; v++) {
        if (v < NV - 1) {
            LK_PS(storeu)(c0 + v * LK_W, a0[v]);
            LK_PS(storeu)(c1 + v * LK_W, a1[v]);
        } else {
            lk_store_lanes(c0 + v * LK_W, last, a0[v]);
            lk_store_lanes(c1 + v * LK_W, last, a1[v]);
        }
    }
}

LK_TARGET LK_INLINE void lk_dw_pair_of(const float *w, const float *b, const ptrdiff_t *col, size_t line, size_t n,
                                       float bias, float *c0, float *c1, const int K) {
    lk_v wv[25];
#pragma clang loop unroll(full)
    for (int t = 0; t < K * K; t++) wv[t] = LK_PS(set1)(w[t]);
    lk_v bv = LK_PS(set1)(bias);
    size_t j = 0;
    for (; j + 4 * LK_W <= n; j += 4 * LK_W) lk_dw_pair_block(wv, b + j, col, line, 4 * LK_W, bv, c0 + j, c1 + j, K, 4);
    // The rest in one block of as many vectors as it needs.
    size_t left = n - j;
    if (left > 3 * LK_W) {
        lk_dw_pair_block(wv, b + j, col, line, left, bv, c0 + j, c1 + j, K, 4);
    } else if (left > 2 * LK_W) {
        lk_dw_pair_block(wv, b + j, col, line, left, bv, c0 + j, c1 + j, K, 3);
    } else if (left > LK_W) {
        lk_dw_pair_block(wv, b + j, col, line, left, bv, c0 + j, c1 + j, K, 2);
    } else if (left > 0) {
        lk_dw_pair_block(wv, b + j, col, line, left, bv, c0 + j, c1 + j, K, 1);
    }
}

// A depthwise channel's weights broadcast, all T taps' when T is a constant
// (with T 0 the caller broadcasts each tap as it goes), and its bias, the
// accumulators' start.
LK_TARGET LK_INLINE lk_v lk_dw_channel(const float *w, const float *bias, size_t m, lk_v *wv, const size_t T) {
    if (T) {
#pragma clang loop unroll(full)
        for (size_t t = 0; t < T; t++) wv[t] = LK_PS(set1)(w[t]);
    }
    return LK_PS(set1)(bias ? bias[m] : 0.0f);
}

// The depthwise convolution of `channels` whole channels at stride 1 when
// output rows are as wide as input rows (lk_depthwise.c): output pixel
// first + j of a channel reads the input plane at first + j + off[t] for tap
// t, a masked load straight from the input (no padded copy, no call a row);
// bit l of bits[v * taps + t] says whether lane l of vector v is inside the
// image for tap t, and masked-off lanes load as 0, so each output is bias
// then one FMA a tap in tap order with the padding's zeros, as lk_dw_row
// computes it: bit for bit the same.
LK_TARGET LK_INLINE void lk_dw_plane_of(size_t taps, const float *w, const float *bias, size_t channels,
                                        const float *x, size_t in_plane, const ptrdiff_t *off,
                                        const uint32_t *bits, size_t n, float *y, size_t out_plane,
                                        const size_t T) {
    const size_t t_count = T ? T : taps;
    for (size_t m = 0; m < channels; m++, w += taps, x += in_plane, y += out_plane) {
        lk_v wv[25];
        lk_v bv = lk_dw_channel(w, bias, m, wv, T);
        for (size_t j = 0, v0 = 0; j < n; j += 4 * LK_W, v0 += 4) {
            size_t left = n - j;
            lk_v acc[4] = {bv, bv, bv, bv};
            for (size_t t = 0; t < t_count; t++) {
                const float *s = x + (ptrdiff_t)j + off[t];
                lk_v wt = T ? wv[t] : LK_PS(set1)(w[t]);
                const uint32_t *b = bits + v0 * taps + t;
#pragma clang loop unroll(full)
                for (int v = 0; v < 4; v++) {
                    if ((size_t)v * LK_W < left) {
                        lk_v xv = lk_load_lanes(s + v * LK_W, lk_lanes_bits(b[(size_t)v * taps]));
                        acc[v] = LK_PS(fmadd)(wt, xv, acc[v]);
                    }
                }
            }
#pragma clang loop unroll(full)
            for (int v = 0; v < 4; v++) {
                if ((size_t)v * LK_W < left) {
                    if (left >= (size_t)(v + 1) * LK_W) {
                        LK_PS(storeu)(y + j + v * LK_W, acc[v]);
                    } else {
                        lk_store_lanes(y + j + v * LK_W, lk_lanes_upto(left - (size_t)v * LK_W), acc[v]);
                    }
                }
            }
        }
    }
}

LK_TARGET static void lk_dw_plane(size_t taps, const float *w, const float *bias, size_t channels, const float *x,
                                  size_t in_plane, const ptrdiff_t *off, const uint32_t *bits, size_t n, float *y,
                                  size_t out_plane) {
    if (taps == 9) {
        lk_dw_plane_of(taps, w, bias, channels, x, in_plane, off, bits, n, y, out_plane, 9);
    } else if (taps == 25) {
        lk_dw_plane_of(taps, w, bias, channels, x, in_plane, off, bits, n, y, out_plane, 25);
    } else {
        lk_dw_plane_of(taps, w, bias, channels, x, in_plane, off, bits, n, y, out_plane, 0);
    }
}

// R output rows from row oy of one channel of the stride-2 depthwise path
// (lk_dw_s2_fn), a vector of columns at a time: R accumulators for the
// FMAs' latency, each output bias then one FMA a tap in (ky, kx) order with
// zeros outside the image, as lk_dw_row computes it on the padded copy:
// bit for bit the same. Tap kx's cells for a vector are the even lanes of
// the 2W cells from its first column, masked to those inside the row; at
// dilation 1 the odd lanes of the same loads are tap kx + 1's.
LK_TARGET LK_INLINE void lk_dw_s2_block(const lk_conv2d_shape *s, const lk_v *wv, const float *w, lk_v bv,
                                        const float *x, float *y, size_t oy, size_t first, size_t last,
                                        const ptrdiff_t *col, const uint32_t *bits, const int R, const size_t T) {
    size_t kh = s->kernel_h, kw = s->kernel_w, ow = s->out_width, vectors = (ow + LK_W - 1) / LK_W;
    const uint32_t whole = (uint32_t)((1ull << LK_W) - 1);
    for (size_t v = 0; v < vectors; v++) {
        // Row r's lanes to keep: its columns of this vector within [first, last].
        uint32_t keep[4];
        int any = 0;
#pragma clang loop unroll(full)
        for (int r = 0; r < R; r++) {
            size_t p0 = (oy + (size_t)r) * ow + v * LK_W, lo = first > p0 ? first - p0 : 0;
            size_t hi = ow - v * LK_W < LK_W ? ow - v * LK_W : LK_W;
            if (last + 1 < p0 + hi) hi = last + 1 > p0 ? last + 1 - p0 : 0;
            keep[r] = hi > lo ? (uint32_t)((1ull << hi) - (1ull << lo)) : 0;
            any |= keep[r] != 0;
        }
        if (!any) continue;
        lk_v acc[4];
#pragma clang loop unroll(full)
        for (int r = 0; r < R; r++) acc[r] = bv;
        for (size_t ky = 0; ky < kh; ky++) {
            const float *row[4];
#pragma clang loop unroll(full)
            for (int r = 0; r < R; r++) {
                ptrdiff_t iy = (ptrdiff_t)((oy + (size_t)r) * s->stride_h + ky * s->dilation_h) - (ptrdiff_t)s->pad_top;
                row[r] = iy >= 0 && iy < (ptrdiff_t)s->height ? x + (size_t)iy * s->width : NULL;
            }
            for (size_t kx = 0; kx < kw;) {
                size_t t = ky * kw + kx, two = s->dilation_w == 1 && kx + 1 < kw;
                lk_v w0 = T ? wv[t] : LK_PS(set1)(w[t]), w1 = two ? (T ? wv[t + 1] : LK_PS(set1)(w[t + 1])) : w0;
                ptrdiff_t c = col[kx] + (ptrdiff_t)(2 * v * LK_W);
                lk_lanes in_lo = lk_lanes_bits(bits[kx * vectors + v]), in_hi = lk_lanes_bits(bits[kx * vectors + v] >> LK_W);
#pragma clang loop unroll(full)
                for (int r = 0; r < R; r++) {
                    lk_v lo = LK_PS(setzero)(), hi = lo;
                    if (row[r]) {
                        lo = lk_load_lanes(row[r] + c, in_lo);
                        hi = lk_load_lanes(row[r] + c + LK_W, in_hi);
                    }
                    acc[r] = LK_PS(fmadd)(w0, lk_even_lanes(lo, hi), acc[r]);
                    if (two) acc[r] = LK_PS(fmadd)(w1, lk_odd_lanes(lo, hi), acc[r]);
                }
                kx += 1 + two;
            }
        }
#pragma clang loop unroll(full)
        for (int r = 0; r < R; r++) {
            float *dst = y + (oy + (size_t)r) * ow + v * LK_W;
            if (keep[r] == whole) {
                LK_PS(storeu)(dst, acc[r]);
            } else if (keep[r]) {
                lk_store_lanes(dst, lk_lanes_bits(keep[r]), acc[r]);
            }
        }
    }
}

LK_TARGET LK_INLINE void lk_dw_s2_of(const lk_conv2d_shape *s, const float *w, const float *bias, size_t channels,
                                     const float *x, float *y, size_t first, size_t count, const ptrdiff_t *col,
                                     const uint32_t *bits, const size_t T) {
    size_t taps = s->kernel_h * s->kernel_w, in_plane = s->height * s->width;
    size_t out_plane = s->out_height * s->out_width, last = first + count - 1, end = last / s->out_width + 1;
    for (size_t m = 0; m < channels; m++, w += taps, x += in_plane, y += out_plane) {
        lk_v wv[25];
        lk_v bv = lk_dw_channel(w, bias, m, wv, T);
        size_t oy = first / s->out_width;
        for (; oy + 4 <= end; oy += 4) lk_dw_s2_block(s, wv, w, bv, x, y, oy, first, last, col, bits, 4, T);
        if (end - oy == 3) lk_dw_s2_block(s, wv, w, bv, x, y, oy, first, last, col, bits, 3, T);
        if (end - oy == 2) lk_dw_s2_block(s, wv, w, bv, x, y, oy, first, last, col, bits, 2, T);
        if (end - oy == 1) lk_dw_s2_block(s, wv, w, bv, x, y, oy, first, last, col, bits, 1, T);
    }
}

LK_TARGET static void lk_dw_s2(const lk_conv2d_shape *s, const float *w, const float *bias, size_t channels,
                               const float *x, float *y, size_t first, size_t count, const ptrdiff_t *col,
                               const uint32_t *bits) {
    size_t taps = s->kernel_h * s->kernel_w;
    if (taps == 9) {
        lk_dw_s2_of(s, w, bias, channels, x, y, first, count, col, bits, 9);
    } else if (taps == 25) {
        lk_dw_s2_of(s, w, bias, channels, x, y, first, count, col, bits, 25);
    } else {
        lk_dw_s2_of(s, w, bias, channels, x, y, first, count, col, bits, 0);
    }
}

LK_TARGET static void lk_dw_pair(size_t k, const float *w, const float *b, const ptrdiff_t *col, size_t line,
                                 size_t n, float bias, float *c0, float *c1) {
    if (k == 3) {
        lk_dw_pair_of(w, b, col, line, n, bias, c0, c1, 3);
    } else {
        lk_dw_pair_of(w, b, col, line, n, bias, c0, c1, 5);
    }
}

LK_TARGET static void lk_dw_row(size_t taps, const float *w, const float *b, const ptrdiff_t *off, size_t n,
                                float bias, float *c) {
    if (taps == 9) {
        lk_dw_row_of(taps, w, b, off, n, bias, c, 9);
    } else if (taps == 25) {
        lk_dw_row_of(taps, w, b, off, n, bias, c, 25);
    } else {
        lk_dw_row_of(taps, w, b, off, n, bias, c, 0);
    }
}

// The channel-vectorized direct block (lk_conv2d.c, narrow outputs): R
// output pixels of one row (R <= MR, a constant after inlining) x 2W
// output channels, tile[r * 2W + j] = bias[j] + sum over p < k of
// w[p * 2W + j] * b[off[p] + r]: each tap loads two vectors of weights and
// broadcasts R input cells, 2R FMAs, so a 7-pixel row fills every lane.
LK_TARGET LK_INLINE void lk_conv_cv_of(size_t k, const float *w, const float *b, const ptrdiff_t *off,
                                       const float *bias, float *tile, const int R) {
    lk_v acc[LK_GEMM_MR][2];
    lk_v b0 = LK_PS(loadu)(bias), b1 = LK_PS(loadu)(bias + LK_W);
#pragma clang loop unroll(full)
    for (int r = 0; r < R; r++) {
        acc[r][0] = b0;
        acc[r][1] = b1;
    }
    for (size_t p = 0; p < k; p++, w += 2 * LK_W) {
        __builtin_prefetch(w + 64 * LK_W);
        lk_v w0 = LK_PS(loadu)(w), w1 = LK_PS(loadu)(w + LK_W);
        const float *bp = b + off[p];
#pragma clang loop unroll(full)
        for (int r = 0; r < R; r++) {
            lk_v xr = LK_PS(set1)(bp[r]);
            acc[r][0] = LK_PS(fmadd)(xr, w0, acc[r][0]);
            acc[r][1] = LK_PS(fmadd)(xr, w1, acc[r][1]);
        }
    }
#pragma clang loop unroll(full)
    for (int r = 0; r < R; r++) {
        LK_PS(storeu)(tile + r * 2 * LK_W, acc[r][0]);
        LK_PS(storeu)(tile + r * 2 * LK_W + LK_W, acc[r][1]);
    }
}

LK_TARGET static void lk_conv_cv(size_t k, size_t pixels, const float *w, const float *b, const ptrdiff_t *off,
                                 const float *bias, float *tile) {
    switch (pixels) {
#define LK_CONV_CV_CASE(r)                                                                                     \
    case r: lk_conv_cv_of(k, w, b, off, bias, tile, r); break;
    LK_CONV_CV_CASE(1)
    LK_CONV_CV_CASE(2)
    LK_CONV_CV_CASE(3)
    LK_CONV_CV_CASE(4)
    LK_CONV_CV_CASE(5)
    LK_CONV_CV_CASE(6)
#if LK_GEMM_MR > 6
    LK_CONV_CV_CASE(7)
    LK_CONV_CV_CASE(8)
#endif
#undef LK_CONV_CV_CASE
    default: break;
    }
}

const lk_gemm_isa LK_GEMM_ISA = {LK_GEMM_MR, LK_GEMM_NR, lk_gemm_kernel, lk_gemm_pack_b, lk_gemv, lk_gemv_bt, lk_conv_rows,
                                 lk_dw_row, lk_dw_pair, lk_conv_cv, lk_dw_plane, lk_dw_s2};
