#ifndef LK_KERNELS_H
#define LK_KERNELS_H

// Element-wise CPU kernels for LayerKit. Each public kernel picks its
// instruction set once per process at run time (AVX2+FMA where the CPU has
// it, portable scalar C elsewhere), so the library needs no -mavx2 flag.

#include <stddef.h>

/// Instruction sets a kernel can run on.
typedef enum {
    LK_ISA_SCALAR = 0,   ///< Portable C, any CPU.
    LK_ISA_AVX2_FMA = 1, ///< x86-64 AVX2 with FMA, 8 floats per step.
    LK_ISA_AVX512F = 2,  ///< x86-64 AVX-512F, 16 floats per step.
} lk_isa;

/// The instruction set the kernels use on this CPU: the best it supports.
/// Each set in the enum implies the ones before it.
lk_isa lk_kernels_isa(void);

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

#endif
