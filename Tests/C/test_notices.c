/* lk_context_set_notice: a context's notices (here the DOUBLE input of
 * Tests/LayerKitTests/Fixtures/typed/mixed_types, "computed in float32") go to
 * the callback with its user data, once per context; NULL drops them. */
#include <string.h>

#include "check.h"

#define MODEL LAYERKIT_SOURCE_DIR "/Tests/LayerKitTests/Fixtures/typed/mixed_types/model.onnx"

struct received {
    int count;
    char last[512];
};

static void record(void *user_data, const char *message) {
    struct received *received = user_data;
    received->count++;
    strncpy(received->last, message, sizeof received->last - 1);
}

static lk_context *cpu_context(void) {
    lk_context *context = NULL;
    char error[256];
    CHECK(lk_context_create(LK_COMPUTE_CPU, 1, &context, error, sizeof error) == LK_OK);
    return context;
}

static void load_and_destroy(lk_context *context) {
    lk_model *model = NULL;
    CHECK_OK(context, lk_model_load(context, MODEL, &model));
    lk_model_destroy(model);
}

int main(void) {
    struct received received = {0};
    lk_context *context = cpu_context();
    CHECK_OK(context, lk_context_set_notice(context, record, &received));
    load_and_destroy(context);
    CHECK(received.count == 1);
    CHECK(strstr(received.last, "input 'd' is DOUBLE") != NULL);
    /* Once per context: a second load says nothing new. */
    load_and_destroy(context);
    CHECK(received.count == 1);
    lk_context_destroy(context);

    /* NULL drops them (a new context, which has not said it yet). */
    context = cpu_context();
    CHECK_OK(context, lk_context_set_notice(context, NULL, NULL));
    load_and_destroy(context);
    CHECK(lk_context_set_notice(NULL, record, &received) == LK_ERROR_INVALID_ARGUMENT);
    lk_context_destroy(context);
    CHECK(received.count == 1);
    return check_finish("test_notices");
}
