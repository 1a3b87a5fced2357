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

        .globl  lk_sleef_map_ymm
        .type   lk_sleef_map_ymm, @function
        .p2align 4
lk_sleef_map_ymm:
        pushq   %rbx
        pushq   %r12
        pushq   %r13
        pushq   %r14
        pushq   %rbp            // 5 pushes: rsp is 16-byte aligned at each call
        movq    %rdi, %rbx
        movq    %rsi, %r12
        movq    %rdx, %r13
        movq    %rcx, %r14
        testq   %r14, %r14
        jz      2f
1:      vmovups (%r12), %ymm0
        call    *%rbx
        vmovups %ymm0, (%r13)
        addq    $32, %r12
        addq    $32, %r13
        decq    %r14
        jnz     1b
2:      vzeroupper
        popq    %rbp
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        ret
        .size   lk_sleef_map_ymm, .-lk_sleef_map_ymm

        .globl  lk_sleef_map_zmm
        .type   lk_sleef_map_zmm, @function
        .p2align 4
lk_sleef_map_zmm:
        pushq   %rbx
        pushq   %r12
        pushq   %r13
        pushq   %r14
        pushq   %rbp
        movq    %rdi, %rbx
        movq    %rsi, %r12
        movq    %rdx, %r13
        movq    %rcx, %r14
        testq   %r14, %r14
        jz      2f
1:      vmovups (%r12), %zmm0
        call    *%rbx
        vmovups %zmm0, (%r13)
        addq    $64, %r12
        addq    $64, %r13
        decq    %r14
        jnz     1b
2:      vzeroupper
        popq    %rbp
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        ret
        .size   lk_sleef_map_zmm, .-lk_sleef_map_zmm

        .globl  lk_sleef_map2_ymm
        .type   lk_sleef_map2_ymm, @function
        .p2align 4
lk_sleef_map2_ymm:
        pushq   %rbx
        pushq   %r12
        pushq   %r13
        pushq   %r14
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
1:      vmovups (%r12), %ymm0
        vmovups (%r13), %ymm1
        call    *%rbx
        vmovups %ymm0, (%r14)
        addq    %rbp, %r12
        addq    %r15, %r13
        addq    $32, %r14
        decq    (%rsp)
        jnz     1b
2:      vzeroupper
        addq    $8, %rsp
        popq    %rbp
        popq    %r15
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        ret
        .size   lk_sleef_map2_ymm, .-lk_sleef_map2_ymm

        .globl  lk_sleef_map2_zmm
        .type   lk_sleef_map2_zmm, @function
        .p2align 4
lk_sleef_map2_zmm:
        pushq   %rbx
        pushq   %r12
        pushq   %r13
        pushq   %r14
        pushq   %r15
        pushq   %rbp
        subq    $8, %rsp
        movq    %rdi, %rbx
        movq    %rsi, %r12
        movq    %rdx, %rbp
        movq    %rcx, %r13
        movq    %r8, %r15
        movq    %r9, %r14
        movq    64(%rsp), %rax
        movq    %rax, (%rsp)
        testq   %rax, %rax
        jz      2f
1:      vmovups (%r12), %zmm0
        vmovups (%r13), %zmm1
        call    *%rbx
        vmovups %zmm0, (%r14)
        addq    %rbp, %r12
        addq    %r15, %r13
        addq    $64, %r14
        decq    (%rsp)
        jnz     1b
2:      vzeroupper
        addq    $8, %rsp
        popq    %rbp
        popq    %r15
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        ret
        .size   lk_sleef_map2_zmm, .-lk_sleef_map2_zmm
#endif
        .section .note.GNU-stack,"",@progbits
