// Host-side conversion between Float32 NCHW tensors and the texel layout of
// LayerKit's rgba16f slice images (see lk_kernels.h). F16C where the CPU has
// it; exact portable C otherwise. Both round to nearest fp16, ties to even.

#include "lk_kernels.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LK_HAVE_F16C_PATH 1
#endif

// ---- Portable conversions (bit-exact IEEE, round to nearest even) ----

static uint16_t lk_f32_to_f16(float value) {
    uint32_t x;
    memcpy(&x, &value, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t a = x & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return sign | 0x7E00u | (uint16_t)((a >> 13) & 0x3FFu); // NaN stays NaN (quiet)
    if (a >= 0x477FF000u) return sign | 0x7C00u;  // rounds past 65504: inf (inf itself included)
    if (a < 0x38800000u) {
        // fp16 subnormal or zero: quantum 2^-24. Below 2^-25 everything rounds to zero.
        if (a < 0x33000000u) return sign;
        uint32_t mantissa = (a & 0x7FFFFFu) | 0x800000u;
        uint32_t shift = 126u - (a >> 23);       // 14..24 for exponents 102..112
        uint32_t half = mantissa >> shift;
        uint32_t rest = mantissa & ((1u << shift) - 1u);
        uint32_t midpoint = 1u << (shift - 1u);
        if (rest > midpoint || (rest == midpoint && (half & 1u))) half += 1u;
        return sign | (uint16_t)half;
    }
    // Normal: rebias, round the 13 dropped bits; a carry bumps the exponent.
    uint32_t r = a + 0xFFFu + ((a >> 13) & 1u);
    return sign | (uint16_t)((r - 0x38000000u) >> 13);
}

static float lk_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1Fu;
    uint32_t mantissa = h & 0x3FFu;
    uint32_t bits;
    if (exponent == 0x1Fu) {
        bits = sign | 0x7F800000u | (mantissa << 13);
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else {
        // Subnormal: exact in fp32 as mantissa * 2^-24.
        float f = (float)mantissa * 5.9604644775390625e-08f;
        memcpy(&bits, &f, 4);
        bits |= sign;
    }
    float out;
    memcpy(&out, &bits, 4);
    return out;
}

// Texel t (of first + count) is pixel t % plane of layer t / plane; layer
// n * slices + s holds channels 4s..4s+3 of batch item n.
static void lk_pack_scalar(const float *src, uint16_t *dst, size_t channels, size_t plane,
                           size_t first, size_t count) {
    size_t slices = (channels + 3) / 4;
    for (size_t t = first; t < first + count; t++) {
        size_t layer = t / plane, pixel = t % plane;
        size_t n = layer / slices, c0 = (layer % slices) * 4;
        for (size_t lane = 0; lane < 4; lane++) {
            size_t c = c0 + lane;
            dst[t * 4 + lane] = c < channels ? lk_f32_to_f16(src[(n * channels + c) * plane + pixel]) : 0;
        }
    }
}

static void lk_unpack_scalar(const uint16_t *src, float *dst, size_t channels, size_t plane,
                             size_t first, size_t count) {
    size_t slices = (channels + 3) / 4;
    for (size_t t = first; t < first + count; t++) {
        size_t layer = t / plane, pixel = t % plane;
        size_t n = layer / slices, c0 = (layer % slices) * 4;
        for (size_t lane = 0; lane < 4 && c0 + lane < channels; lane++) {
            dst[(n * channels + c0 + lane) * plane + pixel] = lk_f16_to_f32(src[t * 4 + lane]);
        }
    }
}

#ifdef LK_HAVE_F16C_PATH
#define LK_F16C __attribute__((target("avx2,f16c")))

// One layer's pixels [p, end): 8 at a time through F16C, the rest scalar.
// `planes[lane]` is channel c0 + lane's plane, or NULL past the last channel.
LK_F16C static void lk_pack_run_f16c(const float *const planes[4], uint16_t *texels, size_t p, size_t end) {
    const __m256 zero = _mm256_setzero_ps();
    for (; p + 8 <= end; p += 8) {
        __m128i h[4];
        for (int lane = 0; lane < 4; lane++) {
            __m256 v = planes[lane] ? _mm256_loadu_ps(planes[lane] + p) : zero;
            h[lane] = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        }
        // 4x8 transpose of 16-bit lanes: four channels of a pixel side by side.
        __m128i a01lo = _mm_unpacklo_epi16(h[0], h[1]), a01hi = _mm_unpackhi_epi16(h[0], h[1]);
        __m128i a23lo = _mm_unpacklo_epi16(h[2], h[3]), a23hi = _mm_unpackhi_epi16(h[2], h[3]);
        __m128i *out = (__m128i *)(texels + p * 4);
        _mm_storeu_si128(out + 0, _mm_unpacklo_epi32(a01lo, a23lo));
        _mm_storeu_si128(out + 1, _mm_unpackhi_epi32(a01lo, a23lo));
        _mm_storeu_si128(out + 2, _mm_unpacklo_epi32(a01hi, a23hi));
        _mm_storeu_si128(out + 3, _mm_unpackhi_epi32(a01hi, a23hi));
    }
    for (; p < end; p++) {
        for (int lane = 0; lane < 4; lane++) {
            texels[p * 4 + lane] = planes[lane] ? lk_f32_to_f16(planes[lane][p]) : 0;
        }
    }
}

LK_F16C static void lk_unpack_run_f16c(const uint16_t *texels, float *const planes[4], size_t p, size_t end) {
    for (; p + 8 <= end; p += 8) {
        const __m128i *in = (const __m128i *)(texels + p * 4);
        __m128i t0 = _mm_loadu_si128(in + 0), t1 = _mm_loadu_si128(in + 1);
        __m128i t2 = _mm_loadu_si128(in + 2), t3 = _mm_loadu_si128(in + 3);
        // Inverse transpose: lane k of pixels p..p+7 into one vector each.
        __m128i u0 = _mm_unpacklo_epi16(t0, t1), u1 = _mm_unpackhi_epi16(t0, t1);
        __m128i u2 = _mm_unpacklo_epi16(t2, t3), u3 = _mm_unpackhi_epi16(t2, t3);
        __m128i w0 = _mm_unpacklo_epi16(u0, u1), w1 = _mm_unpackhi_epi16(u0, u1);
        __m128i v0 = _mm_unpacklo_epi16(u2, u3), v1 = _mm_unpackhi_epi16(u2, u3);
        __m128i h[4] = {_mm_unpacklo_epi64(w0, v0), _mm_unpackhi_epi64(w0, v0),
                        _mm_unpacklo_epi64(w1, v1), _mm_unpackhi_epi64(w1, v1)};
        for (int lane = 0; lane < 4; lane++) {
            if (planes[lane]) _mm256_storeu_ps(planes[lane] + p, _mm256_cvtph_ps(h[lane]));
        }
    }
    for (; p < end; p++) {
        for (int lane = 0; lane < 4; lane++) {
            if (planes[lane]) planes[lane][p] = lk_f16_to_f32(texels[p * 4 + lane]);
        }
    }
}

// Walks texels [first, first + count) layer by layer, calling `run` on each
// layer's pixel range with that layer's four channel planes.
#define LK_FOR_EACH_LAYER_RUN(tensor, body)                                                  \
    size_t slices = (channels + 3) / 4;                                                      \
    for (size_t t = first; t < first + count;) {                                             \
        size_t layer = t / plane, p = t % plane;                                             \
        size_t end = plane < p + (first + count - t) ? plane : p + (first + count - t);      \
        size_t n = layer / slices, c0 = (layer % slices) * 4;                                \
        for (int lane = 0; lane < 4; lane++) {                                               \
            planes[lane] = c0 + lane < channels ? (tensor) + (n * channels + c0 + lane) * plane : NULL; \
        }                                                                                    \
        body;                                                                                \
        t += end - p;                                                                        \
    }

static void lk_pack_f16c(const float *src, uint16_t *dst, size_t channels, size_t plane,
                         size_t first, size_t count) {
    const float *planes[4];
    uint16_t *texels;
    LK_FOR_EACH_LAYER_RUN(src, (texels = dst + layer * plane * 4, lk_pack_run_f16c(planes, texels, p, end)))
}

static void lk_unpack_f16c(const uint16_t *src, float *dst, size_t channels, size_t plane,
                           size_t first, size_t count) {
    float *planes[4];
    const uint16_t *texels;
    LK_FOR_EACH_LAYER_RUN(dst, (texels = src + layer * plane * 4, lk_unpack_run_f16c(texels, planes, p, end)))
}

static int lk_has_f16c(void) {
    static _Atomic int cached = -1;
    int has = atomic_load_explicit(&cached, memory_order_relaxed);
    if (has < 0) {
        __builtin_cpu_init();
        has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
        atomic_store_explicit(&cached, has, memory_order_relaxed);
    }
    return has;
}
#endif

uint16_t lk_float_to_half(float value) { return lk_f32_to_f16(value); }

float lk_half_to_float(uint16_t bits) { return lk_f16_to_f32(bits); }

// Both directions choose alike: F16C where the CPU has it and the caller
// did not ask for the portable path (which tests use as the reference).
#ifdef LK_HAVE_F16C_PATH
#define LK_SLICES_DISPATCH(KERNEL, ...) \
    do { \
        if (!portable && lk_has_f16c()) KERNEL##_f16c(__VA_ARGS__); \
        else KERNEL##_scalar(__VA_ARGS__); \
    } while (0)
#else
#define LK_SLICES_DISPATCH(KERNEL, ...) \
    do { (void)portable; KERNEL##_scalar(__VA_ARGS__); } while (0)
#endif

void lk_pack_slices_f16(const float *src, uint16_t *dst, size_t channels, size_t plane,
                        size_t first, size_t count, int portable) {
    LK_SLICES_DISPATCH(lk_pack, src, dst, channels, plane, first, count);
}

void lk_unpack_slices_f16(const uint16_t *src, float *dst, size_t channels, size_t plane,
                          size_t first, size_t count, int portable) {
    LK_SLICES_DISPATCH(lk_unpack, src, dst, channels, plane, first, count);
}
