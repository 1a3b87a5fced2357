#ifndef LK_SIMD_PAIR_H
#define LK_SIMD_PAIR_H

// Written in the vocabulary of lk_simd_avx2.h or lk_simd_avx512.h, which
// include it after defining it.

// Two vectors of one register-block row at c: masked to m0 and m1 lanes, or whole.
LK_TARGET LK_INLINE void lk_store_pair(float *c, int masked, lk_lanes m0, lk_lanes m1, lk_v lo, lk_v hi) {
    if (masked) {
        lk_store_lanes(c, m0, lo);
        lk_store_lanes(c + LK_W, m1, hi);
    } else {
        LK_PS(storeu)(c, lo);
        LK_PS(storeu)(c + LK_W, hi);
    }
}

#endif
