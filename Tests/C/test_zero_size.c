/* Zero-size tensors, as ONNX has them (a decoder's first step takes an empty
 * past, [1, heads, 0, head size]): made with every create call, described and
 * read back (NULL buffers allowed for no elements), run through a model as
 * inputs and returned as outputs, against numpy's concatenation computed here
 * (Tests/C/Fixtures/make_empty_past_model.py, checked with onnxruntime);
 * layers, LayerKit's own kernels, refuse them with LK_ERROR_SHAPE. */
#include <string.h>

#include "check.h"

#define EMPTY_PAST LAYERKIT_SOURCE_DIR "/Tests/C/Fixtures/empty_past.onnx"

static int message_has(lk_context *context, const char *text) {
    return strstr(lk_context_last_error(context), text) != NULL;
}

/* Whether `tensor` has `rank` dims equal to `expected` and `count` elements. */
static int has_shape(lk_context *context, const lk_tensor *tensor, const int64_t *expected, size_t rank, size_t count) {
    int64_t dims[LK_MAX_RANK];
    size_t got_rank = 0, got_count = 99;
    if (lk_tensor_shape(context, tensor, dims, LK_MAX_RANK, &got_rank) != LK_OK) return 0;
    if (lk_tensor_element_count(context, tensor, &got_count) != LK_OK) return 0;
    return got_rank == rank && memcmp(dims, expected, rank * sizeof *dims) == 0 && got_count == count;
}

static void creation(lk_context *context) {
    const int64_t empty[4] = {1, 2, 0, 3};
    lk_tensor *tensor = NULL;
    float unused[1] = {7};
    CHECK_OK(context, lk_tensor_create(context, empty, 4, NULL, &tensor));
    CHECK(tensor != NULL && has_shape(context, tensor, empty, 4, 0));
    CHECK_OK(context, lk_tensor_read(context, tensor, NULL, 0));
    CHECK_OK(context, lk_tensor_read(context, tensor, unused, 0));
    CHECK(unused[0] == 7);
    CHECK_OK(context, lk_tensor_write(context, tensor, NULL, 0));
    CHECK_OK(context, lk_tensor_read_bytes(context, tensor, NULL, 0));
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_read(context, tensor, unused, 1));
    lk_tensor_destroy(tensor);
    CHECK_OK(context, lk_tensor_create(context, empty, 4, unused, &tensor));
    CHECK(has_shape(context, tensor, empty, 4, 0));
    lk_tensor_destroy(tensor);

    /* Typed: with and without data, read back as zero bytes. */
    const int64_t none[1] = {0};
    CHECK_OK(context, lk_tensor_create_typed(context, LK_INT64, none, 1, NULL, 0, &tensor));
    CHECK(has_shape(context, tensor, none, 1, 0));
    CHECK_OK(context, lk_tensor_read_bytes(context, tensor, NULL, 0));
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_read_bytes(context, tensor, unused, 8));
    lk_tensor_destroy(tensor);
    CHECK_OK(context, lk_tensor_create_typed(context, LK_FLOAT16, empty, 4, unused, 0, &tensor));
    CHECK(has_shape(context, tensor, empty, 4, 0));
    lk_tensor_destroy(tensor);
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_create_typed(context, LK_INT64, none, 1, unused, 4, &tensor));
    CHECK(message_has(context, "byte_count is 4"));

    /* Strings: none. */
    CHECK_OK(context, lk_tensor_create_strings(context, none, 1, NULL, 0, &tensor));
    CHECK(has_shape(context, tensor, none, 1, 0));
    lk_tensor_destroy(tensor);

    /* Still refused: a negative dim, a zero dim beside an overflowing one is fine
     * (no elements) but a negative one is not. */
    const int64_t negative[4] = {1, 2, -1, 3};
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_create(context, negative, 4, NULL, &tensor));
    CHECK(message_has(context, "shape[2] is -1"));
    CHECK(tensor == NULL);

    /* A layer runs LayerKit's own kernel: no zero-size inputs. */
    lk_layer *relu = NULL;
    CHECK_OK(context, lk_layer_create(context, "Relu", NULL, NULL, 0, &relu));
    CHECK_OK(context, lk_tensor_create(context, empty, 4, NULL, &tensor));
    lk_tensor *outputs[1] = {NULL};
    size_t output_count = 9;
    const lk_tensor *inputs[1] = {tensor};
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_layer_apply(context, relu, inputs, 1, outputs, 1, &output_count, NULL));
    CHECK(message_has(context, "no elements") && output_count == 0);
    lk_tensor_destroy(tensor);
    lk_layer_destroy(relu);
}

/* Runs empty_past.onnx on a past of `length` (every value -1.5) and x = 0..5,
 * checking present = concat(past, x) on axis 2 and doubled = 2 * past. */
static void run_model(lk_context *context, lk_model *model, int64_t length) {
    const int64_t past_shape[4] = {1, 2, length, 3}, x_shape[4] = {1, 2, 1, 3};
    float past_values[2 * 4 * 3], x_values[6];
    for (int i = 0; i < 2 * 4 * 3; i++) past_values[i] = -1.5f;
    for (int i = 0; i < 6; i++) x_values[i] = (float)i;
    lk_tensor *past = NULL, *x = NULL;
    CHECK_OK(context, lk_tensor_create(context, past_shape, 4, past_values, &past));
    CHECK_OK(context, lk_tensor_create(context, x_shape, 4, x_values, &x));
    const char *names[2] = {"past", "x"};
    const lk_tensor *inputs[2] = {past, x};
    lk_tensor *outputs[2] = {NULL, NULL};
    CHECK_OK(context, lk_model_predict(context, model, names, inputs, 2, outputs, 2, NULL));
    if (outputs[0] != NULL && outputs[1] != NULL) {
        const int64_t present_shape[4] = {1, 2, length + 1, 3};
        size_t past_count = (size_t)(2 * length * 3), present_count = (size_t)(2 * (length + 1) * 3);
        CHECK(has_shape(context, outputs[0], present_shape, 4, present_count));
        CHECK(has_shape(context, outputs[1], past_shape, 4, past_count));
        float present[2 * 5 * 3], doubled[2 * 4 * 3];
        CHECK_OK(context, lk_tensor_read(context, outputs[0], present, present_count));
        CHECK_OK(context, lk_tensor_read(context, outputs[1], doubled, past_count));
        /* numpy's concatenate on axis 2 of [1, 2, L, 3] and [1, 2, 1, 3]. */
        int same = 1;
        for (int64_t head = 0; head < 2; head++) {
            for (int64_t row = 0; row <= length; row++) {
                for (int64_t column = 0; column < 3; column++) {
                    float expected = row < length ? -1.5f : x_values[head * 3 + column];
                    same &= present[(head * (length + 1) + row) * 3 + column] == expected;
                }
            }
        }
        for (size_t i = 0; i < past_count; i++) same &= doubled[i] == -3.0f;
        CHECK(same);
    }
    lk_tensor_destroy(outputs[0]);
    lk_tensor_destroy(outputs[1]);
    lk_tensor_destroy(past);
    lk_tensor_destroy(x);
}

static void models(lk_context *context) {
    lk_model *model = NULL;
    CHECK_OK(context, lk_model_load(context, EMPTY_PAST, &model));
    if (model == NULL) return;
    run_model(context, model, 0);  /* the first step: an empty past, an empty output */
    run_model(context, model, 4);
    run_model(context, model, 0);
    lk_model_destroy(model);
}

int main(void) {
    lk_context *context = check_cpu_context();
    creation(context);
    models(context);
    lk_context_destroy(context);
    lk_context *gpu = check_gpu_context();
    if (gpu != NULL) {
        models(gpu);
        lk_context_destroy(gpu);
    }
    return check_finish("test_zero_size");
}
