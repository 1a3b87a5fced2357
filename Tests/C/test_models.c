/* Models: Models/article.onnx (the demo's model, with a layerkit.Swish node)
 * loaded and run through the C API against onnxruntime's outputs (the
 * article_demo fixture, Scripts/generate_model_fixtures.py), its inputs and
 * outputs described, its errors, and 4 threads predicting on one model. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "npy.h"

#define MODEL LAYERKIT_SOURCE_DIR "/Models/article.onnx"
#define FIXTURES LAYERKIT_SOURCE_DIR "/Tests/LayerKitTests/Fixtures/models/"
#define THREADS 4
#define RUNS 5

static const int64_t input_shape[4] = {1, 3, 64, 64};

/* Runs the model on `input` and copies its one output ([1, 10]) to `out`. */
static int predict(lk_context *context, lk_model *model, lk_tensor *input, float out[10]) {
    const char *names[] = {"image"};
    const lk_tensor *inputs[] = {input};
    lk_tensor *outputs[1] = {NULL};
    lk_status status = lk_model_predict(context, model, names, inputs, 1, outputs, 1, NULL);
    if (status != LK_OK) return status;
    int64_t shape[LK_MAX_RANK];
    size_t rank = 0;
    status = lk_tensor_shape(context, outputs[0], shape, LK_MAX_RANK, &rank);
    if (status == LK_OK && (rank != 2 || shape[0] != 1 || shape[1] != 10)) status = LK_ERROR_SHAPE;
    if (status == LK_OK) status = lk_tensor_read(context, outputs[0], out, 10);
    lk_tensor_destroy(outputs[0]);
    return status;
}

/* max |actual - expected| / max(floor, |expected|) over the 10 outputs. */
static double worst_error(const float *actual, const float *expected, double floor) {
    double worst = 0;
    for (int i = 0; i < 10; i++) {
        double error = fabs((double)actual[i] - (double)expected[i]) / fmax(floor, fabs((double)expected[i]));
        if (error > worst) worst = error;
    }
    return worst;
}

static void describes_its_inputs_and_outputs(lk_context *context, lk_model *model) {
    size_t count = 0;
    CHECK_OK(context, lk_model_input_count(context, model, &count));
    CHECK(count == 1);
    CHECK_OK(context, lk_model_output_count(context, model, &count));
    CHECK(count == 1);
    char name[64];
    size_t length = 0;
    CHECK_OK(context, lk_model_input_name(context, model, 0, name, sizeof name, &length));
    CHECK(strcmp(name, "image") == 0 && length == 5);
    CHECK_OK(context, lk_model_output_name(context, model, 0, name, sizeof name, &length));
    CHECK(strcmp(name, "probabilities") == 0 && length == 13);
    CHECK_STATUS(context, LK_ERROR_BUFFER_TOO_SMALL, lk_model_input_name(context, model, 0, name, 3, &length));
    CHECK(strcmp(name, "im") == 0 && length == 5);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_model_input_name(context, model, 1, name, sizeof name, NULL));
    CHECK(strstr(lk_context_last_error(context), "out of range") != NULL);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_model_output_name(context, model, (size_t)-1, name, sizeof name, NULL));

    int64_t shape[LK_MAX_RANK];
    size_t rank = 0;
    CHECK_OK(context, lk_model_input_shape(context, model, 0, shape, LK_MAX_RANK, &rank));
    CHECK(rank == 4 && memcmp(shape, input_shape, sizeof input_shape) == 0);
    CHECK_OK(context, lk_model_input_shape(context, model, 0, NULL, 0, &rank));
    CHECK(rank == 4);
    CHECK_STATUS(context, LK_ERROR_BUFFER_TOO_SMALL, lk_model_input_shape(context, model, 0, shape, 2, &rank));
    CHECK(rank == 4);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_model_input_count(context, model, NULL));
}

/* The model's errors: each a status and a message, nothing made. */
static void refuses_bad_calls(lk_context *context, lk_model *model, lk_tensor *input) {
    lk_model *missing = (lk_model *)1;
    CHECK_STATUS(context, LK_ERROR_FILE, lk_model_load(context, LAYERKIT_SOURCE_DIR "/Models/no-such-model.onnx", &missing));
    CHECK(missing == NULL);
    CHECK(strstr(lk_context_last_error(context), "no-such-model.onnx") != NULL);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_model_load(context, NULL, &missing));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_model_load(context, MODEL, NULL));
    CHECK_STATUS(context, LK_ERROR_INVALID_MODEL, lk_model_load(context, FIXTURES "custom_missing.onnx", &missing));
    CHECK(missing == NULL);

    const lk_tensor *inputs[] = {input, input};
    lk_tensor *outputs[2] = {NULL, NULL};
    const char *wrong[] = {"imag"};
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_model_predict(context, model, wrong, inputs, 1, outputs, 1, NULL));
    CHECK(strstr(lk_context_last_error(context), "no input 'imag'") != NULL);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_model_predict(context, model, NULL, NULL, 0, outputs, 1, NULL));
    CHECK(strstr(lk_context_last_error(context), "'image' is missing") != NULL);
    const char *twice[] = {"image", "image"};
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_model_predict(context, model, twice, inputs, 2, outputs, 2, NULL));
    const char *names[] = {"image"};
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_model_predict(context, model, names, NULL, 1, outputs, 1, NULL));
    CHECK_STATUS(context, LK_ERROR_BUFFER_TOO_SMALL, lk_model_predict(context, model, names, inputs, 1, outputs, 0, NULL));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_model_predict(context, model, names, inputs, 1, NULL, 1, NULL));
    /* A handle of the wrong kind, as the input and as the profiler. */
    const lk_tensor *not_a_tensor[] = {(const lk_tensor *)model};
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_model_predict(context, model, names, not_a_tensor, 1, outputs, 1, NULL));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_model_predict(context, model, names, inputs, 1, outputs, 1, (lk_profiler *)model));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_model_predict(context, (lk_model *)input, names, inputs, 1, outputs, 1, NULL));
    CHECK(outputs[0] == NULL && outputs[1] == NULL);

    lk_tensor *small = NULL;
    const int64_t shape[4] = {1, 3, 32, 32};
    CHECK_OK(context, lk_tensor_create(context, shape, 4, NULL, &small));
    const lk_tensor *small_inputs[] = {small};
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_model_predict(context, model, names, small_inputs, 1, outputs, 1, NULL));
    CHECK(strstr(lk_context_last_error(context), "image") != NULL);
    CHECK(outputs[0] == NULL);
    lk_tensor_destroy(small);
}

/* A scikit-learn classifier exported with ZipMap (Fixtures/zipmap): its
 * probabilities are a sequence of maps, which no tensor handle holds; the
 * C API refuses the run naming the output and its form, nothing made. */
static void refuses_a_sequence_of_maps(lk_context *context) {
    lk_model *model = NULL;
    CHECK_OK(context, lk_model_load(context, LAYERKIT_SOURCE_DIR "/Tests/LayerKitTests/Fixtures/zipmap/"
                                    "logistic_regression_iris/model.onnx", &model));
    if (!model) return;
    const int64_t shape[2] = {1, 4};
    const float features[4] = {5.1f, 3.5f, 1.4f, 0.2f};
    lk_tensor *x = NULL;
    CHECK_OK(context, lk_tensor_create(context, shape, 2, features, &x));
    const char *names[] = {"X"};
    const lk_tensor *inputs[] = {x};
    lk_tensor *outputs[2] = {NULL, NULL};
    CHECK_STATUS(context, LK_ERROR_UNSUPPORTED, lk_model_predict(context, model, names, inputs, 1, outputs, 2, NULL));
    CHECK(strstr(lk_context_last_error(context),
                 "output 'output_probability' is a sequence(map(int64, tensor(float32)))") != NULL);
    CHECK(outputs[0] == NULL && outputs[1] == NULL);
    lk_tensor_destroy(x);
    lk_model_destroy(model);
}

struct worker {
    lk_context *context;
    lk_model *model;
    lk_tensor *input;
    float results[RUNS][10];
    int status;
};

static void *predict_repeatedly(void *argument) {
    struct worker *worker = argument;
    for (int run = 0; run < RUNS && worker->status == LK_OK; run++) {
        worker->status = predict(worker->context, worker->model, worker->input, worker->results[run]);
    }
    return NULL;
}

/* THREADS threads, each RUNS predicts on the same model and input, agree
 * bit for bit with a serial run. */
static void threads_agree(lk_context *context, lk_model *model, lk_tensor *input, const float serial[10]) {
    struct worker workers[THREADS];
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (struct worker){.context = context, .model = model, .input = input, .status = LK_OK};
        CHECK(pthread_create(&threads[i], NULL, predict_repeatedly, &workers[i]) == 0);
    }
    int differing = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        CHECK(workers[i].status == LK_OK);
        for (int run = 0; run < RUNS; run++) differing += memcmp(workers[i].results[run], serial, 10 * sizeof(float)) != 0;
    }
    CHECK(differing == 0);
    printf("%d threads x %d predicts on one model: %d of %d differ from the serial run\n", THREADS, RUNS, differing,
           THREADS * RUNS);
}

int main(void) {
    size_t input_count = 0, expected_count = 0;
    float *pixels = npy_read_floats(FIXTURES "article_demo.input.npy", &input_count);
    float *expected = npy_read_floats(FIXTURES "article_demo.expected.npy", &expected_count);
    CHECK(pixels && expected && input_count == 3 * 64 * 64 && expected_count == 10);
    if (!pixels || !expected) return check_finish("test_models");

    char error[512];
    lk_context *context = NULL;
    CHECK(lk_context_create(LK_COMPUTE_CPU, 2, &context, error, sizeof error) == LK_OK);
    lk_model *model = NULL;
    CHECK_OK(context, lk_model_load(context, MODEL, &model));
    lk_tensor *input = NULL;
    CHECK_OK(context, lk_tensor_create(context, input_shape, 4, pixels, &input));

    if (model && input) {
        describes_its_inputs_and_outputs(context, model);
        float serial[10];
        CHECK_OK(context, predict(context, model, input, serial));
        double cpu_error = worst_error(serial, expected, 1e-6);
        printf("CPU vs onnxruntime: max relative error %.3g (bound 1e-4)\n", cpu_error);
        CHECK(cpu_error <= 1e-4);
        refuses_bad_calls(context, model, input);
        refuses_a_sequence_of_maps(context);
        threads_agree(context, model, input, serial);
    }
    lk_tensor_destroy(input);
    lk_model_destroy(model);
    lk_model_destroy(NULL);
    lk_context_destroy(context);

    /* The GPU stores tensors in fp16: held to |gpu - ref| / max(1, |ref|) <= 2e-3,
     * as the Swift suite's gpuMatchesOnnxRuntime is. */
    lk_context *gpu = check_gpu_context();
    if (gpu) {
        lk_model *gpu_model = NULL;
        lk_tensor *gpu_input = NULL;
        CHECK_OK(gpu, lk_model_load(gpu, MODEL, &gpu_model));
        CHECK_OK(gpu, lk_tensor_create(gpu, input_shape, 4, pixels, &gpu_input));
        float result[10];
        if (gpu_model && gpu_input && predict(gpu, gpu_model, gpu_input, result) == LK_OK) {
            double gpu_error = worst_error(result, expected, 1);
            printf("GPU vs onnxruntime: max |gpu - ref| / max(1, |ref|) %.3g (bound 2e-3)\n", gpu_error);
            CHECK(gpu_error <= 2e-3);
        } else {
            CHECK(!"the GPU model ran");
            fprintf(stderr, "%s\n", lk_context_last_error(gpu));
        }
        lk_tensor_destroy(gpu_input);
        lk_model_destroy(gpu_model);
        lk_context_destroy(gpu);
    }
    free(pixels);
    free(expected);
    return check_finish("test_models");
}
