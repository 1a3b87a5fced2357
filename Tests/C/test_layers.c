/* Layers: Swish with a beta parameter and with per-channel beta weights, a
 * catalog op (Elu), and a formula with a scalar and two weights, each checked
 * against float64 math over x in [-8, 8] (CPU: max abs error <= 1e-6; GPU:
 * the parity rule, |gpu - exact| <= 1e-3 * max(1, |exact|)); errors; the
 * weight names lk_layer_weight_name lists; and 4
 * threads applying one layer at once on one context, bit for bit a serial run. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

/* x = -8 + k/64 for k = 0...1024 in each of 3 channels: fp16 values, so the
 * GPU, which stores fp16, reads the very x the float64 reference uses. */
#define CHANNELS 3
#define STEPS 1025
#define COUNT (CHANNELS * STEPS)
static const int64_t shape[4] = {1, CHANNELS, 25, 41};

static float input_values[COUNT];
static const double swish_betas[CHANNELS] = {0.5, 1.0, 1.5};
static const double formula_p[CHANNELS] = {0.25, -0.5, 0.625};
static const double formula_q[CHANNELS] = {0.5, -1.0, 0.125};

static double x_at(int i) { return -8.0 + (double)(i % STEPS) / 64.0; }
static int channel_of(int i) { return i / STEPS; }

static double swish(double x, double beta) { return x / (1.0 + exp(-beta * x)); }

/* The float64 value each layer should give for element i. */
typedef double (*reference_fn)(int i);
static double swish_param(int i) { return swish(x_at(i), 0.75); }
static double swish_weights(int i) { return swish(x_at(i), swish_betas[channel_of(i)]); }
static double elu(int i) { return x_at(i) > 0 ? x_at(i) : 0.5 * expm1(x_at(i)); }
static double formula(int i) {
    return 1.25 * tanh(x_at(i)) + formula_p[channel_of(i)] * x_at(i) + formula_q[channel_of(i)];
}

/* Runs `layer` on the test input; returns a new output tensor or NULL. */
static lk_tensor *apply(lk_context *context, lk_layer *layer, lk_tensor *input) {
    const lk_tensor *inputs[1] = {input};
    lk_tensor *outputs[2] = {NULL, NULL};
    size_t made = 0;
    CHECK_OK(context, lk_layer_apply(context, layer, inputs, 1, outputs, 2, &made, NULL));
    CHECK(made == 1 && outputs[1] == NULL);
    return made == 1 ? outputs[0] : NULL;
}

/* Applies `layer` and checks it against `reference`: on a CPU context the
 * max abs error is at most 1e-6; on a GPU context every element is within the
 * parity rule. Prints the errors. */
static void check_layer(lk_context *context, int gpu, const char *name, lk_layer *layer, reference_fn reference) {
    lk_tensor *input = NULL;
    CHECK_OK(context, lk_tensor_create(context, shape, 4, input_values, &input));
    lk_tensor *output = apply(context, layer, input);
    static float values[COUNT];
    if (output) CHECK_OK(context, lk_tensor_read(context, output, values, COUNT));
    double max_abs = 0, max_rel = 0;
    for (int i = 0; output && i < COUNT; i++) {
        double exact = reference(i), error = fabs((double)values[i] - exact);
        if (!(error <= max_abs)) max_abs = error; /* NaN counts as the worst */
        double relative = error / fmax(1.0, fabs(exact));
        if (!(relative <= max_rel)) max_rel = relative;
    }
    printf("%s %-14s max abs error %.3e, max rel error %.3e over %d elements\n", gpu ? "GPU" : "CPU", name,
           max_abs, max_rel, COUNT);
    if (gpu) CHECK(max_rel <= 1e-3);
    else CHECK(max_abs <= 1e-6);
    lk_tensor_destroy(output);
    lk_tensor_destroy(input);
}

static void check_layers(lk_context *context, int gpu) {
    lk_layer *layer = NULL;
    const char *beta[1] = {"beta"};
    const double three_quarters[1] = {0.75};
    CHECK_OK(context, lk_layer_create(context, "Swish", beta, three_quarters, 1, &layer));
    check_layer(context, gpu, "Swish beta", layer, swish_param);
    lk_layer_destroy(layer);

    /* Names match case-insensitively; per-channel betas replace the scalar. */
    CHECK_OK(context, lk_layer_create(context, "swish", NULL, NULL, 0, &layer));
    float betas[CHANNELS];
    for (int c = 0; c < CHANNELS; c++) betas[c] = (float)swish_betas[c];
    const float *weights[1] = {betas};
    const size_t counts[1] = {CHANNELS};
    CHECK_OK(context, lk_layer_set_weights(context, layer, weights, counts, 1));
    check_layer(context, gpu, "Swish weights", layer, swish_weights);
    lk_layer_destroy(layer);

    const char *alpha[1] = {"alpha"};
    const double half[1] = {0.5};
    CHECK_OK(context, lk_layer_create(context, "Elu", alpha, half, 1, &layer));
    check_layer(context, gpu, "Elu alpha", layer, elu);
    lk_layer_destroy(layer);

    /* Weights are set in the order of weight_names (q before p), not the
     * order the formula uses them in. */
    const char *a[1] = {"a"};
    const double a_value[1] = {1.25};
    const char *weight_names[2] = {"q", "p"};
    CHECK_OK(context, lk_layer_create_formula(context, "a * tanh(x) + p * x + q", a, a_value, 1, weight_names, 2,
                                              &layer));
    float p[CHANNELS], q[CHANNELS];
    for (int c = 0; c < CHANNELS; c++) {
        p[c] = (float)formula_p[c];
        q[c] = (float)formula_q[c];
    }
    const float *formula_weights[2] = {q, p};
    const size_t formula_counts[2] = {CHANNELS, CHANNELS};
    CHECK_OK(context, lk_layer_set_weights(context, layer, formula_weights, formula_counts, 2));
    check_layer(context, gpu, "formula", layer, formula);
    lk_layer_destroy(layer);
}

static int message_has(lk_context *context, const char *text) {
    return strstr(lk_context_last_error(context), text) != NULL;
}

/* lk_layer_weight_name lists the order lk_layer_set_weights takes: the
 * catalog's for an op (Linear: scale, then bias), the caller's for a formula. */
static void check_weight_names(lk_context *context) {
    lk_layer *layer = NULL;
    char name[16];
    size_t count = 0, length = 0;
    CHECK_OK(context, lk_layer_create(context, "Linear", NULL, NULL, 0, &layer));
    CHECK_OK(context, lk_layer_weight_count(context, layer, &count));
    CHECK(count == 2);
    CHECK_OK(context, lk_layer_weight_name(context, layer, 0, name, sizeof name, &length));
    CHECK(strcmp(name, "scale") == 0 && length == 5);
    CHECK_OK(context, lk_layer_weight_name(context, layer, 1, name, sizeof name, NULL));
    CHECK(strcmp(name, "bias") == 0);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_weight_name(context, layer, 2, name, sizeof name, NULL));
    CHECK_STATUS(context, LK_ERROR_BUFFER_TOO_SMALL, lk_layer_weight_name(context, layer, 0, name, 3, &length));
    CHECK(length == 5);
    lk_layer_destroy(layer);

    const char *weight_names[2] = {"q", "p"};
    CHECK_OK(context, lk_layer_create_formula(context, "p * x + q", NULL, NULL, 0, weight_names, 2, &layer));
    CHECK_OK(context, lk_layer_weight_count(context, layer, &count));
    CHECK(count == 2);
    CHECK_OK(context, lk_layer_weight_name(context, layer, 0, name, sizeof name, NULL));
    CHECK(strcmp(name, "q") == 0);
    lk_layer_destroy(layer);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_weight_count(context, NULL, &count));
}

static void check_errors(lk_context *context) {
    lk_layer *layer = (lk_layer *)1;
    CHECK_STATUS(context, LK_ERROR_UNKNOWN_OP, lk_layer_create(context, "Swissh", NULL, NULL, 0, &layer));
    CHECK(layer == NULL);
    CHECK(message_has(context, "unknown op 'Swissh'"));
    CHECK(message_has(context, "did you mean 'Swish'"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_create(context, NULL, NULL, NULL, 0, &layer));
    CHECK(message_has(context, "op is NULL"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_create(context, "Swish", NULL, NULL, 0, NULL));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_create(context, "Swish", NULL, NULL, 1, &layer));
    CHECK(message_has(context, "names is NULL"));

    const char *gamma[1] = {"gamma"};
    const double one[1] = {1.0};
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_create(context, "Swish", gamma, one, 1, &layer));
    CHECK(message_has(context, "unknown parameter 'gamma'"));
    const char *beta[2] = {"beta", "beta"};
    const double two[2] = {1.0, 2.0};
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_create(context, "Swish", beta, two, 2, &layer));
    CHECK(message_has(context, "given twice"));
    const double not_finite[1] = {NAN};
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_create(context, "Swish", beta, not_finite, 1, &layer));
    CHECK(message_has(context, "values[0]"));
    const double too_large[1] = {1e300};
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_create(context, "Swish", beta, too_large, 1, &layer));
    const char *null_name[1] = {NULL};
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_create(context, "Swish", null_name, one, 1, &layer));
    CHECK(message_has(context, "names[0] is NULL"));

    /* Formulas: syntax, values used but not given, given but not used. */
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_layer_create_formula(context, "x * (", NULL, NULL, 0, NULL, 0, &layer));
    CHECK(message_has(context, "formula column"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_layer_create_formula(context, "x * k", NULL, NULL, 0, NULL, 0, &layer));
    CHECK(message_has(context, "'k' is used but not given"));
    const char *unused[1] = {"w"};
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_layer_create_formula(context, "x * 2", NULL, NULL, 0, unused, 1, &layer));
    CHECK(message_has(context, "'w' is given but the formula does not use it"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_layer_create_formula(context, NULL, NULL, NULL, 0, NULL, 0, &layer));
    CHECK(message_has(context, "formula is NULL"));

    /* Weights: too many arrays, NULL arrays, a count that is not the channels'. */
    CHECK_OK(context, lk_layer_create(context, "Swish", NULL, NULL, 0, &layer));
    float values[4] = {1, 1, 1, 1};
    const float *weights[2] = {values, values};
    const size_t counts[2] = {4, 4};
    CHECK_STATUS(context, LK_ERROR_WEIGHTS, lk_layer_set_weights(context, layer, weights, counts, 2));
    CHECK(message_has(context, "takes 1 weight array(s) (beta), got 2"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_set_weights(context, layer, NULL, counts, 1));
    CHECK(message_has(context, "weights is NULL"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_set_weights(context, layer, weights, NULL, 1));
    const float *null_array[1] = {NULL};
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_set_weights(context, layer, null_array, counts, 1));
    CHECK(message_has(context, "weights[0] is NULL"));
    const size_t huge[1] = {(size_t)1 << 60};
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_layer_set_weights(context, layer, weights, huge, 1));
    const size_t negative[1] = {(size_t)-4};
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_set_weights(context, layer, weights, negative, 1));
    CHECK(message_has(context, "counts[0]"));
    CHECK_OK(context, lk_layer_set_weights(context, layer, weights, counts, 1));

    lk_tensor *input = NULL;
    CHECK_OK(context, lk_tensor_create(context, shape, 4, input_values, &input));
    const lk_tensor *inputs[1] = {input};
    lk_tensor *outputs[1] = {NULL};
    size_t made = 7;
    CHECK_STATUS(context, LK_ERROR_WEIGHTS, lk_layer_apply(context, layer, inputs, 1, outputs, 1, &made, NULL));
    CHECK(message_has(context, "4 'beta' weights for 3 channels"));
    CHECK(made == 0 && outputs[0] == NULL);
    lk_layer_destroy(layer);

    /* Apply: NULL and foreign handles, no inputs, no room for the output. */
    CHECK_OK(context, lk_layer_create(context, "Relu", NULL, NULL, 0, &layer));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_apply(context, NULL, inputs, 1, outputs, 1, &made, NULL));
    CHECK(message_has(context, "the layer is NULL"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_layer_apply(context, (lk_layer *)input, inputs, 1, outputs, 1, &made, NULL));
    CHECK(message_has(context, "not a handle of the right kind"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_apply(context, layer, inputs, 0, outputs, 1, &made, NULL));
    CHECK(message_has(context, "input_count is 0"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_apply(context, layer, NULL, 1, outputs, 1, &made, NULL));
    const lk_tensor *wrong[1] = {(const lk_tensor *)layer};
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_apply(context, layer, wrong, 1, outputs, 1, &made, NULL));
    CHECK(message_has(context, "inputs[0] is not a handle of the right kind"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_apply(context, layer, inputs, 1, outputs, 1, NULL, NULL));
    CHECK(message_has(context, "output_count is NULL"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_layer_apply(context, layer, inputs, 1, outputs, 1, &made, (lk_profiler *)layer));
    CHECK(message_has(context, "the profiler is not a handle of the right kind"));
    CHECK_STATUS(context, LK_ERROR_BUFFER_TOO_SMALL,
                 lk_layer_apply(context, layer, inputs, 1, outputs, 0, &made, NULL));
    CHECK(made == 1 && outputs[0] == NULL); /* the count needed, nothing made */
    CHECK(message_has(context, "makes 1 output(s), outputs has room for 0"));
    lk_layer_destroy(layer);
    lk_tensor_destroy(input);
}

/* Threads applying one layer at once on one context. */
#define THREADS 4
struct worker {
    lk_context *context;
    lk_layer *layer;
    lk_tensor *input;
    const float *expected;
    size_t count;
    int runs;
    int mismatches;
    int failures;
};

static void *work(void *argument) {
    struct worker *worker = argument;
    float *values = malloc(worker->count * sizeof *values);
    for (int run = 0; run < worker->runs; run++) {
        const lk_tensor *inputs[1] = {worker->input};
        lk_tensor *output = NULL;
        size_t made = 0;
        if (lk_layer_apply(worker->context, worker->layer, inputs, 1, &output, 1, &made, NULL) != LK_OK ||
            lk_tensor_read(worker->context, output, values, worker->count) != LK_OK) {
            fprintf(stderr, "thread run failed: %s\n", lk_context_last_error(worker->context));
            worker->failures++;
        } else if (memcmp(values, worker->expected, worker->count * sizeof *values) != 0) {
            worker->mismatches++;
        }
        lk_tensor_destroy(output);
    }
    free(values);
    return NULL;
}

/* A tensor of 196,608 elements: over the CPU evaluator's chunk (65,536), so
 * CPU runs split into chunks and contend for its worker pool. */
static void check_threads(lk_context *context, int runs, const char *label) {
    const int64_t big_shape[4] = {1, CHANNELS, 256, 256};
    const size_t count = CHANNELS * 256 * 256;
    float *data = malloc(count * sizeof *data), *expected = malloc(count * sizeof *expected);
    for (size_t i = 0; i < count; i++) data[i] = -8.0f + (float)(i % 1025) / 64.0f;
    lk_tensor *input = NULL;
    lk_layer *layer = NULL;
    CHECK_OK(context, lk_tensor_create(context, big_shape, 4, data, &input));
    float betas[CHANNELS] = {0.5f, 1.0f, 1.5f};
    const float *weights[1] = {betas};
    const size_t counts[1] = {CHANNELS};
    CHECK_OK(context, lk_layer_create(context, "Swish", NULL, NULL, 0, &layer));
    CHECK_OK(context, lk_layer_set_weights(context, layer, weights, counts, 1));

    const lk_tensor *inputs[1] = {input};
    lk_tensor *serial = NULL;
    size_t made = 0;
    CHECK_OK(context, lk_layer_apply(context, layer, inputs, 1, &serial, 1, &made, NULL));
    CHECK_OK(context, lk_tensor_read(context, serial, expected, count));
    lk_tensor_destroy(serial);

    struct worker workers[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (struct worker){context, layer, input, expected, count, runs, 0, 0};
        CHECK(pthread_create(&threads[t], NULL, work, &workers[t]) == 0);
    }
    int mismatches = 0, failures = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        mismatches += workers[t].mismatches;
        failures += workers[t].failures;
    }
    printf("%s: %d threads x %d runs of one Swish on one context: %d mismatches, %d failures\n", label, THREADS,
           runs, mismatches, failures);
    CHECK(mismatches == 0 && failures == 0);
    lk_layer_destroy(layer);
    lk_tensor_destroy(input);
    free(data);
    free(expected);
}

int main(void) {
    for (int i = 0; i < COUNT; i++) input_values[i] = (float)x_at(i);
    lk_context *cpu = NULL;
    char error[512];
    if (lk_context_create(LK_COMPUTE_CPU, 0, &cpu, error, sizeof error) != LK_OK) {
        fprintf(stderr, "lk_context_create: %s\n", error);
        return 1;
    }
    check_layers(cpu, 0);
    check_errors(cpu);
    check_weight_names(cpu);
    check_threads(cpu, 50, "CPU");
    lk_context_destroy(cpu);

    lk_context *gpu = check_gpu_context();
    if (gpu) {
        check_layers(gpu, 1);
        check_threads(gpu, 5, "GPU");
        lk_context_destroy(gpu);
    }
    return check_finish("test_layers");
}
