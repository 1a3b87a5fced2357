// lk_half_range.h: the one pass `HalfRange(checking:)` makes over every
// constant of a plan (all of a model's weights) and, with a GPU, every
// float input. Written in Swift it was a scalar loop, about 100 ms of
// GPT-2 small's first plan (124 M weights); here the elements are read as
// their bits, the extremes as order keys and the counts as sums, all
// integer arithmetic without branches, which the compiler vectorizes.
// The body is written once and compiled for AVX2 (8 lanes, per-lane
// shifts) and portable C, picked at run time.

#include "lk_half_range.h"

#include <string.h>

// The bits of a float: positive floats order as their bits do.
static inline __attribute__((always_inline)) uint32_t lk_float_bits(float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bits;
}

// Elements a block's 32-bit counters take without overflowing.
#define LK_HALF_SCAN_BLOCK ((size_t)1 << 24)

// One block: every operation a select, a mask or a comparison giving 0 or
// 1 (no && or ||, whose branches keep the loop scalar).
static inline __attribute__((always_inline)) void lk_half_scan_block(const float *x, size_t n, uint32_t *lowest,
                                                                     uint32_t *highest, uint32_t *largest,
                                                                     uint32_t counts[3]) {
    uint32_t low = *lowest, high = *highest, big = *largest, overflows = 0, changed = 0, beyond = 0;
    const uint32_t largestBits = lk_float_bits(LK_HALF_LARGEST);
    const uint32_t integersBits = lk_float_bits(LK_HALF_LARGEST_EXACT_INTEGER);
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, x + i, sizeof u);  // the float's bits (a load; no aliasing through a cast)
        uint32_t a = u & 0x7fffffffu;
        uint32_t finite = a < 0x7f800000u;
        uint32_t all = 0u - finite;  // all ones for a finite element
        // Order keys: negative floats reversed below the positive ones.
        uint32_t key = u ^ ((uint32_t)((int32_t)u >> 31) | 0x80000000u);
        uint32_t lowKey = key | ~all, highKey = key & all, magnitude = a & all;
        low = lowKey < low ? lowKey : low;
        high = highKey > high ? highKey : high;
        big = magnitude > big ? magnitude : big;
        // fp16 keeps 10 of float's 23 fraction bits at exponents -14...15 and
        // one fewer per exponent below, down to 2^-24: Float(Float16(x)) == x
        // exactly when the bits it drops are zero.
        int32_t exponent = (int32_t)(a >> 23) - 127;
        int32_t below = -14 - exponent;
        below = below > 0 ? below : 0;
        below = below < 18 ? below : 18;  // past 2^-24 the range test fails anyway
        uint32_t dropped = ((uint32_t)1 << (13 + below)) - 1u;
        uint32_t inRange = (uint32_t)(exponent <= 15) & (uint32_t)(exponent >= -24);
        uint32_t kept = (uint32_t)(a == 0) | (inRange & (uint32_t)((a & dropped) == 0));
        uint32_t lost = finite & (kept ^ 1u);
        overflows += finite & (uint32_t)(a > largestBits);
        changed += lost;
        beyond += lost & (uint32_t)(a > integersBits) & (uint32_t)(a <= largestBits);
    }
    *lowest = low, *highest = high, *largest = big;
    counts[0] = overflows, counts[1] = changed, counts[2] = beyond;
}

static inline __attribute__((always_inline)) void lk_half_scan_body(const float *x, size_t n,
                                                                    lk_half_scan *result) {
    lk_half_scan r = {UINT32_MAX, 0, 0, 0, 0, 0};
    for (size_t start = 0; start < n; start += LK_HALF_SCAN_BLOCK) {
        uint32_t counts[3];
        size_t count = n - start < LK_HALF_SCAN_BLOCK ? n - start : LK_HALF_SCAN_BLOCK;
        lk_half_scan_block(x + start, count, &r.lowest, &r.highest, &r.largest_magnitude, counts);
        r.overflows += counts[0], r.changed += counts[1], r.changed_beyond_integers += counts[2];
    }
    *result = r;
}

static void lk_half_scan_c(const float *x, size_t n, lk_half_scan *result) { lk_half_scan_body(x, n, result); }

#if defined(__x86_64__)
#define LK_HAVE_AVX2_HALF_SCAN 1
__attribute__((target("avx2"))) static void lk_half_scan_avx2(const float *x, size_t n, lk_half_scan *result) {
    lk_half_scan_body(x, n, result);
}
#endif

void lk_half_scan_f32_isa(lk_isa isa, const float *x, size_t n, lk_half_scan *result) {
#ifdef LK_HAVE_AVX2_HALF_SCAN
    if (isa != LK_ISA_SCALAR && lk_kernels_isa() != LK_ISA_SCALAR) {
        lk_half_scan_avx2(x, n, result);
        return;
    }
#else
    (void)isa;
#endif
    lk_half_scan_c(x, n, result);
}

void lk_half_scan_f32(const float *x, size_t n, lk_half_scan *result) {
    lk_half_scan_f32_isa(lk_kernels_isa(), x, n, result);
}

float lk_half_scan_float(uint32_t key) {
    uint32_t bits = (key & 0x80000000u) ? key & 0x7fffffffu : ~key;
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}
