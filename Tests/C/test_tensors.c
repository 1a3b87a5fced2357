/* Tensors: create, read and write round trips, shapes and counts, and every
 * bad argument an error with a message naming it. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

/* Whether the context's last message contains `text`. */
static int message_has(lk_context *context, const char *text) {
    return strstr(lk_context_last_error(context), text) != NULL;
}

static void round_trips(lk_context *context) {
    const int64_t shape[3] = {2, 3, 5};
    float data[30], back[30];
    for (int i = 0; i < 30; i++) data[i] = (float)i * 0.25f - 3.0f;

    lk_tensor *tensor = NULL;
    CHECK_OK(context, lk_tensor_create(context, shape, 3, data, &tensor));
    CHECK(tensor != NULL);
    size_t count = 0, rank = 0;
    int64_t dims[LK_MAX_RANK] = {0};
    CHECK_OK(context, lk_tensor_element_count(context, tensor, &count));
    CHECK(count == 30);
    CHECK_OK(context, lk_tensor_shape(context, tensor, dims, LK_MAX_RANK, &rank));
    CHECK(rank == 3 && dims[0] == 2 && dims[1] == 3 && dims[2] == 5);
    rank = 0;
    CHECK_OK(context, lk_tensor_shape(context, tensor, NULL, 0, &rank));
    CHECK(rank == 3);
    CHECK_OK(context, lk_tensor_read(context, tensor, back, 30));
    CHECK(memcmp(data, back, sizeof data) == 0);

    /* Written values come back bit for bit, NaN and infinities included. */
    data[0] = -0.0f;
    data[1] = INFINITY;
    data[2] = NAN;
    CHECK_OK(context, lk_tensor_write(context, tensor, data, 30));
    CHECK_OK(context, lk_tensor_read(context, tensor, back, 30));
    CHECK(memcmp(data, back, sizeof data) == 0);
    lk_tensor_destroy(tensor);

    /* NULL data is zero-filled; every rank up to LK_MAX_RANK. */
    const int64_t eight[LK_MAX_RANK] = {1, 2, 1, 2, 1, 2, 1, 3};
    CHECK_OK(context, lk_tensor_create(context, eight, LK_MAX_RANK, NULL, &tensor));
    CHECK_OK(context, lk_tensor_element_count(context, tensor, &count));
    CHECK(count == 24);
    float zeros[24];
    memset(zeros, 0xFF, sizeof zeros);
    CHECK_OK(context, lk_tensor_read(context, tensor, zeros, 24));
    int all_zero = 1;
    for (int i = 0; i < 24; i++) all_zero &= zeros[i] == 0.0f;
    CHECK(all_zero);
    CHECK_OK(context, lk_tensor_shape(context, tensor, dims, LK_MAX_RANK, &rank));
    CHECK(rank == LK_MAX_RANK && dims[7] == 3);
    lk_tensor_destroy(tensor);

    const int64_t one[1] = {1};
    CHECK_OK(context, lk_tensor_create(context, one, 1, NULL, &tensor));
    CHECK(tensor != NULL);
    lk_tensor_destroy(tensor);
    lk_tensor_destroy(NULL);
}

static void bad_arguments(lk_context *context) {
    const int64_t shape[2] = {3, 4};
    float data[12] = {0};
    lk_tensor *tensor = (lk_tensor *)1;

    /* NULL pointers. */
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_create(context, NULL, 2, data, &tensor));
    CHECK(tensor == NULL);
    CHECK(message_has(context, "shape is NULL"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_create(context, shape, 2, data, NULL));
    CHECK(message_has(context, "out is NULL"));
    CHECK(lk_tensor_create(NULL, shape, 2, data, &tensor) == LK_ERROR_INVALID_ARGUMENT);

    /* Ranks 0 and LK_MAX_RANK + 1, negative dims, overflowing counts (zero dims are
     * zero-size tensors: test_zero_size.c). */
    const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_create(context, shape, 0, data, &tensor));
    CHECK(message_has(context, "rank of shape must be 1 to 8, got 0"));
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_create(context, nine, 9, NULL, &tensor));
    CHECK(message_has(context, "got 9"));
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_create(context, shape, (size_t)-1, NULL, &tensor));
    const int64_t negative[2] = {4, -2};
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_create(context, negative, 2, NULL, &tensor));
    CHECK(message_has(context, "shape[1] is -2") && message_has(context, "cannot be negative"));
    const int64_t huge[3] = {INT64_C(1) << 40, INT64_C(1) << 40, 2};
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_create(context, huge, 3, NULL, &tensor));
    CHECK(message_has(context, "too many elements"));
    /* Within the count limit but past this machine's memory: an error, not an allocation. */
    const int64_t too_big[2] = {INT64_C(1) << 30, INT64_C(1) << 20};
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_create(context, too_big, 2, NULL, &tensor));
    CHECK(message_has(context, "MiB"));
    CHECK(tensor == NULL);

    CHECK_OK(context, lk_tensor_create(context, shape, 2, data, &tensor));
    float small[11];
    float large[13];
    size_t rank = 0, count = 0;
    int64_t dims[1];

    /* Counts that do not match, buffers too small. */
    CHECK_STATUS(context, LK_ERROR_BUFFER_TOO_SMALL, lk_tensor_read(context, tensor, small, 11));
    CHECK(message_has(context, "count is 11") && message_has(context, "12 elements"));
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_read(context, tensor, large, 13));
    CHECK_STATUS(context, LK_ERROR_BUFFER_TOO_SMALL, lk_tensor_write(context, tensor, small, 11));
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_write(context, tensor, large, 13));
    CHECK_STATUS(context, LK_ERROR_SHAPE, lk_tensor_write(context, tensor, large, (size_t)-1));
    CHECK_STATUS(context, LK_ERROR_BUFFER_TOO_SMALL, lk_tensor_shape(context, tensor, dims, 1, &rank));
    CHECK(rank == 2);
    CHECK(message_has(context, "rank 2"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_read(context, tensor, NULL, 12));
    CHECK(message_has(context, "data is NULL"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_write(context, tensor, NULL, 12));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_element_count(context, tensor, NULL));
    CHECK(message_has(context, "count is NULL"));

    /* NULL handles and handles of the wrong kind. */
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_element_count(context, NULL, &count));
    CHECK(message_has(context, "the tensor is NULL"));
    lk_layer *layer = NULL;
    CHECK_OK(context, lk_layer_create(context, "Relu", NULL, NULL, 0, &layer));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_tensor_element_count(context, (const lk_tensor *)layer, &count));
    CHECK(message_has(context, "not a handle of the right kind"));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_tensor_read(context, (const lk_tensor *)context, data, 12));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_tensor_shape((lk_context *)tensor, tensor, dims, 1, &rank));
    lk_layer_destroy(layer);

    /* A failed call's message is the thread's until its next call. */
    CHECK_OK(context, lk_tensor_element_count(context, tensor, &count));
    CHECK(strcmp(lk_context_last_error(context), "") == 0);
    lk_tensor_destroy(tensor);
}

int main(void) {
    lk_context *context = check_cpu_context();
    round_trips(context);
    bad_arguments(context);
    lk_context_destroy(context);
    return check_finish("test_tensors");
}
