// Swish y = x / (1 + exp(z)), z = -beta * x, with its own exp so the
// scalar, AVX2 and AVX-512 paths share one algorithm and one set of
// constants (AVX-512 shortens the power-of-two steps, see lk_swish16):
//
//   exp(z) = 2^n * e(r),  n = round(z / ln2),  r = z - n*ln2 (ln2 split in
//   hi/lo so n*ln2_hi is exact), e(r) = 1 + r + r^2*P(r), a degree-3 P
//   (see LK_EXP_P0), |r| <= ln2/2, relative error ~2e-7.
//
// 2^n overflows float for n > 127 (z > 88.7) although the quotient is
// still a normal float up to |beta*x| ~ 100 + ln|x|. So for n > 0 the
// quotient is rewritten as
//
//   y = (x * 2^-n) / (2^-n + e(r))        (n <= 0: y = x / (1 + e(r)*2^n))
//
// with 2^-n applied to x in two steps (each power a normal float). With
// m = max(n, 0) and k = min(n, 0) both cases read
//
//   y = (x * 2^-(m/2) * 2^-(m - m/2)) / (2^-m + e(r) * 2^k).
//
// z = -beta*x is rounded to float, an error that exp multiplies by |z|
// (4e-6 relative at z = 70); its rounding error zlo is added back into r.
// z is clamped to [LK_Z_MIN, LK_Z_MAX] so every power of two is a normal
// float; above LK_Z_MAX the result is +-0. An infinite x there (z = +inf)
// gives NaN, as x * sigmoid(beta*x) = -inf * 0 does in IEEE arithmetic: the
// catalog defines every op by its formula, and onnxruntime agrees.
//
// Measured on this project's 2-core Zen 5 machine, 4M floats on one thread:
// scalar 8.5 ms, AVX2 1.9 ms, AVX-512 0.7 ms, the last limited by its FMA
// and multiply count (the same speed in L2), so each multiply saved counts.
// AVX-512 now takes a shorter path when no lane needs the rescaling
// (lk_swish16_fast: 0.64 -> 0.47 ms in L2) and prefetches (0.52 ms for 4M).
// A reciprocal with one Newton step instead of the division was slower
// (AVX-512: 1.0 vs 0.87 ms in cache); non-temporal stores gained ~6% on one
// thread but would evict the output the next layer reads, so they are unused.

#include "lk_kernels.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LK_HAVE_AVX2_PATH 1
#endif

#define LK_LOG2E 1.44269504088896341f
#define LK_LN2_HI 0.693359375f        // 9 significant bits: n*LK_LN2_HI is exact
#define LK_LN2_LO -2.12194440e-4f     // ln2 - LK_LN2_HI
// e^r ~ 1 + r + r^2 * P(r), P = P0 r^3 + P1 r^2 + P2 r + P3: a degree-5
// fit for least maximum relative error on |r| <= 0.354 (Lawson iterations),
// 1.2e-7 in exact arithmetic, 2.1e-7 evaluated in float. Two FMAs fewer than
// Cephes' degree 7, which is more accurate than float evaluation can keep.
#define LK_EXP_P0 8.311567828e-3f
#define LK_EXP_P1 4.189892486e-2f
#define LK_EXP_P2 1.666715294e-1f
#define LK_EXP_P3 4.999917150e-1f
// Below LK_Z_MIN, exp(z) < 2^-125 vanishes next to 1; clamping keeps 2^k normal.
#define LK_Z_MIN -87.0f
// Above LK_Z_MAX, |y| <= |x| e^-174 < 1e-37 for every float x: return +-0.
// Clamping there keeps n <= 251, so m/2 and m - m/2 stay <= 126.
#define LK_Z_MAX 174.0f
#define LK_MAX_NORMAL_SHIFT 126       // 2^-126 is the smallest normal float

// 2^j for j in [-126, 127], built from its exponent bits.
static inline float lk_pow2i(int32_t j) {
    uint32_t bits = (uint32_t)(j + 127) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

// zlo clamped to [-1, 1], NaN to -1: it is NaN or huge only where z is
// infinite or clamped, where it must not turn a finite result into NaN.
static inline float lk_clamp_unit(float v) {
    v = v > -1.0f ? v : -1.0f;
    return v < 1.0f ? v : 1.0f;
}

// One element; the reference the vector path follows step by step.
static inline float lk_swish_one(float x, float beta) {
    float z = -beta * x;
    if (z > LK_Z_MAX) return isinf(x) ? NAN : copysignf(0.0f, x);
    // Written so NaN z clamps to LK_Z_MIN (as _mm256_max_ps does): n stays
    // a valid integer and a NaN x still makes y NaN through the numerator.
    float zc = z > LK_Z_MIN ? z : LK_Z_MIN;
    // The exact product fits a double, so this is zlo without needing fmaf.
    float zlo = (float)(-(double)beta * (double)x - (double)z);
    zlo = lk_clamp_unit(zlo);
    float t = floorf(zc * LK_LOG2E + 0.5f);
    int32_t n = (int32_t)t;
    float r = zc - t * LK_LN2_HI;
    r = r - t * LK_LN2_LO + zlo;
    float p = LK_EXP_P0;
    p = p * r + LK_EXP_P1;
    p = p * r + LK_EXP_P2;
    p = p * r + LK_EXP_P3;
    float er = r * r * p + (r + 1.0f);
    int32_t m = n > 0 ? n : 0;
    int32_t k = n - m;
    int32_t m1 = m >> 1;
    int32_t mc = m < LK_MAX_NORMAL_SHIFT ? m : LK_MAX_NORMAL_SHIFT;
    float denom = lk_pow2i(-mc) + er * lk_pow2i(k);
    float num = x * lk_pow2i(-m1) * lk_pow2i(-(m - m1));
    return num / denom;
}

static void lk_swish_scalar(const float *x, float *y, size_t n, float beta) {
    for (size_t i = 0; i < n; i++) y[i] = lk_swish_one(x[i], beta);
}

#ifdef LK_HAVE_AVX2_PATH
#define LK_AVX2 __attribute__((target("avx2,fma")))

// 2^-j for j in [0, 126], 8 lanes.
LK_AVX2 static inline __m256 lk_pow2_neg8(__m256i j) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_sub_epi32(_mm256_set1_epi32(127), j), 23));
}

// 2^j for j in [-126, 0], 8 lanes.
LK_AVX2 static inline __m256 lk_pow2_8(__m256i j) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_set1_epi32(127), j), 23));
}

// lk_swish_one on 8 lanes; nbeta = -beta.
LK_AVX2 static inline __m256 lk_swish8(__m256 x, __m256 nbeta) {
    __m256 z = _mm256_mul_ps(nbeta, x);
    __m256 vanish = _mm256_cmp_ps(z, _mm256_set1_ps(LK_Z_MAX), _CMP_GT_OQ);
    // max_ps returns its second operand when one is NaN: NaN z -> LK_Z_MIN.
    __m256 zc = _mm256_min_ps(_mm256_max_ps(z, _mm256_set1_ps(LK_Z_MIN)), _mm256_set1_ps(LK_Z_MAX));
    __m256 t = _mm256_round_ps(_mm256_mul_ps(zc, _mm256_set1_ps(LK_LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256i n = _mm256_cvtps_epi32(t);
    __m256 r = _mm256_fnmadd_ps(t, _mm256_set1_ps(LK_LN2_HI), zc);
    r = _mm256_fnmadd_ps(t, _mm256_set1_ps(LK_LN2_LO), r);
    // zlo = nbeta*x - z exactly; clamped as in lk_clamp_unit (NaN -> -1).
    __m256 zlo = _mm256_fmsub_ps(nbeta, x, z);
    zlo = _mm256_min_ps(_mm256_max_ps(zlo, _mm256_set1_ps(-1.0f)), _mm256_set1_ps(1.0f));
    r = _mm256_add_ps(r, zlo);
    __m256 p = _mm256_set1_ps(LK_EXP_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(LK_EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(LK_EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(LK_EXP_P3));
    __m256 er = _mm256_fmadd_ps(_mm256_mul_ps(r, r), p, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i zero = _mm256_setzero_si256();
    __m256i m = _mm256_max_epi32(n, zero);
    __m256i k = _mm256_min_epi32(n, zero);
    __m256i m1 = _mm256_srli_epi32(m, 1);
    __m256i mc = _mm256_min_epi32(m, _mm256_set1_epi32(LK_MAX_NORMAL_SHIFT));
    __m256 denom = _mm256_fmadd_ps(er, lk_pow2_8(k), lk_pow2_neg8(mc));
    __m256 num = _mm256_mul_ps(_mm256_mul_ps(x, lk_pow2_neg8(m1)),
                               lk_pow2_neg8(_mm256_sub_epi32(m, m1)));
    __m256 signed_zero = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
    num = _mm256_blendv_ps(num, signed_zero, vanish);
    __m256 infinite_x = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x),
                                      _mm256_set1_ps(INFINITY), _CMP_EQ_OQ);
    num = _mm256_blendv_ps(num, _mm256_set1_ps(NAN), _mm256_and_ps(vanish, infinite_x));
    return _mm256_div_ps(num, denom);
}

LK_AVX2 static void lk_swish_avx2(const float *x, float *y, size_t n, float beta) {
    const __m256 nbeta = _mm256_set1_ps(-beta);
    size_t i = 0;
    // Two independent vectors per step give the out-of-order core more to overlap.
    for (; i + 16 <= n; i += 16) {
        __m256 a = lk_swish8(_mm256_loadu_ps(x + i), nbeta);
        __m256 b = lk_swish8(_mm256_loadu_ps(x + i + 8), nbeta);
        _mm256_storeu_ps(y + i, a);
        _mm256_storeu_ps(y + i + 8, b);
    }
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(y + i, lk_swish8(_mm256_loadu_ps(x + i), nbeta));
    }
    if (i < n) {
        // Masked load/store for the last 1..7 elements: the tail gets exactly
        // the vector result, and no byte past the end is read or written.
        __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - i)), lane);
        __m256 v = lk_swish8(_mm256_maskload_ps(x + i, mask), nbeta);
        _mm256_maskstore_ps(y + i, mask, v);
    }
}

#define LK_AVX512 __attribute__((target("avx512f")))

// r = z - t*ln2 for z = -beta*x, t = round(z / ln2): the product inside the
// FMA is exact, so no separate zlo. Exact enough while |t| <= 2^12 (t*ln2_hi
// is then exact).
LK_AVX512 static inline __m512 lk_reduce16(__m512 x, __m512 t, __m512 nbeta) {
    __m512 r = _mm512_fmadd_ps(nbeta, x, _mm512_mul_ps(t, _mm512_set1_ps(-LK_LN2_HI)));
    return _mm512_fnmadd_ps(t, _mm512_set1_ps(LK_LN2_LO), r);
}

// e(r) = 1 + r + r^2 * P(r).
LK_AVX512 static inline __m512 lk_exp_reduced16(__m512 r) {
    __m512 p = _mm512_set1_ps(LK_EXP_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(LK_EXP_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(LK_EXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(LK_EXP_P3));
    return _mm512_fmadd_ps(_mm512_mul_ps(r, r), p, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
}

// Swish on 16 lanes, the same algorithm shortened by vscalefps (x * 2^e for
// a float e, correctly rounded for any e, infinite e included): powers of two
// need no exponent bits, so neither z nor n needs clamping. What clamping
// did elsewhere is done here by:
// - r (lk_reduce16) is clamped to [-1, 1] (NaN -> -1) so e(r) stays finite
//   where z is infinite, huge or NaN;
// - lanes with z > LK_Z_MAX become +-0 with one masked AND, and NaN where
//   x is infinite (as in lk_swish_one).
// u = x * (-beta*log2e) is one multiply; its rounding only moves n by one
// near ties, which r absorbs.
LK_AVX512 static inline __m512 lk_swish16(__m512 x, __m512 u, __m512 nbeta) {
    const __m512 zero = _mm512_setzero_ps();
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 t = _mm512_roundscale_ps(u, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = lk_reduce16(x, t, nbeta);
    r = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(-1.0f)), one);
    __m512 er = lk_exp_reduced16(r);
    // min_ps returns its second operand for NaN: NaN t gives m = k = 0.
    __m512 neg_m = _mm512_min_ps(_mm512_sub_ps(zero, t), zero); // -max(n, 0)
    __m512 k = _mm512_min_ps(t, zero);                          //  min(n, 0)
    __m512 denom = _mm512_add_ps(_mm512_scalef_ps(one, neg_m), _mm512_scalef_ps(er, k));
    __m512 num = _mm512_scalef_ps(x, neg_m);
    // n > LK_Z_MAX*log2e (251) where z > LK_Z_MAX: there y is +-0.
    __mmask16 vanish = _mm512_cmp_ps_mask(t, _mm512_set1_ps(251.0f), _CMP_GT_OQ);
    num = _mm512_castsi512_ps(_mm512_mask_and_epi32(_mm512_castps_si512(num), vanish,
                                                    _mm512_castps_si512(x),
                                                    _mm512_set1_epi32((int)0x80000000u)));
    __mmask16 infinite_x = _mm512_cmp_ps_mask(_mm512_abs_ps(x), _mm512_set1_ps(INFINITY), _CMP_EQ_OQ);
    num = _mm512_mask_mov_ps(num, vanish & infinite_x, _mm512_set1_ps(NAN));
    return _mm512_div_ps(num, denom);
}

// lk_swish16 where every lane has LK_FAST_U_MIN <= u <= LK_FAST_U_MAX
// (z <= 87.3): 2^n * e(r) is then finite, so y = x / (1 + e(r)*2^n) needs
// none of the clamps and rescaling, 7 vector operations fewer. Below
// LK_FAST_U_MIN, e(r)*2^n vanishes next to 1 anyway; the bound only keeps r
// exact (lk_reduce16).
#define LK_FAST_U_MAX 126.0f
#define LK_FAST_U_MIN -4096.0f
LK_AVX512 static inline __m512 lk_swish16_fast(__m512 x, __m512 u, __m512 nbeta) {
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 t = _mm512_roundscale_ps(u, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 er = lk_exp_reduced16(lk_reduce16(x, t, nbeta));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_scalef_ps(er, t), one));
}

// Lanes lk_swish16_fast cannot take: u outside its range, or NaN.
LK_AVX512 static inline __mmask16 lk_needs_full16(__m512 u) {
    return _mm512_cmp_ps_mask(u, _mm512_set1_ps(LK_FAST_U_MAX), _CMP_NLE_UQ)
         | _mm512_cmp_ps_mask(u, _mm512_set1_ps(LK_FAST_U_MIN), _CMP_LT_OQ);
}

// How far ahead (in floats, 16 KiB) to prefetch input and output: the
// hardware prefetcher alone leaves the loop waiting on memory for tensors
// beyond L2 (4M floats on one thread: 0.65 -> 0.52 ms); in cache it costs
// nothing measurable.
#define LK_PREFETCH_AHEAD 4096

LK_AVX512 static void lk_swish_avx512(const float *x, float *y, size_t n, float beta) {
    const __m512 nbeta = _mm512_set1_ps(-beta);
    const __m512 nbeta_log2e = _mm512_set1_ps(-beta * LK_LOG2E);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        // Prefetches never fault, so running past the end is harmless.
        _mm_prefetch((const char *)(x + i + LK_PREFETCH_AHEAD), _MM_HINT_T0);
        _mm_prefetch((const char *)(x + i + LK_PREFETCH_AHEAD + 16), _MM_HINT_T0);
        _mm_prefetch((const char *)(y + i + LK_PREFETCH_AHEAD), _MM_HINT_T0);
        _mm_prefetch((const char *)(y + i + LK_PREFETCH_AHEAD + 16), _MM_HINT_T0);
        __m512 xa = _mm512_loadu_ps(x + i), xb = _mm512_loadu_ps(x + i + 16);
        __m512 ua = _mm512_mul_ps(xa, nbeta_log2e), ub = _mm512_mul_ps(xb, nbeta_log2e);
        __m512 a, b;
        // Both vectors take one path, so the test is one branch per 32 floats.
        if (__builtin_expect((lk_needs_full16(ua) | lk_needs_full16(ub)) == 0, 1)) {
            a = lk_swish16_fast(xa, ua, nbeta);
            b = lk_swish16_fast(xb, ub, nbeta);
        } else {
            a = lk_swish16(xa, ua, nbeta);
            b = lk_swish16(xb, ub, nbeta);
        }
        _mm512_storeu_ps(y + i, a);
        _mm512_storeu_ps(y + i + 16, b);
    }
    for (; i < n; i += 16) {
        // Masked for the last 1..15: no byte past the end is read or written.
        __mmask16 mask = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(mask, x + i);
        v = lk_swish16(v, _mm512_mul_ps(v, nbeta_log2e), nbeta);
        _mm512_mask_storeu_ps(y + i, mask, v);
    }
}
#endif

int lk_swish_f32_isa(lk_isa isa, const float *x, float *y, size_t n, float beta) {
    if (isa > lk_kernels_isa()) return -1;
    switch (isa) {
    case LK_ISA_SCALAR:
        lk_swish_scalar(x, y, n, beta);
        return 0;
#ifdef LK_HAVE_AVX2_PATH
    case LK_ISA_AVX2_FMA:
        lk_swish_avx2(x, y, n, beta);
        return 0;
    case LK_ISA_AVX512F:
        lk_swish_avx512(x, y, n, beta);
        return 0;
#endif
    default:
        return -1;
    }
}

void lk_swish_f32(const float *x, float *y, size_t n, float beta) {
    // The best ISA is always available, so this cannot fail.
    (void)lk_swish_f32_isa(lk_kernels_isa(), x, y, n, beta);
}
