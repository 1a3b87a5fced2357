/* Swish through LayerKit's C API: y = x * sigmoid(beta * x) with beta 1 on the
 * CPU over x in [-8, 8], checked against float64 math. Prints the max abs
 * error; exits 1 when it is over 1e-6 or any call fails. */
#include <math.h>
#include <stdio.h>

#include <layerkit.h>

enum { POINTS = 4001 };
static const double LIMIT = 1e-6;

/* Prints a failed call's status and its message; returns 1 for main. */
static int report(lk_context *context, const char *call, lk_status status) {
    fprintf(stderr, "%s: %s: %s\n", call, lk_status_string(status), lk_context_last_error(context));
    return 1;
}

int main(void) {
    if (lk_api_version() != LK_API_VERSION) {
        fprintf(stderr, "liblayerkit has C API %d, this program was built for %d\n", (int)lk_api_version(),
                LK_API_VERSION);
        return 1;
    }
    printf("LayerKit %s (C API %d)\n", lk_version_string(), (int)lk_api_version());

    char error[512] = "";
    lk_context *context = NULL;
    lk_status status = lk_context_create(LK_COMPUTE_CPU, 0, &context, error, sizeof error);
    if (status != LK_OK) {
        fprintf(stderr, "lk_context_create: %s: %s\n", lk_status_string(status), error);
        return 1;
    }

    static float x[POINTS], y[POINTS];
    for (int i = 0; i < POINTS; i++) x[i] = (float)(-8.0 + 16.0 * i / (POINTS - 1));

    int failed = 0;
    const int64_t shape[] = {POINTS};
    const char *const names[] = {"beta"};
    const double values[] = {1.0};
    lk_tensor *input = NULL, *output = NULL;
    lk_layer *layer = NULL;
    size_t made = 0;
    if ((status = lk_tensor_create(context, shape, 1, x, &input)) != LK_OK) {
        failed = report(context, "lk_tensor_create", status);
    } else if ((status = lk_layer_create(context, "Swish", names, values, 1, &layer)) != LK_OK) {
        failed = report(context, "lk_layer_create", status);
    } else if ((status = lk_layer_apply(context, layer, (const lk_tensor *const *)&input, 1, &output, 1, &made,
                                        NULL)) != LK_OK) {
        failed = report(context, "lk_layer_apply", status);
    } else if (made != 1) {
        fprintf(stderr, "lk_layer_apply made %zu outputs, expected 1\n", made);
        failed = 1;
    } else if ((status = lk_tensor_read(context, output, y, POINTS)) != LK_OK) {
        failed = report(context, "lk_tensor_read", status);
    }

    if (!failed) {
        double max_error = 0;
        for (int i = 0; i < POINTS; i++) {
            double expected = (double)x[i] / (1.0 + exp(-(double)x[i])); /* the same float input, in float64 */
            double difference = fabs((double)y[i] - expected);
            /* A NaN never compares greater: count it as a failure on its own. */
            if (!(difference <= max_error)) max_error = isnan(difference) ? INFINITY : difference;
        }
        printf("Swish (beta 1) on the CPU, %d points in [-8, 8]: max abs error %.3g against float64 (limit %g)\n",
               POINTS, max_error, LIMIT);
        failed = !(max_error <= LIMIT);
    }

    lk_tensor_destroy(output);
    lk_tensor_destroy(input);
    lk_layer_destroy(layer);
    lk_context_destroy(context);
    return failed;
}
