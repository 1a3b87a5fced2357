// Calls SLEEF's AVX2 and AVX-512 functions over arrays.
//
// Why assembly: clang picks the calling convention for __m256/__m512
// arguments from the translation unit's flags, not from a function's
// target attribute, so C compiled without -mavx (as SwiftPM builds CKernels:
// no unsafeFlags) passes them on the stack while SLEEF expects them in
// ymm0/ymm1 (zmm0/zmm1) and returns in ymm0 (zmm0). Seen here: pow(-2, 3)
// came back as 0.25. These loops load the registers themselves, so the C
// side only passes pointers (see lk_vector_internal.h for the contract).
//
// void lk_sleef_map_ymm(const void *fn, const float *x, float *y, size_t blocks)
// void lk_sleef_map_zmm(...)                        same, 16 floats a block
// void lk_sleef_map2_ymm(const void *fn, const float *a, size_t a_step,
//                        const float *b, size_t b_step, float *y, size_t blocks)
// void lk_sleef_map2_zmm(...)                       same, 16 floats a block
// Steps are in bytes between blocks (0 repeats one block: a broadcast scalar).
#if defined(__x86_64__) && defined(__ELF__)
        .text

// Entry and exit of both loops: the callee-saved registers they share
// (each saves more between LK_ENTRY and LK_EXIT, restored in reverse).
.macro LK_ENTRY name
        .globl  \name
        .type   \name, @function
        .p2align 4
\name:
        pushq   %rbx
        pushq   %r12
        pushq   %r13
        pushq   %r14
.endm

.macro LK_EXIT name
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        ret
        .size   \name, .-\name
.endm

// One map loop: \reg is ymm or zmm, \bytes the size of one block (32, 64).
// The ymm and zmm versions differ only in those two, so one macro writes both.
.macro LK_SLEEF_MAP name, reg, bytes
        LK_ENTRY \name
        pushq   %rbp            // 5 pushes: rsp is 16-byte aligned at each call
        movq    %rdi, %rbx      // fn
        movq    %rsi, %r12      // x
        movq    %rdx, %r13      // y
        movq    %rcx, %r14      // blocks
        testq   %r14, %r14
        jz      2f
1:      vmovups (%r12), %\reg\()0
        call    *%rbx
        vmovups %\reg\()0, (%r13)
        addq    $\bytes, %r12
        addq    $\bytes, %r13
        decq    %r14
        jnz     1b
2:      vzeroupper
        popq    %rbp
        LK_EXIT \name
.endm

// The two-argument loop, the same way (a in reg0, b in reg1).
.macro LK_SLEEF_MAP2 name, reg, bytes
        LK_ENTRY \name
        pushq   %r15
        pushq   %rbp
        subq    $8, %rsp        // 6 pushes + 8: aligned at each call
        movq    %rdi, %rbx      // fn
        movq    %rsi, %r12      // a
        movq    %rdx, %rbp      // a_step
        movq    %rcx, %r13      // b
        movq    %r8, %r15       // b_step
        movq    %r9, %r14       // y
        movq    64(%rsp), %rax  // blocks (7th argument)
        movq    %rax, (%rsp)
        testq   %rax, %rax
        jz      2f
1:      vmovups (%r12), %\reg\()0
        vmovups (%r13), %\reg\()1
        call    *%rbx
        vmovups %\reg\()0, (%r14)
        addq    %rbp, %r12
        addq    %r15, %r13
        addq    $\bytes, %r14
        decq    (%rsp)
        jnz     1b
2:      vzeroupper
        addq    $8, %rsp
        popq    %rbp
        popq    %r15
        LK_EXIT \name
.endm

        LK_SLEEF_MAP  lk_sleef_map_ymm,  ymm, 32
        LK_SLEEF_MAP  lk_sleef_map_zmm,  zmm, 64
        LK_SLEEF_MAP2 lk_sleef_map2_ymm, ymm, 32
        LK_SLEEF_MAP2 lk_sleef_map2_zmm, zmm, 64
#endif
        .section .note.GNU-stack,"",@progbits
