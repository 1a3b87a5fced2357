#ifndef LK_HALF_RANGE_H
#define LK_HALF_RANGE_H

// What fp16 storage does to a float32 array: the counts and extremes
// `HalfRange(checking:)` (LayerKit/GPU/HalfRange.swift) judges a tensor by.

#include <stddef.h>
#include <stdint.h>

#include "lk_kernels.h"

/// The result of one pass over an array. Infinities and NaNs are skipped
/// (fp16 keeps them). `lowest` and `highest` are order keys of the finite
/// elements (lk_half_scan_float turns one back into its float): UINT32_MAX
/// and 0 when there is none.
typedef struct {
    uint32_t lowest;
    uint32_t highest;
    /// The bits of the largest finite magnitude (0 when none).
    uint32_t largest_magnitude;
    /// Finite elements beyond fp16's largest value, 65504.
    uint64_t overflows;
    /// Finite elements fp16 does not hold exactly: Float(Float16(x)) != x.
    uint64_t changed;
    /// Of those, the ones of magnitude above 2048 and at most 65504, where
    /// fp16 keeps no fraction.
    uint64_t changed_beyond_integers;
} lk_half_scan;

/// Scans x[0..<n] (the AVX2 loop where the CPU has it: the same result).
void lk_half_scan_f32(const float *x, size_t n, lk_half_scan *result);

/// The same on a chosen path (LK_ISA_SCALAR: portable C), for tests.
void lk_half_scan_f32_isa(lk_isa isa, const float *x, size_t n, lk_half_scan *result);

/// The float whose order key (lk_half_scan's `lowest`, `highest`) is `key`.
float lk_half_scan_float(uint32_t key);

#endif
