/* String tensors (LK_STRING): made from UTF-8 strings and read back one by
 * one, the errors of both calls, and a model of a tensor(string) input:
 * scikit-learn's LabelEncoder exported by skl2onnx
 * (Scripts/generate_ml_string_fixtures.py), against scikit-learn's codes. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "npy.h"

#define ML_STRINGS LAYERKIT_SOURCE_DIR "/Tests/LayerKitTests/Fixtures/ml-strings/"

static int message_has(lk_context *context, const char *text) {
    return strstr(lk_context_last_error(context), text) != NULL;
}

static void round_trip(lk_context *context) {
    const int64_t shape[2] = {2, 2};
    const char *const words[4] = {"apple", "kiwi", "", "\xc3\xbc" "ber"}; /* "über" */
    lk_tensor *tensor = NULL;
    CHECK_OK(context, lk_tensor_create_strings(context, shape, 2, words, 4, &tensor));
    if (!tensor) return;
    lk_element_type type = 0;
    CHECK_OK(context, lk_tensor_element_type(context, tensor, &type));
    CHECK(type == LK_STRING);
    for (size_t i = 0; i < 4; i++) {
        char buffer[16];
        size_t length = 0;
        CHECK_OK(context, lk_tensor_read_string(context, tensor, i, buffer, sizeof buffer, &length));
        CHECK(strcmp(buffer, words[i]) == 0 && length == strlen(words[i]));
    }
    /* A short buffer: cut, with the full length. */
    char small[3];
    size_t length = 0;
    CHECK_STATUS(context, LK_ERROR_BUFFER_TOO_SMALL, lk_tensor_read_string(context, tensor, 0, small, sizeof small, &length));
    CHECK(length == 5 && strcmp(small, "ap") == 0);
    /* Past the end, and bytes of a string tensor. */
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_read_string(context, tensor, 4, small, sizeof small, &length));
    unsigned char bytes[16];
    CHECK_STATUS(context, LK_ERROR_UNSUPPORTED, lk_tensor_read_bytes(context, tensor, bytes, sizeof bytes));
    CHECK(message_has(context, "lk_tensor_read_string"));
    lk_tensor_destroy(tensor);
}

static void errors(lk_context *context) {
    const int64_t shape[1] = {3};
    const char *const two[2] = {"a", "b"};
    lk_tensor *tensor = (lk_tensor *)1;
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_create_strings(context, shape, 1, two, 2, &tensor));
    CHECK(tensor == NULL && message_has(context, "holds 3 strings"));
    const char *const missing[3] = {"a", NULL, "c"};
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_create_strings(context, shape, 1, missing, 3, &tensor));
    CHECK(message_has(context, "string 1 is NULL"));
    const char *const bad[3] = {"a", "\xff", "c"};
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_create_strings(context, shape, 1, bad, 3, &tensor));
    CHECK(message_has(context, "UTF-8"));
    /* A float32 tensor holds no strings. */
    CHECK_OK(context, lk_tensor_create(context, shape, 1, NULL, &tensor));
    char buffer[8];
    CHECK_STATUS(context, LK_ERROR_TYPE, lk_tensor_read_string(context, tensor, 0, buffer, sizeof buffer, NULL));
    lk_tensor_destroy(tensor);
}

/* Writes code point `code` as UTF-8 at `out`; returns the bytes written. */
static size_t utf8(uint32_t code, char *out) {
    if (code < 0x80) {
        out[0] = (char)code;
        return 1;
    }
    if (code < 0x800) {
        out[0] = (char)(0xC0 | code >> 6);
        out[1] = (char)(0x80 | (code & 0x3F));
        return 2;
    }
    if (code < 0x10000) {
        out[0] = (char)(0xE0 | code >> 12);
        out[1] = (char)(0x80 | (code >> 6 & 0x3F));
        out[2] = (char)(0x80 | (code & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | code >> 18);
    out[1] = (char)(0x80 | (code >> 12 & 0x3F));
    out[2] = (char)(0x80 | (code >> 6 & 0x3F));
    out[3] = (char)(0x80 | (code & 0x3F));
    return 4;
}

/* The LabelEncoder's codes for x.npy's strings ('<U' n: n UTF-32 code points each, NUL-padded). */
static void label_encoder(lk_context *context) {
    struct npy_array x, expected;
    if (npy_read(ML_STRINGS "label_encoder/x.npy", &x) != 0) {
        CHECK(0);
        return;
    }
    if (npy_read(ML_STRINGS "label_encoder/sklearn_variable.npy", &expected) != 0) {
        npy_free(&x);
        CHECK(0);
        return;
    }
    size_t characters = x.byte_count / x.count / 4;
    size_t stride = 4 * characters + 1;
    char *text = calloc(x.count, stride);
    const char **strings = calloc(x.count, sizeof *strings);
    const uint32_t *points = x.data;
    for (size_t i = 0; i < x.count; i++) {
        char *out = text + i * stride;
        for (size_t c = 0; c < characters && points[i * characters + c] != 0; c++) {
            out += utf8(points[i * characters + c], out);
        }
        strings[i] = text + i * stride;
    }
    lk_model *model = NULL;
    lk_tensor *input = NULL, *outputs[1] = {NULL};
    CHECK_OK(context, lk_model_load(context, ML_STRINGS "label_encoder/model.onnx", &model));
    CHECK_OK(context, lk_tensor_create_strings(context, x.shape, x.rank, strings, x.count, &input));
    if (model && input) {
        const char *names[1] = {"X"};
        CHECK_OK(context, lk_model_predict(context, model, names, (const lk_tensor *const *)&input, 1, outputs, 1, NULL));
        int64_t codes[64] = {0};
        CHECK(expected.count <= 64 && expected.byte_count == expected.count * sizeof(int64_t));
        CHECK_OK(context, lk_tensor_read_bytes(context, outputs[0], codes, expected.byte_count));
        CHECK(memcmp(codes, expected.data, expected.byte_count) == 0);
        printf("label_encoder: %zu strings encoded as scikit-learn does\n", x.count);
    }
    lk_tensor_destroy(outputs[0]);
    lk_tensor_destroy(input);
    lk_model_destroy(model);
    free(strings);
    free(text);
    npy_free(&x);
    npy_free(&expected);
}

int main(void) {
    lk_context *context = check_cpu_context();
    round_trip(context);
    errors(context);
    label_encoder(context);
    lk_context_destroy(context);
    return check_finish("test_strings");
}
