/* Versions and statuses: the library is the header's API version, its release
 * is the package's, and every status has its name. */
#include <string.h>

#include "check.h"

int main(void) {
    CHECK(lk_api_version() == LK_API_VERSION);
    CHECK(strcmp(lk_version_string(), LAYERKIT_PACKAGE_VERSION) == 0);
    CHECK(strcmp(lk_status_string(LK_OK), "LK_OK") == 0);
    CHECK(strcmp(lk_status_string(LK_ERROR_INTERNAL), "LK_ERROR_INTERNAL") == 0);
    CHECK(strcmp(lk_status_string(12345), "LK_ERROR_UNKNOWN_STATUS") == 0);

    lk_context *context = (lk_context *)1;
    char error[256] = "";
    CHECK(lk_context_create(7, 0, &context, error, sizeof error) == LK_ERROR_INVALID_ARGUMENT);
    CHECK(context == NULL);
    CHECK(strstr(error, "compute units") != NULL);
    CHECK(lk_context_create(LK_COMPUTE_CPU, -1, &context, error, sizeof error) == LK_ERROR_INVALID_ARGUMENT);

    CHECK(lk_context_create(LK_COMPUTE_CPU, 1, &context, error, sizeof error) == LK_OK);
    int32_t uses_gpu = -1;
    CHECK_OK(context, lk_context_uses_gpu(context, &uses_gpu));
    CHECK(uses_gpu == 0);
    CHECK(strcmp(lk_context_last_error(context), "") == 0);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_context_uses_gpu(context, NULL));
    CHECK(strstr(lk_context_last_error(context), "NULL") != NULL);
    lk_context_destroy(context);
    lk_context_destroy(NULL);
    return check_finish("test_version");
}
