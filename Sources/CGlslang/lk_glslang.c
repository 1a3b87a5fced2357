// A single entry point over glslang's C interface, so Swift never juggles
// glslang's object lifetimes and the process-wide initialization happens once.
#include "lk_glslang.h"

#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static void init_glslang(void) { glslang_initialize_process(); }

static char *copy_log(const char *a, const char *b) {
    size_t la = a ? strlen(a) : 0, lb = b ? strlen(b) : 0;
    char *out = malloc(la + lb + 1);
    if (!out) return NULL;
    if (la) memcpy(out, a, la);
    if (lb) memcpy(out + la, b, lb);
    out[la + lb] = 0;
    return out;
}

lk_glsl_result lk_glsl_compile_compute(const char *source) {
    pthread_once(&init_once, init_glslang);
    lk_glsl_result result = {0};
    glslang_input_t input = {
        .language = GLSLANG_SOURCE_GLSL,
        .stage = GLSLANG_STAGE_COMPUTE,
        .client = GLSLANG_CLIENT_VULKAN,
        .client_version = GLSLANG_TARGET_VULKAN_1_1,
        .target_language = GLSLANG_TARGET_SPV,
        .target_language_version = GLSLANG_TARGET_SPV_1_3,
        .code = source,
        .default_version = 450,
        .default_profile = GLSLANG_NO_PROFILE,
        .messages = GLSLANG_MSG_DEFAULT_BIT | GLSLANG_MSG_SPV_RULES_BIT | GLSLANG_MSG_VULKAN_RULES_BIT,
        .resource = glslang_default_resource(),
    };
    glslang_shader_t *shader = glslang_shader_create(&input);
    if (!shader) return result;
    if (!glslang_shader_preprocess(shader, &input) || !glslang_shader_parse(shader, &input)) {
        result.log = copy_log(glslang_shader_get_info_log(shader), glslang_shader_get_info_debug_log(shader));
        glslang_shader_delete(shader);
        return result;
    }
    glslang_program_t *program = glslang_program_create();
    glslang_program_add_shader(program, shader);
    if (!glslang_program_link(program, input.messages)) {
        result.log = copy_log(glslang_program_get_info_log(program), glslang_program_get_info_debug_log(program));
    } else {
        glslang_program_SPIRV_generate(program, GLSLANG_STAGE_COMPUTE);
        size_t n = glslang_program_SPIRV_get_size(program);
        result.words = malloc(n * sizeof(uint32_t));
        if (result.words) {
            glslang_program_SPIRV_get(program, result.words);
            result.word_count = n;
        }
        const char *msg = glslang_program_SPIRV_get_messages(program);
        if (msg && *msg) result.log = copy_log(msg, NULL);
    }
    glslang_program_delete(program);
    glslang_shader_delete(shader);
    return result;
}

void lk_glsl_result_free(lk_glsl_result *result) {
    free(result->words);
    free(result->log);
    result->words = NULL;
    result->log = NULL;
    result->word_count = 0;
}
