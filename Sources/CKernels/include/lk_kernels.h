#ifndef LK_KERNELS_H
#define LK_KERNELS_H

// Element-wise CPU kernels for LayerKit. Each public kernel picks its
// instruction set once per process at run time (AVX2+FMA where the CPU has
// it, portable scalar C elsewhere), so the library needs no -mavx2 flag.

#include <stddef.h>
#include <stdint.h>

#include "lk_spin.h"

/// Instruction sets a kernel can run on.
typedef enum {
    LK_ISA_SCALAR = 0,   ///< Portable C, any CPU.
    LK_ISA_AVX2_FMA = 1, ///< x86-64 AVX2 with FMA, 8 floats per step.
    LK_ISA_AVX512F = 2,  ///< x86-64 AVX-512F, 16 floats per step.
} lk_isa;

/// The instruction set the kernels use on this CPU: the best it supports.
/// Each set in the enum implies the ones before it.
lk_isa lk_kernels_isa(void);

#include "lk_half_range.h" // after lk_isa: its _isa form takes one
#include "lk_norm.h"       // likewise

/// A short name for `isa`: "scalar", "avx2+fma" or "avx512f".
const char *lk_isa_name(lk_isa isa);

/// Swish: y[i] = x[i] / (1 + exp(-beta * x[i])) for i in [0, n).
///
/// Within about 1e-6 relative of the exact value for finite x whose result is
/// a normal float; results with |y| < 1e-37 may be flushed toward zero.
/// Limits: swish(+inf) = +inf, swish(-inf) = -0 (for beta > 0), NaN stays
/// NaN. `beta` must be finite. `x` and `y` may be the same buffer (in place),
/// but must not partially overlap.
void lk_swish_f32(const float *x, float *y, size_t n, float beta);

/// lk_swish_f32 forced onto `isa`, for tests and benchmarks. Returns 0, or
/// -1 without touching `y` when this CPU lacks `isa` (isa > lk_kernels_isa()).
int lk_swish_f32_isa(lk_isa isa, const float *x, float *y, size_t n, float beta);

/// Float32 NCHW tensor -> rgba16f slice-image texels, rounded to nearest
/// fp16 (ties to even; overflow to inf, NaN stays NaN, subnormals exact).
///
/// `dst` is the image's texels tightly packed: layer by layer, row by row,
/// four uint16 fp16 lanes a texel; layer n * slices + s holds channels
/// 4s..4s+3 of batch item n, with slices = (channels + 3) / 4, and lanes past
/// the last channel are written as +0. `plane` is height * width. Converts
/// texels [first, first + count) only, so threads can split the work; the
/// ranges of different calls must not overlap. `portable` nonzero forces the
/// plain C path (for tests); otherwise F16C is used where the CPU has it.
void lk_pack_slices_f16(const float *src, uint16_t *dst, size_t channels, size_t plane,
                        size_t first, size_t count, int portable);

/// The inverse of lk_pack_slices_f16: texels [first, first + count) of `src`
/// into the Float32 NCHW tensor `dst` (exact; padding lanes are not read).
void lk_unpack_slices_f16(const uint16_t *src, float *dst, size_t channels, size_t plane,
                          size_t first, size_t count, int portable);

/// One value to fp16 bits, round to nearest even (the portable path).
uint16_t lk_float_to_half(float value);

/// fp16 bits to Float32, exact (the portable path).
float lk_half_to_float(uint16_t bits);

#endif
