#ifndef LK_GLSLANG_H
#define LK_GLSLANG_H

#include <stddef.h>
#include <stdint.h>

/// Result of compiling one GLSL compute shader to SPIR-V.
/// `words` is NULL on failure; `log` holds glslang's messages (may be NULL).
/// Free both with `lk_glsl_result_free`.
typedef struct lk_glsl_result {
    uint32_t *words;
    size_t word_count;
    char *log;
} lk_glsl_result;

/// Compiles GLSL compute source for Vulkan 1.1 / SPIR-V 1.3.
/// Initializes glslang once per process (thread-safe).
lk_glsl_result lk_glsl_compile_compute(const char *source);

void lk_glsl_result_free(lk_glsl_result *result);

#endif
