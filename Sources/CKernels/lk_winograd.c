// Driver and portable path of lk_winograd.h.
//
// Layout: the input transform of a block of tile rows writes
// V[(m+2)^2][C][tp] (tile index k = tile row * tw + tile column, contiguous);
// the weights are packed once as U[(m+2)^2][M / mr][C][mr] (mr-row panels of
// the register block, rows past M zero); plane p's product
// O_p[mp x tiles] = U_p[mp x C] * V_p[C x tiles] runs tiles along the
// vector lanes (2 vectors, or one vector for two panels when a block has
// few tiles); the output transform reads O[(m+2)^2][mp][tp] along tiles.
//
// Blocks of tile rows are sized so that V and O stay in L2 (LK_WG_BLOCK_BYTES):
// each V plane is read once per mr-row panel of U.

#include "lk_winograd_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define LK_TARGET
#define LK_INLINE static inline __attribute__((always_inline))
#define LK_WG_ISA lk_winograd_scalar
#define LK_WG_MR 4
#define LK_WG_NR 8
#include "lk_winograd_body.h"

// V and O of a block within this many bytes (but at least nr tiles a
// block): half of a 1 MiB L2 (AMD EPYC here). Measured at 1 thread, load ~7:
// 128 KiB to 8 MiB blocks within noise of each other on 64->64 56x56,
// 128->128 64x64 and 64->64 112x112 (8 MiB, a whole 56x56 image in one
// block, up to 7% faster on 56x56 in some rounds, not in others); 32 MiB
// 1.1-3x slower.
#define LK_WG_BLOCK_BYTES (512 * 1024)


static const lk_winograd_isa *lk_winograd_for(lk_isa isa) {
#ifdef LK_HAVE_X86_WINOGRAD
    switch (isa) {
    case LK_ISA_AVX512F: return &lk_winograd_avx512;
    case LK_ISA_AVX2_FMA: return &lk_winograd_avx2;
    case LK_ISA_SCALAR: break;
    }
#else
    (void)isa;
#endif
    return &lk_winograd_scalar;
}

// G for F(2x2, 3x3) and F(4x4, 3x3), same points as lk_winograd_body.h's B^T, A^T.
static const double lk_wg_g2[4][3] = {{-1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
static const double lk_wg_g4[6][3] = {{1, 0, 0},
                                      {1.0 / 6, 1.0 / 6, 1.0 / 6},
                                      {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                      {-16.0 / 15, -8.0 / 15, -4.0 / 15},
                                      {1.0 / 30, -1.0 / 15, 2.0 / 15},
                                      {0, 0, 1}};

size_t lk_winograd_weights_floats(lk_isa isa, int tile, size_t out_channels, size_t channels) {
    if (tile != 2 && tile != 4) return 0;
    size_t n = (size_t)tile + 2, mr = lk_winograd_for(isa)->mr;
    return n * n * (out_channels + mr - 1) / mr * mr * channels;
}

int lk_winograd_pack_weights(lk_isa isa, int tile, size_t out_channels, size_t channels, const float *w,
                             float *packed) {
    if ((tile != 2 && tile != 4) || isa > lk_kernels_isa()) return -1;
    const lk_winograd_isa *k = lk_winograd_for(isa);
    size_t n = (size_t)tile + 2, mr = k->mr, panels = (out_channels + mr - 1) / mr;
    memset(packed, 0, lk_winograd_weights_floats(isa, tile, out_channels, channels) * sizeof(float));
    int special = 0;
    for (size_t i = 0; i < out_channels * channels * 9; i++) special |= !isfinite(w[i]);
    for (size_t m = 0; m < out_channels; m++) {
        for (size_t c = 0; c < channels; c++) {
            const float *g = w + (m * channels + c) * 9;
            double t[6][3]; // G g
            for (size_t a = 0; a < n; a++) {
                for (size_t j = 0; j < 3; j++) {
                    double s = 0;
                    for (size_t i = 0; i < 3; i++) s += (tile == 4 ? lk_wg_g4[a][i] : lk_wg_g2[a][i]) * g[i * 3 + j];
                    t[a][j] = s;
                }
            }
            for (size_t a = 0; a < n; a++) {
                for (size_t b = 0; b < n; b++) {
                    double s = 0;
                    for (size_t j = 0; j < 3; j++) s += t[a][j] * (tile == 4 ? lk_wg_g4[b][j] : lk_wg_g2[b][j]);
                    packed[(((a * n + b) * panels + m / mr) * channels + c) * mr + m % mr] = (float)s;
                }
            }
        }
    }
    return special;
}

// The work buffer of the calling thread, kept between calls and grown as
// needed (freed when the thread exits): a buffer allocated per call is
// mmapped and its pages cleared by the kernel every time (measured at
// 64->64 56x56 F(4x4): 6% of the run in clear_page).
static pthread_key_t lk_wg_key;
static pthread_once_t lk_wg_once = PTHREAD_ONCE_INIT;
typedef struct {
    float *floats;
    size_t count;
} lk_wg_buffer;
static _Thread_local lk_wg_buffer lk_wg_buf;

static void lk_wg_release(void *buffer) {
    free(((lk_wg_buffer *)buffer)->floats);
    ((lk_wg_buffer *)buffer)->floats = NULL;
    ((lk_wg_buffer *)buffer)->count = 0;
}

static void lk_wg_make_key(void) { (void)pthread_key_create(&lk_wg_key, lk_wg_release); }

static float *lk_wg_scratch(size_t count) {
    if (lk_wg_buf.count >= count) return lk_wg_buf.floats;
    (void)pthread_once(&lk_wg_once, lk_wg_make_key);
    free(lk_wg_buf.floats);
    lk_wg_buf.count = 0;
    // aligned_alloc wants a multiple of the alignment.
    lk_wg_buf.floats = aligned_alloc(64, (count * sizeof(float) + 63) / 64 * 64);
    if (!lk_wg_buf.floats) return NULL;
    lk_wg_buf.count = count;
    (void)pthread_setspecific(lk_wg_key, &lk_wg_buf);
    return lk_wg_buf.floats;
}

int lk_winograd_conv2d_f32(lk_isa isa, int tile, const lk_conv2d_shape *s, const float *x,
                           const float *packed, const float *bias, float *y, size_t tile_row_first,
                           size_t tile_rows) {
    if ((tile != 2 && tile != 4) || isa > lk_kernels_isa() || s->kernel_h != 3 || s->kernel_w != 3
        || s->stride_h != 1 || s->stride_w != 1 || s->dilation_h != 1 || s->dilation_w != 1 || s->group != 1) {
        return -2;
    }
    const lk_winograd_isa *k = lk_winograd_for(isa);
    size_t m = (size_t)tile, n = m + 2, nn = n * n, cn = s->channels, mn = s->out_channels;
    size_t mr = k->mr, nr = k->nr, panels = (mn + mr - 1) / mr, mp = panels * mr;
    size_t th = (s->out_height + m - 1) / m, tw = (s->out_width + m - 1) / m;
    if (tile_row_first >= th || tile_rows == 0 || cn == 0 || mn == 0) return 0;
    if (tile_rows > th - tile_row_first) tile_rows = th - tile_row_first;
    // Tile rows a block: V and O within LK_WG_BLOCK_BYTES, blocks of even size.
    size_t row_bytes = nn * (cn + mp) * tw * sizeof(float);
    size_t rb = LK_WG_BLOCK_BYTES / row_bytes;
    // At least a register block's columns of tiles: 4 tiles a block (256
    // channels, 14x14, F(4x4)) ran the products 3.4x slower than 16.
    size_t rb_min = (nr + tw - 1) / tw;
    rb = rb < rb_min ? rb_min : rb;
    rb = rb > tile_rows ? tile_rows : rb;
    size_t blocks = (tile_rows + rb - 1) / rb;
    rb = (tile_rows + blocks - 1) / blocks;
    lk_wg_block b = {cn, mn, s->height, s->width, s->out_height, s->out_width, s->pad_top, s->pad_left,
                     mp, tw, 0, 0, (rb * tw + 15) / 16 * 16, (tw + 1) * m};
    size_t v_floats = nn * cn * b.tp, o_floats = nn * mp * b.tp;
    // Input: padded rows, a line, the column pass; output: m * m phases and a line.
    size_t scratch_floats = (rb * m + 3 + n) * b.wl;
    float *v = lk_wg_scratch(v_floats + o_floats + scratch_floats);
    if (!v) return -1;
    float *o = v + v_floats, *scratch = o + o_floats;
    for (size_t r0 = tile_row_first; r0 < tile_row_first + tile_rows; r0 += rb) {
        b.r0 = r0;
        b.rb = tile_row_first + tile_rows - r0 < rb ? tile_row_first + tile_rows - r0 : rb;
        size_t tiles = b.rb * tw;
        if (k->input[m == 4](&b, x, v, scratch)) return 1;
        for (size_t p = 0; p < nn; p++) {
            const float *up = packed + p * panels * cn * mr, *vp = v + p * cn * b.tp;
            float *op = o + p * mp * b.tp;
            for (size_t j0 = 0; j0 < tiles; j0 += nr) {
                size_t cols = tiles - j0 < nr ? tiles - j0 : nr, i = 0;
                if (cols * 2 <= nr) {
                    for (; i + 1 < panels; i += 2) {
                        k->narrow(cn, up + i * cn * mr, up + (i + 1) * cn * mr, vp + j0, b.tp,
                                  op + i * mr * b.tp + j0, b.tp, cols);
                    }
                }
                for (; i < panels; i++) k->kernel(cn, up + i * cn * mr, vp + j0, b.tp, op + i * mr * b.tp + j0, b.tp, cols);
            }
        }
        k->output[m == 4](&b, o, bias, y, scratch);
    }
    return 0;
}
