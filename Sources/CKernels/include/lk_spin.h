#ifndef LK_SPIN_H
#define LK_SPIN_H

// A CPU hint for spin-wait loops (x86 PAUSE, ARM YIELD): lets the sibling
// hyperthread run and saves power while a thread polls a shared counter.
// Header-only so Swift callers inline it.
static inline void lk_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}

#endif
