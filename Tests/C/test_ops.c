/* The op catalog by index (lk_op_*): every op by name, each op's parameter
 * names as the ONNX spec names them, a formula's value names
 * (lk_formula_value_*), and errors for bad indices and names. */
#include <string.h>

#include "check.h"

/* Whether op `op` has exactly the parameters `expected` (`count` of them), in order. */
static int has_parameters(lk_context *context, const char *op, const char *const *expected, size_t count) {
    size_t actual = 99;
    if (lk_op_parameter_count(context, op, &actual) != LK_OK || actual != count) return 0;
    for (size_t i = 0; i < count; i++) {
        char name[64];
        if (lk_op_parameter_name(context, op, i, name, sizeof name, NULL) != LK_OK || strcmp(name, expected[i]) != 0)
            return 0;
    }
    return 1;
}

int main(void) {
    lk_context *context = NULL;
    char error[256] = "";
    CHECK(lk_context_create(LK_COMPUTE_CPU, 1, &context, error, sizeof error) == LK_OK);

    size_t count = 0;
    CHECK_OK(context, lk_op_count(context, &count));
    CHECK(count >= 30);
    int found_relu = 0, found_gelu = 0;
    char first[64] = "";
    for (size_t i = 0; i < count; i++) {
        char name[64];
        size_t length = 0;
        CHECK_OK(context, lk_op_name(context, i, name, sizeof name, &length));
        CHECK(length == strlen(name));
        if (i == 0) strcpy(first, name);
        found_relu |= strcmp(name, "Relu") == 0;
        found_gelu |= strcmp(name, "Gelu") == 0;
        /* Every listed op is one lk_layer_create's lookup finds. */
        size_t parameters = 0;
        CHECK_OK(context, lk_op_parameter_count(context, name, &parameters));
    }
    CHECK(strcmp(first, "Swish") == 0);
    CHECK(found_relu && found_gelu);

    static const char *const swish[] = {"beta"};
    static const char *const selu[] = {"alpha", "gamma"};
    static const char *const gelu[] = {"approximate"};
    CHECK(has_parameters(context, "Swish", swish, 1));
    CHECK(has_parameters(context, "selu", selu, 2)); /* names are case-insensitive */
    CHECK(has_parameters(context, "Gelu", gelu, 1));
    CHECK(has_parameters(context, "PRelu", NULL, 0)); /* slope is a weight only */
    CHECK(has_parameters(context, "Relu", NULL, 0));

    char small[4];
    size_t length = 0;
    CHECK_STATUS(context, LK_ERROR_BUFFER_TOO_SMALL, lk_op_parameter_name(context, "Selu", 1, small, sizeof small, &length));
    CHECK(length == 5 && strcmp(small, "gam") == 0);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_op_name(context, count, small, sizeof small, NULL));
    CHECK(strstr(lk_context_last_error(context), "out of range") != NULL);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_op_parameter_name(context, "Swish", 1, small, sizeof small, NULL));
    CHECK_STATUS(context, LK_ERROR_UNKNOWN_OP, lk_op_parameter_count(context, "NoSuchOp", &count));
    CHECK(strstr(lk_context_last_error(context), "NoSuchOp") != NULL);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_op_parameter_count(context, NULL, &count));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_op_count(context, NULL));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_op_count(NULL, &count));
    /* A formula's values, in the order of first use: not x, not the functions,
     * not the digits of a number's exponent, each once. */
    const char *formula = "a * tanh(softplus(x)) + where(x >= 1e-3, b, a) * c_2";
    static const char *const values[] = {"a", "b", "c_2"};
    CHECK_OK(context, lk_formula_value_count(context, formula, &count));
    CHECK(count == 3);
    for (size_t i = 0; i < 3 && i < count; i++) {
        char name[16];
        CHECK_OK(context, lk_formula_value_name(context, formula, i, name, sizeof name, &length));
        CHECK(strcmp(name, values[i]) == 0 && length == strlen(values[i]));
    }
    CHECK_OK(context, lk_formula_value_count(context, "x * 2", &count));
    CHECK(count == 0);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_formula_value_name(context, formula, 3, small, sizeof small, NULL));
    CHECK(strstr(lk_context_last_error(context), "out of range") != NULL);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_formula_value_count(context, "x +* 2", &count));
    CHECK(strstr(lk_context_last_error(context), "formula column") != NULL);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_formula_value_count(context, NULL, &count));
    lk_context_destroy(context);
    return check_finish("test_ops");
}
