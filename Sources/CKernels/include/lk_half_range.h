#ifndef LK_HALF_RANGE_H
#define LK_HALF_RANGE_H

// What fp16 storage does to a float32 array: the counts and extremes
// `HalfRange(checking:)` (LayerKit/GPU/HalfRange.swift) judges a tensor by.

#include <stddef.h>
#include <stdint.h>

#include "lk_kernels.h"

/// fp16's largest finite value, and the magnitude up to which it keeps
/// every integer and beyond which no fraction (HalfRange.largest,
/// HalfRange.largestExactInteger in Swift).
#define LK_HALF_LARGEST 65504.0f
#define LK_HALF_LARGEST_EXACT_INTEGER 2048.0f

/// The result of one pass over an array. Infinities and NaNs are skipped
/// (fp16 keeps them). `lowest` and `highest` are order keys of the finite
/// elements (lk_half_scan_float turns one back into its float): UINT32_MAX
/// and 0 when there is none.
typedef struct {
    uint32_t lowest;
    uint32_t highest;
    /// The bits of the largest finite magnitude (0 when none).
    uint32_t largest_magnitude;
    /// Finite elements beyond fp16's largest value, LK_HALF_LARGEST.
    uint64_t overflows;
    /// Finite elements fp16 does not hold exactly: Float(Float16(x)) != x.
    uint64_t changed;
    /// Of those, the ones of magnitude above LK_HALF_LARGEST_EXACT_INTEGER
    /// and at most LK_HALF_LARGEST, where fp16 keeps no fraction.
    uint64_t changed_beyond_integers;
} lk_half_scan;

/// Scans x[0..<n] (the AVX2 loop where the CPU has it: the same result).
void lk_half_scan_f32(const float *x, size_t n, lk_half_scan *result);

/// The same on a chosen path (LK_ISA_SCALAR: portable C), for tests.
void lk_half_scan_f32_isa(lk_isa isa, const float *x, size_t n, lk_half_scan *result);

/// The float whose order key (lk_half_scan's `lowest`, `highest`) is `key`.
float lk_half_scan_float(uint32_t key);

#endif
