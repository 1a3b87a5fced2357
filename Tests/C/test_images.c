/* lk_image_load: torchvision's Resize(256), CenterCrop(224), ToTensor, Normalize
 * against Pillow and numpy float64 (Scripts/generate_resampling_fixtures.py keeps
 * every 4th row and column), and its errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "npy.h"

#define FIXTURES LAYERKIT_SOURCE_DIR "/Tests/LayerKitTests/Fixtures/resampling/"

int main(void) {
    lk_context *context = NULL;
    char error[256] = "";
    CHECK(lk_context_create(LK_COMPUTE_CPU, 1, &context, error, sizeof error) == LK_OK);

    lk_tensor *image = NULL;
    CHECK_OK(context, lk_image_load(context, FIXTURES "photo.jpg", "256", "224", NULL, "imagenet", NULL, 0, NULL, &image));
    int64_t shape[LK_MAX_RANK] = {0};
    size_t rank = 0;
    CHECK_OK(context, lk_tensor_shape(context, image, shape, LK_MAX_RANK, &rank));
    CHECK(rank == 4 && shape[0] == 1 && shape[1] == 3 && shape[2] == 224 && shape[3] == 224);
    float *values = malloc(sizeof(float) * 3 * 224 * 224);
    CHECK_OK(context, lk_tensor_read(context, image, values, 3 * 224 * 224));
    size_t count = 0;
    float *reference = npy_read_floats(FIXTURES "imagenet_224.npy", &count);
    CHECK(reference != NULL && count == 3 * 56 * 56);
    double worst = 0;
    for (size_t c = 0; reference && c < 3; c++)
        for (size_t y = 0; y < 56; y++)
            for (size_t x = 0; x < 56; x++) {
                double d = fabs(values[(c * 224 + 4 * y) * 224 + 4 * x] - reference[(c * 56 + y) * 56 + x]);
                if (d > worst) worst = d;
            }
    /* 2/255 of a pixel in normalized units. */
    CHECK(worst <= 2.0 / 255 / 0.224);
    free(reference);
    free(values);
    lk_tensor_destroy(image);

    image = (lk_tensor *)1;
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_image_load(context, FIXTURES "photo.jpg", "3x", NULL, NULL, NULL, NULL, 0, NULL, &image));
    CHECK(image == NULL);
    CHECK(strstr(lk_context_last_error(context), "resize 3x") != NULL);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_image_load(context, FIXTURES "photo.jpg", NULL, NULL, "lanczos", NULL, NULL, 0, NULL, &image));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_image_load(context, FIXTURES "photo.jpg", NULL, NULL, NULL, NULL, NULL, -1, NULL, &image));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_image_load(context, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, &image));
    lk_context_destroy(context);
    return check_finish("test_images");
}
