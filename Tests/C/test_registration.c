/* Custom layers registered through the C API, run inside a model
 * (Tests/C/Fixtures/custom_layer.onnx: x -> Add(bias) -> layerkit.CustomSwish):
 * as C callbacks and as a formula, against float64 math; callbacks' failures;
 * `destroy` called exactly once, when nothing made from the registration is left. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "check.h"

#define MODEL LAYERKIT_SOURCE_DIR "/Tests/C/Fixtures/custom_layer.onnx"
#define MISSING LAYERKIT_SOURCE_DIR "/Tests/LayerKitTests/Fixtures/models/custom_missing.onnx"
#define COUNT (3 * 4 * 5)

static const int64_t shape[4] = {1, 3, 4, 5};
/* The model's Add bias, per channel (make_custom_model.py's BIAS). */
static const double bias[3] = {0.5, -1.0, 2.0};

/* What a registration's callbacks count. */
struct counters {
    atomic_int evaluated;
    atomic_int shaped;
    atomic_int destroyed;
    int32_t evaluate_result; /* what evaluate returns: 0, or a failure */
    int32_t shape_result;
};

/* x * sigmoid(x), per element, in float64 then rounded. */
static int32_t swish_evaluate(void *user_data, size_t input_count, const float *const *inputs,
                              const int64_t *const *input_shapes, const size_t *input_ranks, float *output,
                              const int64_t *output_shape, size_t output_rank) {
    struct counters *counters = user_data;
    atomic_fetch_add(&counters->evaluated, 1);
    if (counters->evaluate_result != 0) return counters->evaluate_result;
    if (input_count != 1 || output_rank != input_ranks[0]) return -1;
    size_t count = 1;
    for (size_t i = 0; i < output_rank; i++) {
        if (output_shape[i] != input_shapes[0][i]) return -2;
        count *= (size_t)output_shape[i];
    }
    for (size_t i = 0; i < count; i++) {
        double x = inputs[0][i];
        output[i] = (float)(x / (1.0 + exp(-x)));
    }
    return 0;
}

/* The output has the input's shape; counts its calls. */
static int32_t same_shape(void *user_data, size_t input_count, const int64_t *const *input_shapes,
                          const size_t *input_ranks, int64_t *output_shape, size_t *output_rank) {
    struct counters *counters = user_data;
    atomic_fetch_add(&counters->shaped, 1);
    if (counters->shape_result != 0) return counters->shape_result;
    if (input_count != 1) return -1;
    memcpy(output_shape, input_shapes[0], input_ranks[0] * sizeof(int64_t));
    *output_rank = input_ranks[0];
    return 0;
}

static void count_destroy(void *user_data) {
    struct counters *counters = user_data;
    atomic_fetch_add(&counters->destroyed, 1);
}

/* x, a ramp over [-6, 6]. */
static void make_input(float x[COUNT]) {
    for (int i = 0; i < COUNT; i++) x[i] = (float)(-6.0 + 12.0 * i / (COUNT - 1));
}

/* Loads the model on `context`, runs it on the ramp and returns
 * max |y - s * sigmoid(beta * s)| over the output, s = x + bias (an Add in
 * float32, so s is rounded as the model's is); -1 when a call failed. */
static double run_against_float64(lk_context *context, double beta) {
    float x[COUNT], y[COUNT];
    make_input(x);
    lk_model *model = NULL;
    lk_tensor *input = NULL, *output = NULL;
    double worst = -1;
    const char *names[] = {"x"};
    CHECK_OK(context, lk_model_load(context, MODEL, &model));
    CHECK_OK(context, lk_tensor_create(context, shape, 4, x, &input));
    const lk_tensor *inputs[] = {input};
    if (model && input) CHECK_OK(context, lk_model_predict(context, model, names, inputs, 1, &output, 1, NULL));
    if (output) {
        CHECK_OK(context, lk_tensor_read(context, output, y, COUNT));
        worst = 0;
        for (int i = 0; i < COUNT; i++) {
            double s = (float)((double)x[i] + bias[i / 20]);
            double error = fabs((double)y[i] - s / (1.0 + exp(-beta * s)));
            if (error > worst) worst = error;
        }
    }
    lk_tensor_destroy(output);
    lk_tensor_destroy(input);
    lk_model_destroy(model);
    return worst;
}

static lk_context *cpu_context(void) {
    lk_context *context = NULL;
    char error[256];
    CHECK(lk_context_create(LK_COMPUTE_CPU, 1, &context, error, sizeof error) == LK_OK);
    return context;
}

static void callbacks_run_in_a_model(void) {
    struct counters counters = {0};
    lk_context *context = cpu_context();
    CHECK_OK(context, lk_register_layer(context, "CustomSwish", swish_evaluate, NULL, &counters, count_destroy));
    double error = run_against_float64(context, 1.0);
    printf("C callback layer in a model vs float64: max abs error %.3g (bound 1e-6)\n", error);
    CHECK(error >= 0 && error <= 1e-6);
    CHECK(atomic_load(&counters.evaluated) == 1);
    /* The model is gone, the registration is not: destroy waits for the context. */
    CHECK(atomic_load(&counters.destroyed) == 0);
    lk_context_destroy(context);
    CHECK(atomic_load(&counters.destroyed) == 1);

    /* With a shape callback, found case-insensitively. */
    struct counters shaped = {0};
    context = cpu_context();
    CHECK_OK(context, lk_register_layer(context, "customswish", swish_evaluate, same_shape, &shaped, count_destroy));
    error = run_against_float64(context, 1.0);
    CHECK(error >= 0 && error <= 1e-6);
    CHECK(atomic_load(&shaped.shaped) >= 1 && atomic_load(&shaped.evaluated) == 1);
    lk_context_destroy(context);
    CHECK(atomic_load(&shaped.destroyed) == 1);
}

/* A registration replaced while a model made from it is alive stays until that model goes. */
static void destroy_waits_for_models(void) {
    struct counters first = {0}, second = {0};
    lk_context *context = cpu_context();
    CHECK_OK(context, lk_register_layer(context, "CustomSwish", swish_evaluate, NULL, &first, count_destroy));
    lk_model *model = NULL;
    CHECK_OK(context, lk_model_load(context, MODEL, &model));
    CHECK_OK(context, lk_register_layer(context, "CustomSwish", swish_evaluate, NULL, &second, count_destroy));
    CHECK(atomic_load(&first.destroyed) == 0);
    lk_model_destroy(model);
    CHECK(atomic_load(&first.destroyed) == 1);
    CHECK(atomic_load(&second.destroyed) == 0);
    lk_context_destroy(context);
    CHECK(atomic_load(&first.destroyed) == 1);
    CHECK(atomic_load(&second.destroyed) == 1);

    /* Replaced before anything was made from it: destroyed at once. */
    struct counters replaced = {0}, kept = {0};
    context = cpu_context();
    CHECK_OK(context, lk_register_layer(context, "CustomSwish", swish_evaluate, NULL, &replaced, count_destroy));
    CHECK_OK(context, lk_register_formula(context, "CustomSwish", "x * sigmoid(x)", NULL, NULL, 0, NULL, 0));
    CHECK(atomic_load(&replaced.destroyed) == 1);
    CHECK_OK(context, lk_register_layer(context, "Other", swish_evaluate, NULL, &kept, NULL));
    lk_context_destroy(context);
    CHECK(atomic_load(&replaced.destroyed) == 1);
    CHECK(atomic_load(&kept.destroyed) == 0); /* no destroy given: never called */
}

static void callback_failures(void) {
    struct counters counters = {.evaluate_result = 3};
    lk_context *context = cpu_context();
    CHECK_OK(context, lk_register_layer(context, "CustomSwish", swish_evaluate, same_shape, &counters, count_destroy));
    lk_model *model = NULL;
    CHECK_OK(context, lk_model_load(context, MODEL, &model));
    float x[COUNT];
    make_input(x);
    lk_tensor *input = NULL, *output = NULL;
    CHECK_OK(context, lk_tensor_create(context, shape, 4, x, &input));
    const lk_tensor *inputs[] = {input};
    const char *names[] = {"x"};
    CHECK_STATUS(context, LK_ERROR_CALLBACK, lk_model_predict(context, model, names, inputs, 1, &output, 1, NULL));
    const char *message = lk_context_last_error(context);
    CHECK(strstr(message, "'CustomSwish'") != NULL && strstr(message, "evaluate callback returned 3") != NULL);
    CHECK(output == NULL);
    lk_tensor_destroy(input);
    lk_model_destroy(model);

    /* A failing shape callback: the model cannot be planned (the node is named). */
    counters.shape_result = 7;
    CHECK_STATUS(context, LK_ERROR_INVALID_MODEL, lk_model_load(context, MODEL, &model));
    message = lk_context_last_error(context);
    CHECK(strstr(message, "custom") != NULL && strstr(message, "shape callback returned 7") != NULL);
    CHECK(model == NULL);
    lk_context_destroy(context);
    CHECK(atomic_load(&counters.destroyed) == 1);

    /* Refused registrations keep nothing and never call destroy. */
    struct counters refused = {0};
    context = cpu_context();
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_register_layer(context, "CustomSwish", NULL, NULL, &refused, count_destroy));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_register_layer(context, "", swish_evaluate, NULL, &refused, count_destroy));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_register_layer(context, NULL, swish_evaluate, NULL, &refused, count_destroy));
    CHECK(lk_register_layer(NULL, "CustomSwish", swish_evaluate, NULL, &refused, count_destroy) ==
          LK_ERROR_INVALID_ARGUMENT);
    /* Nothing registered: the custom node is not found. */
    CHECK_STATUS(context, LK_ERROR_INVALID_MODEL, lk_model_load(context, MODEL, &model));
    CHECK(strstr(lk_context_last_error(context), "CustomSwish") != NULL);
    lk_context_destroy(context);
    CHECK(atomic_load(&refused.destroyed) == 0);
}

static void formulas_run_in_a_model(void) {
    lk_context *context = cpu_context();
    const char *names[] = {"beta"};
    const double values[] = {1.5};
    CHECK_OK(context, lk_register_formula(context, "CustomSwish", "x * sigmoid(beta * x)", names, values, 1, NULL, 0));
    double error = run_against_float64(context, 1.5);
    printf("formula layer in a model vs float64: max abs error %.3g (bound 1e-6)\n", error);
    CHECK(error >= 0 && error <= 1e-6);

    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_register_formula(context, "Bad", "x * sigmoid(", NULL, NULL, 0, NULL, 0));
    CHECK(strstr(lk_context_last_error(context), "x * sigmoid(") != NULL);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_register_formula(context, "Unused", "x * 2", names, values, 1, NULL, 0));
    CHECK(strstr(lk_context_last_error(context), "beta") != NULL);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_register_formula(context, "NoValues", "x * sigmoid(beta * x)", names, NULL, 1, NULL, 0));
    const double huge[] = {1e300};
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_register_formula(context, "Huge", "x * sigmoid(beta * x)", names, huge, 1, NULL, 0));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_register_formula(context, "Wrapped", "x * sigmoid(beta * x)", names, values, (size_t)-1, NULL, 0));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_register_formula(context, "NoFormula", NULL, NULL, NULL, 0, NULL, 0));
    lk_context_destroy(context);
}

/* The registration as a layer of its own (lk_layer_create, lk_layer_apply):
 * the shape callback's failure there is LK_ERROR_CALLBACK; the layer holds
 * the registration as a model does. */
static void callbacks_as_layers(void) {
    struct counters counters = {0};
    lk_context *context = cpu_context();
    CHECK_OK(context, lk_register_layer(context, "CustomSwish", swish_evaluate, same_shape, &counters, count_destroy));
    lk_layer *layer = NULL;
    CHECK_OK(context, lk_layer_create(context, "CustomSwish", NULL, NULL, 0, &layer));
    const char *names[] = {"beta"};
    const double values[] = {1.0};
    lk_layer *refused = NULL;
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_layer_create(context, "CustomSwish", names, values, 1, &refused));
    CHECK(strstr(lk_context_last_error(context), "takes no parameters") != NULL);

    float x[COUNT], y[COUNT];
    make_input(x);
    lk_tensor *input = NULL, *output = NULL;
    CHECK_OK(context, lk_tensor_create(context, shape, 4, x, &input));
    const lk_tensor *inputs[] = {input};
    size_t made = 0;
    CHECK_OK(context, lk_layer_apply(context, layer, inputs, 1, &output, 1, &made, NULL));
    CHECK(made == 1);
    double worst = output ? 0 : 1;
    if (output) {
        CHECK_OK(context, lk_tensor_read(context, output, y, COUNT));
        for (int i = 0; i < COUNT; i++) {
            double error = fabs((double)y[i] - x[i] / (1.0 + exp(-(double)x[i])));
            if (error > worst) worst = error;
        }
    }
    CHECK(worst <= 1e-6);
    lk_tensor_destroy(output);
    output = NULL;

    counters.shape_result = 5;
    CHECK_STATUS(context, LK_ERROR_CALLBACK, lk_layer_apply(context, layer, inputs, 1, &output, 1, &made, NULL));
    CHECK(strstr(lk_context_last_error(context), "shape callback returned 5") != NULL);
    CHECK(output == NULL);

    /* Replaced while the layer lives: destroyed with the layer. */
    CHECK_OK(context, lk_register_formula(context, "CustomSwish", "x * sigmoid(x)", NULL, NULL, 0, NULL, 0));
    CHECK(atomic_load(&counters.destroyed) == 0);
    lk_layer_destroy(layer);
    CHECK(atomic_load(&counters.destroyed) == 1);
    lk_tensor_destroy(input);
    lk_context_destroy(context);
    CHECK(atomic_load(&counters.destroyed) == 1);
}

/* A registered formula's weights are set in the order its caller listed
 * them, not the order the formula uses them: "a * x + b" registered with
 * weight names (b, a). */
static void registered_formula_weights_in_callers_order(void) {
    lk_context *context = cpu_context();
    const char *weight_names[] = {"b", "a"};
    CHECK_OK(context, lk_register_formula(context, "Affine", "a * x + b", NULL, NULL, 0, weight_names, 2));
    lk_layer *layer = NULL;
    CHECK_OK(context, lk_layer_create(context, "Affine", NULL, NULL, 0, &layer));
    const float b[3] = {0.25f, -2.0f, 3.0f}, a[3] = {2.0f, 0.5f, -1.5f};
    const float *weights[] = {b, a};
    const size_t counts[] = {3, 3};
    CHECK_OK(context, lk_layer_set_weights(context, layer, weights, counts, 2));
    float x[COUNT], y[COUNT];
    make_input(x);
    lk_tensor *input = NULL, *output = NULL;
    CHECK_OK(context, lk_tensor_create(context, shape, 4, x, &input));
    const lk_tensor *inputs[] = {input};
    size_t made = 0;
    if (layer && input) CHECK_OK(context, lk_layer_apply(context, layer, inputs, 1, &output, 1, &made, NULL));
    double worst = output ? 0 : 1;
    if (output) {
        CHECK_OK(context, lk_tensor_read(context, output, y, COUNT));
        for (int i = 0; i < COUNT; i++) {
            int channel = i / 20;
            double error = fabs((double)y[i] - ((double)a[channel] * x[i] + (double)b[channel]));
            if (error > worst) worst = error;
        }
    }
    CHECK(worst <= 1e-6);
    lk_tensor_destroy(output);
    lk_tensor_destroy(input);
    lk_layer_destroy(layer);
    lk_context_destroy(context);
}

/* On a GPU context the callback layer runs on the CPU between GPU layers
 * (the Add). The GPU keeps values in fp16: x (|x| <= 6) and s (|s| <= 8)
 * each rounded by at most 2^-11 relative, 3e-3 and 4e-3, moved through
 * swish (slope <= 1.1): the bound is 1e-2. */
static void callbacks_run_in_a_gpu_model(void) {
    lk_context *context = check_gpu_context();
    if (!context) return;
    struct counters counters = {0};
    CHECK_OK(context, lk_register_layer(context, "CustomSwish", swish_evaluate, NULL, &counters, count_destroy));
    double error = run_against_float64(context, 1.0);
    printf("C callback layer in a GPU model vs float64: max abs error %.3g (bound 1e-2)\n", error);
    CHECK(error >= 0 && error <= 1e-2);
    CHECK(atomic_load(&counters.evaluated) == 1);
    lk_context_destroy(context);
    CHECK(atomic_load(&counters.destroyed) == 1);
}

/* lk_register_node_formula: the node's values by name, as `--layer` binds
 * them. custom_missing.onnx's MyLayer node has the attribute gain = 2; a
 * model whose custom node nothing runs ends its message with the advice. */
static void node_formulas_take_the_nodes_values(void) {
    lk_context *context = cpu_context();
    lk_model *model = NULL;
    CHECK_STATUS(context, LK_ERROR_INVALID_MODEL, lk_model_load(context, MISSING, &model));
    CHECK(strstr(lk_context_last_error(context), "register a layer named 'MyLayer'") != NULL);
    CHECK_OK(context, lk_register_node_formula(context, "MyLayer", "gain * x"));
    CHECK_OK(context, lk_model_load(context, MISSING, &model));
    float x[36], y[36];
    for (int i = 0; i < 36; i++) x[i] = (float)i - 17.5f;
    const int64_t dims[4] = {1, 4, 3, 3};
    lk_tensor *input = NULL, *output = NULL;
    CHECK_OK(context, lk_tensor_create(context, dims, 4, x, &input));
    const lk_tensor *inputs[] = {input};
    const char *names[] = {"x"};
    if (model && input) CHECK_OK(context, lk_model_predict(context, model, names, inputs, 1, &output, 1, NULL));
    if (output) {
        CHECK_OK(context, lk_tensor_read(context, output, y, 36));
        for (int i = 0; i < 36; i++) CHECK(y[i] == 2.0f * x[i]);
    }
    lk_tensor_destroy(output);
    lk_tensor_destroy(input);
    lk_model_destroy(model);
    model = NULL;

    /* A value the node does not give fails the load, naming it. */
    CHECK_OK(context, lk_register_node_formula(context, "MyLayer", "scale * x"));
    CHECK_STATUS(context, LK_ERROR_INVALID_MODEL, lk_model_load(context, MISSING, &model));
    CHECK(strstr(lk_context_last_error(context), "scale") != NULL);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_register_node_formula(context, "MyLayer", "x * ("));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_register_node_formula(context, "", "x"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_register_node_formula(context, "MyLayer", NULL));
    lk_context_destroy(context);
}

int main(void) {
    node_formulas_take_the_nodes_values();
    callbacks_run_in_a_model();
    registered_formula_weights_in_callers_order();
    destroy_waits_for_models();
    callback_failures();
    callbacks_as_layers();
    callbacks_run_in_a_gpu_model();
    formulas_run_in_a_model();
    return check_finish("test_registration");
}
