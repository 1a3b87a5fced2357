// The header from C++: it compiles as C++11 with every warning, and the
// handles hold in std::unique_ptr with their destroy functions, the way a C++
// program would use them. Swish over [-8, 8] against float64.
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "layerkit.h"

namespace {

struct ContextDeleter { void operator()(lk_context *c) const { lk_context_destroy(c); } };
struct TensorDeleter { void operator()(lk_tensor *t) const { lk_tensor_destroy(t); } };
struct LayerDeleter { void operator()(lk_layer *l) const { lk_layer_destroy(l); } };
using Context = std::unique_ptr<lk_context, ContextDeleter>;
using TensorPtr = std::unique_ptr<lk_tensor, TensorDeleter>;
using LayerPtr = std::unique_ptr<lk_layer, LayerDeleter>;

int fail(lk_context *context, const char *what) {
    std::fprintf(stderr, "test_cxx: %s failed: %s\n", what, context ? lk_context_last_error(context) : "");
    return 1;
}

}  // namespace

int main() {
    char error[256] = "";
    lk_context *raw = nullptr;
    if (lk_context_create(LK_COMPUTE_CPU, 0, &raw, error, sizeof error) != LK_OK) {
        std::fprintf(stderr, "test_cxx: no context: %s\n", error);
        return 1;
    }
    Context context(raw);

    const int64_t count = 4001;
    std::vector<float> x(count);
    for (int64_t i = 0; i < count; i++) x[i] = float(-8.0 + 16.0 * double(i) / double(count - 1));
    const int64_t shape[] = {count};
    lk_tensor *input = nullptr;
    if (lk_tensor_create(context.get(), shape, 1, x.data(), &input) != LK_OK) return fail(context.get(), "tensor");
    TensorPtr inputHolder(input);

    const char *names[] = {"beta"};
    const double values[] = {1.0};
    lk_layer *swish = nullptr;
    if (lk_layer_create(context.get(), "Swish", names, values, 1, &swish) != LK_OK) return fail(context.get(), "layer");
    LayerPtr swishHolder(swish);

    const lk_tensor *inputs[] = {input};
    lk_tensor *output = nullptr;
    size_t made = 0;
    if (lk_layer_apply(context.get(), swish, inputs, 1, &output, 1, &made, nullptr) != LK_OK) {
        return fail(context.get(), "apply");
    }
    TensorPtr outputHolder(output);
    std::vector<float> y(count);
    if (lk_tensor_read(context.get(), output, y.data(), y.size()) != LK_OK) return fail(context.get(), "read");

    double worst = 0;
    for (int64_t i = 0; i < count; i++) {
        double reference = double(x[i]) / (1.0 + std::exp(-double(x[i])));
        worst = std::fmax(worst, std::fabs(double(y[i]) - reference));
    }
    std::printf("test_cxx: Swish from C++, max abs error %.3g over %lld points (bound 1e-6)\n", worst,
                static_cast<long long>(count));

    // A typed tensor from C++: the element type constants and lk_element_type.
    const std::vector<int64_t> ids = {(int64_t(1) << 40) + 1, -7};
    const int64_t idsShape[] = {2};
    lk_tensor *typed = nullptr;
    if (lk_tensor_create_typed(context.get(), LK_INT64, idsShape, 1, ids.data(),
                               ids.size() * lk_element_type_size(LK_INT64), &typed) != LK_OK) {
        return fail(context.get(), "typed tensor");
    }
    TensorPtr typedHolder(typed);
    lk_element_type type = 0;
    std::vector<int64_t> back(2);
    if (lk_tensor_element_type(context.get(), typed, &type) != LK_OK ||
        lk_tensor_read_bytes(context.get(), typed, back.data(), back.size() * sizeof(int64_t)) != LK_OK) {
        return fail(context.get(), "typed read");
    }
    return worst <= 1e-6 && made == 1 && type == LK_INT64 && back == ids ? 0 : 1;
}
