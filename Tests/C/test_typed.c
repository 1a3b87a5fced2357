/* Typed tensors: element types and their sizes, tensors of every kind made
 * and read back bit for bit, models with int64, bool, float16, uint8, int32
 * and float64 inputs and outputs against onnxruntime's outputs (the
 * typed fixtures, Scripts/generate_typed_fixtures.py) on the CPU and
 * the GPU, and every type error a status naming the types, nothing
 * converted. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "npy.h"

#define TYPED LAYERKIT_SOURCE_DIR "/Tests/LayerKitTests/Fixtures/typed/"

/* Whether the context's last message contains `text`. */
static int message_has(lk_context *context, const char *text) {
    return strstr(lk_context_last_error(context), text) != NULL;
}

/* The element type of a numpy dtype string ("<i8"), 0 for others. */
static lk_element_type type_of(const char *descr) {
    static const struct {
        const char *descr;
        lk_element_type type;
    } table[] = {{"<f4", LK_FLOAT32}, {"|u1", LK_UINT8},   {"|i1", LK_INT8},    {"<u2", LK_UINT16},
                 {"<i2", LK_INT16},   {"<i4", LK_INT32},   {"<i8", LK_INT64},   {"|b1", LK_BOOL},
                 {"<f2", LK_FLOAT16}, {"<f8", LK_FLOAT64}, {"<u4", LK_UINT32},  {"<u8", LK_UINT64}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(descr, table[i].descr) == 0) return table[i].type;
    }
    return 0;
}

/* Element i of `a` and of `b` (of `type`, `width` bytes each) are the same
 * value: the same bytes, or zeros of either sign for the float types. */
static int same_element(lk_element_type type, const unsigned char *a, const unsigned char *b, size_t width) {
    if (memcmp(a, b, width) == 0) return 1;
    if (type != LK_FLOAT16 && type != LK_FLOAT32 && type != LK_FLOAT64) return 0;
    for (size_t byte = 0; byte < width; byte++) {
        unsigned char mask = byte == width - 1 ? 0x7F : 0xFF; /* the sign bit is the last byte's top bit */
        if ((a[byte] & mask) != 0 || (b[byte] & mask) != 0) return 0;
    }
    return 1;
}

static void print_element(const char *label, lk_element_type type, const unsigned char *bytes, size_t width) {
    fprintf(stderr, "  %s ", label);
    if (type == LK_INT64) {
        int64_t value;
        memcpy(&value, bytes, 8);
        fprintf(stderr, "%lld (", (long long)value);
    }
    for (size_t byte = width; byte-- > 0;) fprintf(stderr, "%02x", bytes[byte]);
    fprintf(stderr, type == LK_INT64 ? ")\n" : "\n");
}

static void element_types(void) {
    CHECK(lk_element_type_size(LK_FLOAT32) == 4);
    CHECK(lk_element_type_size(LK_UINT8) == 1);
    CHECK(lk_element_type_size(LK_INT64) == 8);
    CHECK(lk_element_type_size(LK_BOOL) == 1);
    CHECK(lk_element_type_size(LK_FLOAT16) == 2);
    CHECK(lk_element_type_size(LK_FLOAT64) == 8);
    CHECK(lk_element_type_size(LK_UINT64) == 8);
    CHECK(lk_element_type_size(LK_COMPLEX128) == 16);
    CHECK(lk_element_type_size(LK_BFLOAT16) == 2);
    CHECK(lk_element_type_size(LK_FLOAT8E4M3FN) == 1);
    CHECK(lk_element_type_size(LK_INT4) == 1);
    CHECK(lk_element_type_size(LK_FLOAT6E3M2) == 1);
    CHECK(lk_element_type_size(LK_STRING) == 0);
    CHECK(lk_element_type_size(0) == 0);
    CHECK(lk_element_type_size(29) == 0);
    CHECK(lk_element_type_size(-1) == 0);
    CHECK(strcmp(lk_status_string(LK_ERROR_TYPE), "LK_ERROR_TYPE") == 0);
}

/* Tensors of several types made and read back bit for bit. */
static void round_trips(lk_context *context) {
    const int64_t shape[2] = {2, 2};
    const int64_t values[4] = {(INT64_C(1) << 40) + 1, -((INT64_C(1) << 53) + 1), INT64_MAX, INT64_MIN};
    lk_tensor *tensor = NULL;
    CHECK_OK(context, lk_tensor_create_typed(context, LK_INT64, shape, 2, values, sizeof values, &tensor));
    lk_element_type type = 0;
    CHECK_OK(context, lk_tensor_element_type(context, tensor, &type));
    CHECK(type == LK_INT64);
    size_t count = 0, rank = 0;
    int64_t dims[LK_MAX_RANK];
    CHECK_OK(context, lk_tensor_element_count(context, tensor, &count));
    CHECK_OK(context, lk_tensor_shape(context, tensor, dims, LK_MAX_RANK, &rank));
    CHECK(count == 4 && rank == 2 && dims[0] == 2 && dims[1] == 2);
    int64_t back[4] = {0};
    CHECK_OK(context, lk_tensor_read_bytes(context, tensor, back, sizeof back));
    CHECK(memcmp(values, back, sizeof values) == 0);
    lk_tensor_destroy(tensor);

    /* float16 bit patterns (1, -2, 65504, NaN), bools, uint64 past INT64_MAX. */
    const uint16_t halves[4] = {0x3C00, 0xC000, 0x7BFF, 0x7E00};
    uint16_t halves_back[4];
    CHECK_OK(context, lk_tensor_create_typed(context, LK_FLOAT16, shape, 2, halves, sizeof halves, &tensor));
    CHECK_OK(context, lk_tensor_read_bytes(context, tensor, halves_back, sizeof halves_back));
    CHECK(memcmp(halves, halves_back, sizeof halves) == 0);
    lk_tensor_destroy(tensor);
    const unsigned char bools[4] = {0, 1, 1, 0};
    unsigned char bools_back[4];
    CHECK_OK(context, lk_tensor_create_typed(context, LK_BOOL, shape, 2, bools, sizeof bools, &tensor));
    CHECK_OK(context, lk_tensor_element_type(context, tensor, &type));
    CHECK(type == LK_BOOL);
    CHECK_OK(context, lk_tensor_read_bytes(context, tensor, bools_back, sizeof bools_back));
    CHECK(memcmp(bools, bools_back, sizeof bools) == 0);
    lk_tensor_destroy(tensor);
    const int64_t three[1] = {3};
    const uint64_t unsigned_values[3] = {UINT64_MAX, (UINT64_C(1) << 63) + 1, 0};
    uint64_t unsigned_back[3];
    CHECK_OK(context, lk_tensor_create_typed(context, LK_UINT64, three, 1, unsigned_values, sizeof unsigned_values, &tensor));
    CHECK_OK(context, lk_tensor_read_bytes(context, tensor, unsigned_back, sizeof unsigned_back));
    CHECK(memcmp(unsigned_values, unsigned_back, sizeof unsigned_values) == 0);
    lk_tensor_destroy(tensor);

    /* NULL data: zeros of the type. */
    int32_t ints[3] = {-1, -1, -1};
    CHECK_OK(context, lk_tensor_create_typed(context, LK_INT32, three, 1, NULL, 0, &tensor));
    CHECK_OK(context, lk_tensor_read_bytes(context, tensor, ints, sizeof ints));
    CHECK(ints[0] == 0 && ints[1] == 0 && ints[2] == 0);
    lk_tensor_destroy(tensor);

    /* A float32 tensor made either way is the same: both read and write as floats and as bytes. */
    const float floats[3] = {1.5f, -0.0f, 3e38f};
    float floats_back[3];
    CHECK_OK(context, lk_tensor_create_typed(context, LK_FLOAT32, three, 1, floats, sizeof floats, &tensor));
    CHECK_OK(context, lk_tensor_element_type(context, tensor, &type));
    CHECK(type == LK_FLOAT32);
    CHECK_OK(context, lk_tensor_read(context, tensor, floats_back, 3));
    CHECK(memcmp(floats, floats_back, sizeof floats) == 0);
    CHECK_OK(context, lk_tensor_write(context, tensor, floats, 3));
    lk_tensor_destroy(tensor);
    CHECK_OK(context, lk_tensor_create(context, three, 1, floats, &tensor));
    type = 0;
    CHECK_OK(context, lk_tensor_element_type(context, tensor, &type));
    CHECK(type == LK_FLOAT32);
    memset(floats_back, 0, sizeof floats_back);
    CHECK_OK(context, lk_tensor_read_bytes(context, tensor, floats_back, sizeof floats_back));
    CHECK(memcmp(floats, floats_back, sizeof floats) == 0);
    lk_tensor_destroy(tensor);
}

/* Every misuse of a typed tensor: a status and a message naming the problem. */
static void tensor_errors(lk_context *context) {
    const int64_t three[1] = {3};
    const int64_t values[3] = {(INT64_C(1) << 40) + 1, 2, 3};
    lk_tensor *tensor = (lk_tensor *)1;

    /* byte_count that is not elements x width. */
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_create_typed(context, LK_INT64, three, 1, values, 23, &tensor));
    CHECK(tensor == NULL);
    CHECK(message_has(context, "byte_count is 23") && message_has(context, "int64") &&
          message_has(context, "24 bytes"));
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_create_typed(context, LK_INT64, three, 1, values, 12, &tensor));
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_create_typed(context, LK_INT64, three, 1, values, (size_t)-1, &tensor));
    /* Element types that are not, or are not for this API. */
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_create_typed(context, 0, three, 1, NULL, 0, &tensor));
    CHECK(message_has(context, "element type 0 is not an lk_element_type"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_create_typed(context, 99, three, 1, NULL, 0, &tensor));
    CHECK_STATUS(context, LK_ERROR_UNSUPPORTED, lk_tensor_create_typed(context, LK_STRING, three, 1, NULL, 0, &tensor));
    CHECK(message_has(context, "string"));
    /* Bytes that are no element of their type. */
    const unsigned char not_bool[3] = {0, 2, 1};
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_tensor_create_typed(context, LK_BOOL, three, 1, not_bool, sizeof not_bool, &tensor));
    CHECK(message_has(context, "element 1") && message_has(context, "0 or 1"));
    const unsigned char sign_extended[3] = {0x03, 0xFD, 0x0D}; /* int4 3, then -3 wrongly, then -3 */
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_tensor_create_typed(context, LK_INT4, three, 1, sign_extended, sizeof sign_extended, &tensor));
    CHECK(message_has(context, "low 4 bits"));
    CHECK(tensor == NULL);
    CHECK_OK(context, lk_tensor_create_typed(context, LK_INT4, three, 1, (const unsigned char[]){3, 0x0D, 0}, 3, &tensor));
    lk_tensor_destroy(tensor);
    /* NULL arguments, ranks and dims as lk_tensor_create checks them. */
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_create_typed(context, LK_INT64, three, 1, NULL, 24, &tensor));
    CHECK(message_has(context, "data is NULL"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_create_typed(context, LK_INT64, three, 1, values, 24, NULL));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_create_typed(context, LK_INT64, NULL, 1, values, 24, &tensor));
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_create_typed(context, LK_INT64, three, 0, values, 24, &tensor));
    const int64_t negative[1] = {-1};
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_create_typed(context, LK_INT64, negative, 1, values, 0, &tensor));
    /* Within the count limit but past this machine's memory: an error, not an allocation. */
    const int64_t too_big[2] = {INT64_C(1) << 30, INT64_C(1) << 20};
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_create_typed(context, LK_INT64, too_big, 2, NULL, 0, &tensor));
    CHECK(message_has(context, "MiB"));
    CHECK(tensor == NULL);

    CHECK_OK(context, lk_tensor_create_typed(context, LK_INT64, three, 1, values, sizeof values, &tensor));
    /* Reads of the wrong size. */
    int64_t back[4];
    CHECK_STATUS(context, LK_ERROR_BUFFER_TOO_SMALL, lk_tensor_read_bytes(context, tensor, back, 16));
    CHECK(message_has(context, "byte_count is 16") && message_has(context, "24 bytes"));
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_read_bytes(context, tensor, back, 32));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_read_bytes(context, tensor, NULL, 24));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_element_type(context, tensor, NULL));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_read_bytes(context, NULL, back, 24));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_element_type(context, NULL, &(lk_element_type){0}));
    CHECK(message_has(context, "the tensor is NULL"));
    /* The float functions on an int64 tensor: no conversion. */
    float floats[3];
    CHECK_STATUS(context, LK_ERROR_TYPE, lk_tensor_read(context, tensor, floats, 3));
    CHECK(message_has(context, "int64") && message_has(context, "float32") && message_has(context, "lk_tensor_read_bytes"));
    CHECK_STATUS(context, LK_ERROR_TYPE, lk_tensor_write(context, tensor, floats, 3));
    CHECK(message_has(context, "int64"));
    lk_layer *relu = NULL;
    CHECK_OK(context, lk_layer_create(context, "Relu", NULL, NULL, 0, &relu));
    lk_tensor *output = NULL;
    size_t made = 0;
    CHECK_STATUS(context, LK_ERROR_TYPE,
                 lk_layer_apply(context, relu, (const lk_tensor *const *)&tensor, 1, &output, 1, &made, NULL));
    CHECK(message_has(context, "inputs[0] is int64") && message_has(context, "layers take float32"));
    CHECK(output == NULL);
    lk_layer_destroy(relu);
    /* Still intact. */
    CHECK_OK(context, lk_tensor_read_bytes(context, tensor, back, 24));
    CHECK(memcmp(back, values, sizeof values) == 0);
    lk_tensor_destroy(tensor);
}

/* Runs fixture `name` on `context`: every input from input_<i>.npy in its own
 * type, every output compared with output_<i>.npy (type, shape, values).
 * Returns the number of outputs that differ, -1 when it could not run. */
static int run_case(lk_context *context, const char *name) {
    char path[512];
    snprintf(path, sizeof path, TYPED "%s/model.onnx", name);
    lk_model *model = NULL;
    CHECK_OK(context, lk_model_load(context, path, &model));
    if (!model) return -1;
    size_t input_count = 0, output_count = 0;
    CHECK_OK(context, lk_model_input_count(context, model, &input_count));
    CHECK_OK(context, lk_model_output_count(context, model, &output_count));
    char names[4][64];
    const char *name_pointers[4];
    lk_tensor *inputs[4] = {NULL};
    lk_tensor *outputs[4] = {NULL};
    int ready = input_count <= 4 && output_count <= 4, differing = 0;
    for (size_t i = 0; ready && i < input_count; i++) {
        struct npy_array array;
        snprintf(path, sizeof path, TYPED "%s/input_%zu.npy", name, i);
        if (npy_read(path, &array) != 0) {
            ready = 0;
            break;
        }
        lk_element_type declared = 0;
        CHECK_OK(context, lk_model_input_type(context, model, i, &declared));
        CHECK(declared == type_of(array.descr));
        CHECK_OK(context, lk_model_input_name(context, model, i, names[i], sizeof names[i], NULL));
        name_pointers[i] = names[i];
        CHECK_OK(context, lk_tensor_create_typed(context, type_of(array.descr), array.shape, array.rank, array.data,
                                                 array.byte_count, &inputs[i]));
        ready &= inputs[i] != NULL;
        npy_free(&array);
    }
    if (ready) {
        CHECK_OK(context, lk_model_predict(context, model, name_pointers, (const lk_tensor *const *)inputs,
                                           input_count, outputs, 4, NULL));
    }
    for (size_t i = 0; ready && i < output_count; i++) {
        struct npy_array expected;
        snprintf(path, sizeof path, TYPED "%s/output_%zu.npy", name, i);
        if (!outputs[i] || npy_read(path, &expected) != 0) {
            differing++;
            continue;
        }
        lk_element_type type = 0, declared = 0;
        CHECK_OK(context, lk_tensor_element_type(context, outputs[i], &type));
        CHECK_OK(context, lk_model_output_type(context, model, i, &declared));
        CHECK(type == type_of(expected.descr) && declared == type);
        int64_t shape[LK_MAX_RANK];
        size_t rank = 0;
        CHECK_OK(context, lk_tensor_shape(context, outputs[i], shape, LK_MAX_RANK, &rank));
        CHECK(rank == expected.rank && memcmp(shape, expected.shape, rank * sizeof shape[0]) == 0);
        unsigned char *actual = malloc(expected.byte_count);
        size_t width = lk_element_type_size(type);
        int same = actual && type == type_of(expected.descr) &&
                   lk_tensor_read_bytes(context, outputs[i], actual, expected.byte_count) == LK_OK;
        for (size_t e = 0; same && e < expected.count; e++) {
            const unsigned char *want = (const unsigned char *)expected.data + e * width;
            if (!same_element(type, actual + e * width, want, width)) {
                fprintf(stderr, "%s: output %zu element %zu differs from onnxruntime's:\n", name, i, e);
                print_element("LayerKit   ", type, actual + e * width, width);
                print_element("onnxruntime", type, want, width);
                same = 0;
            }
        }
        differing += !same;
        free(actual);
        npy_free(&expected);
    }
    for (size_t i = 0; i < 4; i++) {
        lk_tensor_destroy(inputs[i]);
        lk_tensor_destroy(outputs[i]);
    }
    lk_model_destroy(model);
    return ready ? differing : -1;
}

/* What a model refuses: inputs of another type than it declares, each a
 * status naming both types, no output made. */
static void model_type_errors(lk_context *context) {
    lk_model *model = NULL;
    CHECK_OK(context, lk_model_load(context, TYPED "int64_add/model.onnx", &model));
    if (!model) return;
    lk_element_type type = 0;
    CHECK_OK(context, lk_model_input_type(context, model, 1, &type));
    CHECK(type == LK_INT64);
    CHECK_OK(context, lk_model_output_type(context, model, 0, &type));
    CHECK(type == LK_INT64);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_model_input_type(context, model, 2, &type));
    CHECK(message_has(context, "out of range"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_model_output_type(context, model, 1, &type));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_model_output_type(context, model, 0, NULL));

    const int64_t shape[1] = {4};
    const int64_t wide[4] = {1, 2, 3, 4};
    const int32_t narrow[4] = {1, 2, 3, 4};
    const float floats[4] = {1, 2, 3, 4};
    lk_tensor *a = NULL, *b32 = NULL, *bf = NULL;
    CHECK_OK(context, lk_tensor_create_typed(context, LK_INT64, shape, 1, wide, sizeof wide, &a));
    CHECK_OK(context, lk_tensor_create_typed(context, LK_INT32, shape, 1, narrow, sizeof narrow, &b32));
    CHECK_OK(context, lk_tensor_create(context, shape, 1, floats, &bf));
    const char *names[2] = {"a", "b"};
    lk_tensor *outputs[1] = {NULL};
    const lk_tensor *int32_for_int64[2] = {a, b32};
    CHECK_STATUS(context, LK_ERROR_TYPE, lk_model_predict(context, model, names, int32_for_int64, 2, outputs, 1, NULL));
    CHECK(message_has(context, "input 'b' is int32; the model takes int64"));
    CHECK(outputs[0] == NULL);
    const lk_tensor *float_for_int64[2] = {a, bf};
    CHECK_STATUS(context, LK_ERROR_TYPE, lk_model_predict(context, model, names, float_for_int64, 2, outputs, 1, NULL));
    CHECK(message_has(context, "input 'b' is float32; the model takes int64"));
    CHECK(outputs[0] == NULL);

    /* An int64 output is read as bytes, never as floats. */
    const lk_tensor *right[2] = {a, a};
    CHECK_OK(context, lk_model_predict(context, model, names, right, 2, outputs, 1, NULL));
    float as_floats[4];
    int64_t sums[4] = {0};
    CHECK_STATUS(context, LK_ERROR_TYPE, lk_tensor_read(context, outputs[0], as_floats, 4));
    CHECK(message_has(context, "the tensor is int64"));
    CHECK_OK(context, lk_tensor_read_bytes(context, outputs[0], sums, sizeof sums));
    CHECK(sums[0] == 2 && sums[1] == 4 && sums[2] == 6 && sums[3] == 8);
    lk_tensor_destroy(outputs[0]);
    lk_tensor_destroy(a);
    lk_tensor_destroy(b32);
    lk_model_destroy(model);

    /* A float32 tensor for a float16 input. */
    CHECK_OK(context, lk_model_load(context, TYPED "float16_relu/model.onnx", &model));
    if (!model) {
        lk_tensor_destroy(bf);
        return;
    }
    CHECK_OK(context, lk_model_input_type(context, model, 0, &type));
    CHECK(type == LK_FLOAT16);
    const int64_t five[1] = {5};
    lk_tensor *x = NULL;
    CHECK_OK(context, lk_tensor_create(context, five, 1, NULL, &x));
    const char *x_name[1] = {"x"};
    CHECK_STATUS(context, LK_ERROR_TYPE,
                 lk_model_predict(context, model, x_name, (const lk_tensor *const *)&x, 1, outputs, 1, NULL));
    CHECK(message_has(context, "input 'x' is float32; the model takes float16"));
    lk_tensor_destroy(x);
    lk_tensor_destroy(bf);
    lk_model_destroy(model);
}

static const char *const cases[] = {"int64_add",    "int64_identity", "int64_equal", "less_bool",
                                    "float16_relu", "gather_index",   "mixed_types", "float64_sum"};

static void run_cases(lk_context *context, const char *backend) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int differing = run_case(context, cases[i]);
        printf("%s on the %s: %s\n", cases[i], backend,
               differing == 0 ? "every output is onnxruntime's" : differing < 0 ? "did not run" : "DIFFERS");
        CHECK(differing == 0);
    }
}

int main(void) {
    element_types();
    lk_context *context = check_cpu_context();
    round_trips(context);
    tensor_errors(context);
    model_type_errors(context);
    run_cases(context, "CPU");
    lk_context_destroy(context);

    lk_context *gpu = check_gpu_context();
    if (gpu) {
        run_cases(gpu, "GPU");
        lk_context_destroy(gpu);
    }
    return check_finish("test_typed");
}
