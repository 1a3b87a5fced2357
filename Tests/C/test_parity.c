/* Parity and devices: Swish passes lk_parity on the GPU (its fp16-rounded
 * input through the GPU and the CPU), bad arguments are errors, and the
 * Vulkan devices are listed with their fields (on lavapipe, at least one). */
#include <math.h>
#include <string.h>

#include "check.h"

static int message_has(lk_context *context, const char *text) {
    return strstr(lk_context_last_error(context), text) != NULL;
}

/* A tensor of x in [-8, 8], not fp16 values: lk_parity rounds them. */
static lk_tensor *make_input(lk_context *context) {
    static const int64_t shape[4] = {1, 6, 32, 32};
    static float data[6 * 32 * 32];
    for (int i = 0; i < 6 * 32 * 32; i++) data[i] = -8.0f + 16.0f * (float)i / (6 * 32 * 32 - 1);
    lk_tensor *tensor = NULL;
    CHECK_OK(context, lk_tensor_create(context, shape, 4, data, &tensor));
    return tensor;
}

static void check_devices(lk_context *context, int expect_device) {
    int32_t count = -1;
    CHECK_OK(context, lk_device_count(context, &count));
    printf("%d Vulkan device(s)\n", count);
    if (expect_device) CHECK(count >= 1);
    int chosen_total = 0;
    for (int32_t i = 0; i < count; i++) {
        char name[256] = "";
        size_t length = 0;
        int32_t kind = -1, usable = -1, chosen = -1;
        CHECK_OK(context, lk_device_info(context, i, name, sizeof name, &length, &kind, &usable, &chosen));
        printf("  [%d] %s: kind %d, usable %d, chosen %d\n", i, name, kind, usable, chosen);
        CHECK(length > 0 && length == strlen(name));
        CHECK(kind >= LK_DEVICE_OTHER && kind <= LK_DEVICE_CPU);
        CHECK(usable == 0 || usable == 1);
        CHECK(chosen == 0 || chosen == 1);
        CHECK(!chosen || usable);
        chosen_total += chosen;
        /* lavapipe reports itself as llvmpipe, a CPU device. */
        if (strstr(name, "llvmpipe")) CHECK(kind == LK_DEVICE_CPU);

        /* Every field may be skipped; a short name buffer is cut and reported. */
        CHECK_OK(context, lk_device_info(context, i, NULL, 0, NULL, NULL, NULL, NULL));
        size_t needed = 0;
        CHECK_OK(context, lk_device_info(context, i, NULL, 0, &needed, NULL, NULL, NULL));
        CHECK(needed == length);
        char shortened[4];
        CHECK_STATUS(context, LK_ERROR_BUFFER_TOO_SMALL,
                     lk_device_info(context, i, shortened, sizeof shortened, &needed, &kind, NULL, NULL));
        CHECK(needed == length && strlen(shortened) <= 3 && strncmp(shortened, name, strlen(shortened)) == 0);
    }
    if (expect_device) CHECK(chosen_total == 1);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_device_info(context, count, NULL, 0, NULL, NULL, NULL, NULL));
    CHECK(message_has(context, "device index"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_device_info(context, -1, NULL, 0, NULL, NULL, NULL, NULL));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_device_count(context, NULL));
    CHECK(lk_device_count(NULL, &count) == LK_ERROR_INVALID_ARGUMENT);
}

static void check_parity(lk_context *gpu) {
    lk_layer *layer = NULL;
    const char *beta[1] = {"beta"};
    const double value[1] = {0.75};
    CHECK_OK(gpu, lk_layer_create(gpu, "Swish", beta, value, 1, &layer));
    lk_tensor *input = make_input(gpu);
    int32_t passed = -1;
    double max_abs = -1, max_rel = -1;
    CHECK_OK(gpu, lk_parity(gpu, layer, input, 1e-3, &passed, &max_abs, &max_rel));
    printf("parity Swish beta 0.75, %d elements in [-8, 8]: passed %d, max abs error %.3e, max rel error %.3e\n",
           6 * 32 * 32, passed, max_abs, max_rel);
    CHECK(passed == 1);
    CHECK(max_abs >= 0 && max_abs <= 1e-2 && max_rel >= 0 && max_rel <= 1e-3);
    CHECK_OK(gpu, lk_parity(gpu, layer, input, 1e-3, NULL, NULL, NULL));
    /* A tolerance of 0 fails: the GPU stores fp16 results. */
    CHECK_OK(gpu, lk_parity(gpu, layer, input, 0, &passed, NULL, NULL));
    CHECK(passed == 0);

    CHECK_STATUS(gpu, LK_ERROR_INVALID_ARGUMENT, lk_parity(gpu, layer, input, NAN, &passed, NULL, NULL));
    CHECK(message_has(gpu, "tolerance"));
    CHECK_STATUS(gpu, LK_ERROR_INVALID_ARGUMENT, lk_parity(gpu, layer, input, -1, &passed, NULL, NULL));
    CHECK_STATUS(gpu, LK_ERROR_INVALID_ARGUMENT, lk_parity(gpu, NULL, input, 1e-3, &passed, NULL, NULL));
    CHECK(message_has(gpu, "the layer is NULL"));
    CHECK_STATUS(gpu, LK_ERROR_INVALID_ARGUMENT, lk_parity(gpu, layer, NULL, 1e-3, &passed, NULL, NULL));
    CHECK(message_has(gpu, "the input is NULL"));
    CHECK_STATUS(gpu, LK_ERROR_INVALID_ARGUMENT,
                 lk_parity(gpu, layer, (const lk_tensor *)layer, 1e-3, &passed, NULL, NULL));
    /* Rank 5 cannot be a GPU image: both sides would run on the CPU. */
    const int64_t rank5[5] = {1, 2, 2, 2, 2};
    lk_tensor *deep = NULL;
    CHECK_OK(gpu, lk_tensor_create(gpu, rank5, 5, NULL, &deep));
    CHECK_STATUS(gpu, LK_ERROR_SHAPE, lk_parity(gpu, layer, deep, 1e-3, &passed, NULL, NULL));
    CHECK(message_has(gpu, "rank 1 to 4"));
    lk_tensor_destroy(deep);
    lk_tensor_destroy(input);
    lk_layer_destroy(layer);
}

int main(void) {
    lk_context *cpu = NULL;
    char error[512];
    if (lk_context_create(LK_COMPUTE_CPU, 0, &cpu, error, sizeof error) != LK_OK) {
        fprintf(stderr, "lk_context_create: %s\n", error);
        return 1;
    }
    /* Without a GPU context parity is refused with its reason. */
    lk_layer *layer = NULL;
    CHECK_OK(cpu, lk_layer_create(cpu, "Swish", NULL, NULL, 0, &layer));
    lk_tensor *input = make_input(cpu);
    int32_t passed = -1;
    CHECK_STATUS(cpu, LK_ERROR_GPU_UNAVAILABLE, lk_parity(cpu, layer, input, 1e-3, &passed, NULL, NULL));
    CHECK(message_has(cpu, "needs a context with a GPU"));
    CHECK(passed == -1);
    lk_tensor_destroy(input);
    lk_layer_destroy(layer);

    lk_context *gpu = check_gpu_context();
    check_devices(cpu, gpu != NULL);
    if (gpu) {
        check_parity(gpu);
        lk_context_destroy(gpu);
    }
    lk_context_destroy(cpu);
    return check_finish("test_parity");
}
