#include "lk_kernels.h"

#include <stdatomic.h>

// Which instruction set this CPU gives the kernels; asked once per process.
static lk_isa lk_detect_isa(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init(); // safe to repeat; needed if called before constructors ran
    // The runtime also checks that the OS saves the wider registers.
    int avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (avx2_fma && __builtin_cpu_supports("avx512f")) {
        return LK_ISA_AVX512F;
    }
    if (avx2_fma) {
        return LK_ISA_AVX2_FMA;
    }
#endif
    return LK_ISA_SCALAR;
}

lk_isa lk_kernels_isa(void) {
    // Racing first calls all store the same value, so relaxed order is enough.
    static _Atomic int cached = -1;
    int isa = atomic_load_explicit(&cached, memory_order_relaxed);
    if (isa < 0) {
        isa = (int)lk_detect_isa();
        atomic_store_explicit(&cached, isa, memory_order_relaxed);
    }
    return (lk_isa)isa;
}

const char *lk_isa_name(lk_isa isa) {
    switch (isa) {
    case LK_ISA_AVX512F: return "avx512f";
    case LK_ISA_AVX2_FMA: return "avx2+fma";
    case LK_ISA_SCALAR: return "scalar";
    }
    return "unknown";
}
