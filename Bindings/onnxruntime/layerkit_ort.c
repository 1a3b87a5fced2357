/*
 * liblayerkit_ort.so: LayerKit's ops as an onnxruntime custom-op library.
 *
 * RegisterCustomOps adds the domain "layerkit" to a session's options: every
 * op of LayerKit's catalog by name (lk_op_count / lk_op_name, so the list
 * cannot drift from LayerKit's), and "Formula". The node forms are those of
 * LayerKit's own ONNX importer:
 *   - a catalog op's numeric attributes are its parameters (Swish's beta);
 *   - its further inputs are its per-channel weights, in the op's weight
 *     order (a Swish whose beta is a second input, one value per channel);
 *   - Formula takes the string attribute "formula" over x (as `layerkit run
 *     --layer Formula=...` does): each other name in it is a scalar when the
 *     node has a numeric attribute of that name, else a per-channel weight,
 *     the further input of that name.
 * The ops run on the CPU execution provider, evaluated by LayerKit's CPU
 * evaluator through the C API (include/layerkit.h) in one CPU context that
 * every session shares. onnxruntime may call Compute from several threads
 * at once on one kernel: lk_layer_apply is safe for that, and the layers
 * made for a node's weights are shared under the kernel's lock.
 *
 * Built against onnxruntime 1.21's headers (ORT_API_VERSION 21), the oldest
 * it supports; newer runtimes serve that API version too.
 */
#include <onnxruntime_c_api.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layerkit.h"

/* The only symbol the library exports (built with -fvisibility=hidden and layerkit_ort.map). */
__attribute__((visibility("default"))) OrtStatus *ORT_API_CALL RegisterCustomOps(OrtSessionOptions *options,
                                                                                const OrtApiBase *api_base);

#define DOMAIN_NAME "layerkit"
#define FORMULA_OP "Formula"

/* ---- State shared by every session ------------------------------------------ */

static const OrtApi *ort;
/* The CPU context every kernel runs on, and the domain of every op. Made by
 * the first RegisterCustomOps and kept while the library is loaded:
 * onnxruntime holds the ops by pointer for as long as its sessions live. */
static lk_context *context;
static OrtCustomOpDomain *domain;
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;

/* One op of the domain. `base` comes first, so onnxruntime's OrtCustomOp
 * pointer is this op's. */
typedef struct {
    OrtCustomOp base;
    char *name;
    int is_formula;
    /* A catalog op's parameter names (lk_op_parameter_name), read from the
     * node's attributes. */
    char **parameters;
    size_t parameter_count;
} op_type;

/* A layer made for one set of per-channel weights, shared by the Compute
 * calls that pass those weights; freed when the last user and the kernel's
 * cache let go of it. */
typedef struct {
    lk_layer *layer;
    size_t users;
    size_t weight_count;
    size_t *counts;
    float *values; /* the weights, one array after another */
} weighted_layer;

/* One node's kernel: how to make its layer, and the layers made. */
typedef struct {
    const op_type *op;
    char *node; /* "layerkit.Op node 'name'", for messages */
    size_t input_count;
    /* The scalars (from the attributes) and, for a formula, the weight names. */
    char *formula;
    char **names;
    double *values;
    size_t count;
    char **weight_names;
    size_t weight_count;
    /* The layer without weights, made when the session is created, so a
     * bad attribute fails there; used by nodes with one input. */
    lk_layer *plain;
    pthread_mutex_t lock;
    weighted_layer *cached; /* the last weights' layer (one user: the cache) */
} kernel_state;

/* ---- Errors ----------------------------------------------------------------- */

/* A status with a printf-style message (never NULL: onnxruntime returns its
 * own out-of-memory status when a message cannot be made). */
static OrtStatus *fail(OrtErrorCode code, const char *format, ...) {
    char small[512];
    va_list args;
    va_start(args, format);
    int length = vsnprintf(small, sizeof small, format, args);
    va_end(args);
    if (length < 0) return ort->CreateStatus(code, format);
    if ((size_t)length < sizeof small) return ort->CreateStatus(code, small);
    char *large = malloc((size_t)length + 1);
    if (!large) return ort->CreateStatus(code, small);
    va_start(args, format);
    vsnprintf(large, (size_t)length + 1, format, args);
    va_end(args);
    OrtStatus *status = ort->CreateStatus(code, large);
    free(large);
    return status;
}

/* The status of a failed LayerKit call: LayerKit's message (this thread's
 * last error on the context), after `what`. */
static OrtStatus *layerkit_failure(const char *what, lk_status status) {
    OrtErrorCode code = status == LK_ERROR_INVALID_ARGUMENT || status == LK_ERROR_SHAPE ||
                                status == LK_ERROR_WEIGHTS || status == LK_ERROR_UNKNOWN_OP
                            ? ORT_INVALID_ARGUMENT
                            : ORT_FAIL;
    return fail(code, "%s: %s (%s)", what, lk_context_last_error(context), lk_status_string(status));
}

static char *copy_string(const char *text) {
    size_t size = strlen(text) + 1;
    char *copy = malloc(size);
    if (copy) memcpy(copy, text, size);
    return copy;
}

static void free_strings(char **strings, size_t count) {
    if (!strings) return;
    for (size_t i = 0; i < count; i++) free(strings[i]);
    free(strings);
}

/* ---- Attributes --------------------------------------------------------------- */

/* Refuses a string onnxruntime gave with its `size` (its length and a NUL)
 * that holds a NUL before its end: the C API takes NUL-terminated strings,
 * so LayerKit would see only the part before it ("x*2\0+1" as "x*2"). */
static OrtStatus *refuse_nul(const char *node, const char *what, const char *text, size_t size) {
    size_t length = strlen(text);
    if (size > 0 && length < size - 1)
        return fail(ORT_INVALID_ARGUMENT, "%s: %s holds a NUL byte at byte %zu; LayerKit takes strings without NULs",
                    node, what, length);
    return NULL;
}

/* The node's string attribute `name` (malloc'd) in `*out`, or NULL there
 * when it has none of that name and type; an embedded NUL is an error. */
static OrtStatus *string_attribute(const kernel_state *kernel, const OrtKernelInfo *info, const char *name,
                                   char **out) {
    *out = NULL;
    size_t size = 0;
    OrtStatus *status = ort->KernelInfoGetAttribute_string(info, name, NULL, &size);
    if (status) {
        ort->ReleaseStatus(status);
        return NULL;
    }
    char *text = malloc(size + 1);
    if (!text) return fail(ORT_FAIL, "%s: out of memory", kernel->node);
    if ((status = ort->KernelInfoGetAttribute_string(info, name, text, &size))) {
        free(text);
        return status;
    }
    text[size] = '\0';
    char what[256];
    snprintf(what, sizeof what, "attribute '%s'", name);
    if ((status = refuse_nul(kernel->node, what, text, size))) {
        free(text);
        return status;
    }
    *out = text;
    return NULL;
}

/* Whether `status` (released here) says the attribute exists with another
 * type, rather than that the node has none of that name. onnxruntime's C
 * API cannot list a node's attributes or read every type (STRINGS, GRAPH),
 * so its message is what tells the two apart. */
static int other_type(OrtStatus *status) {
    int exists = strstr(ort->GetErrorMessage(status), "No attribute") == NULL;
    ort->ReleaseStatus(status);
    return exists;
}

/* A TENSOR attribute as one number: 1 when it holds one float32 or float64
 * element (into `value`), 0 when it is a tensor of another kind, -1 when
 * the node has no TENSOR attribute `name`. */
static int tensor_number(const OrtKernelInfo *info, const char *name, double *value) {
    OrtAllocator *allocator = NULL;
    OrtValue *tensor = NULL;
    OrtStatus *status = ort->GetAllocatorWithDefaultOptions(&allocator);
    if (!status) status = ort->KernelInfoGetAttribute_tensor(info, name, allocator, &tensor);
    if (status) {
        ort->ReleaseStatus(status);
        return -1;
    }
    OrtTensorTypeAndShapeInfo *shape = NULL;
    ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    size_t count = 0;
    void *data = NULL;
    int found = 0;
    if (!(status = ort->GetTensorTypeAndShape(tensor, &shape)) && !(status = ort->GetTensorElementType(shape, &type)) &&
        !(status = ort->GetTensorShapeElementCount(shape, &count)) && count == 1 &&
        (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || type == ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE) &&
        !(status = ort->GetTensorMutableData(tensor, &data))) {
        *value = type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT ? *(const float *)data : *(const double *)data;
        found = 1;
    }
    if (status) ort->ReleaseStatus(status);
    if (shape) ort->ReleaseTensorTypeAndShapeInfo(shape);
    ort->ReleaseValue(tensor);
    return found;
}

/* A FLOATS or INTS attribute as one number: 1 when it holds one value
 * (into `value`), 0 when it holds several, -1 when the node has no such
 * list `name` (or an empty one: some onnxruntime versions read an attribute
 * of any type as an empty list). */
static int list_number(const OrtKernelInfo *info, const char *name, double *value) {
    size_t count = 0;
    float real;
    int64_t integer;
    OrtStatus *status = ort->KernelInfoGetAttributeArray_float(info, name, NULL, &count);
    if (!status && count == 1 && !(status = ort->KernelInfoGetAttributeArray_float(info, name, &real, &count)))
        return *value = real, 1;
    if (status) ort->ReleaseStatus(status);
    if (count > 1) return 0;
    count = 0;
    status = ort->KernelInfoGetAttributeArray_int64(info, name, NULL, &count);
    if (!status && count == 1 && !(status = ort->KernelInfoGetAttributeArray_int64(info, name, &integer, &count)))
        return *value = (double)integer, 1;
    if (status) ort->ReleaseStatus(status);
    return count > 1 ? 0 : -1;
}

/* The node's attribute `name` as one number, in the forms ONNX lets a
 * scalar take: FLOAT, INT, FLOATS or INTS of one value, or a TENSOR of one
 * float. `*found` is 0 when the node has no attribute of that name; one of
 * any other type or count is refused by name, never replaced by the
 * parameter's default. */
static OrtStatus *numeric_attribute(const kernel_state *kernel, const OrtKernelInfo *info, const char *name,
                                    int *found, double *value) {
    *found = 1;
    float real;
    int64_t integer;
    OrtStatus *status = ort->KernelInfoGetAttribute_float(info, name, &real);
    if (!status) return *value = real, NULL;
    ort->ReleaseStatus(status);
    if (!(status = ort->KernelInfoGetAttribute_int64(info, name, &integer))) return *value = (double)integer, NULL;
    ort->ReleaseStatus(status);
    int tensor = tensor_number(info, name, value);
    int list = tensor == -1 ? list_number(info, name, value) : -1;
    if (tensor == 1 || list == 1) return NULL;
    const char *form = tensor == 0 ? "a TENSOR that is not one float" : list == 0 ? "a list of several values" : NULL;
    char *text = NULL;
    if (!form && (status = string_attribute(kernel, info, name, &text))) return status;
    if (text) {
        /* lk_layer_create takes numbers only, so a word choice (Gelu's
         * approximate) cannot be passed on. */
        status = fail(ORT_INVALID_ARGUMENT,
                      "%s: attribute '%s' is the string '%s'; LayerKit's C API takes numeric parameters only",
                      kernel->node, name, text);
        free(text);
        return status;
    }
    if (!form && !other_type(ort->KernelInfoGetAttribute_float(info, name, &real))) return *found = 0, NULL;
    return fail(ORT_INVALID_ARGUMENT,
                "%s: attribute '%s' is %s; a parameter is one number (FLOAT, INT, FLOATS or INTS of one value, "
                "or a TENSOR of one float)",
                kernel->node, name, form ? form : "not a number");
}

/* ---- Strings from the C API --------------------------------------------------- */

/* A string the C API writes (lk_op_name, lk_op_parameter_name, lk_formula_value_name),
 * malloc'd; a failure is LayerKit's message after `what`. */
typedef lk_status (*string_getter)(size_t index, const char *op, char *buffer, size_t capacity, size_t *length);

static lk_status get_op_name(size_t index, const char *op, char *buffer, size_t capacity, size_t *length) {
    (void)op;
    return lk_op_name(context, index, buffer, capacity, length);
}

static lk_status get_parameter_name(size_t index, const char *op, char *buffer, size_t capacity, size_t *length) {
    return lk_op_parameter_name(context, op, index, buffer, capacity, length);
}

static lk_status get_formula_value_name(size_t index, const char *formula, char *buffer, size_t capacity,
                                        size_t *length) {
    return lk_formula_value_name(context, formula, index, buffer, capacity, length);
}

static OrtStatus *api_string(string_getter get, size_t index, const char *op, const char *what, char **out) {
    size_t length = 0;
    char probe[1];
    lk_status status = get(index, op, probe, sizeof probe, &length);
    if (status != LK_OK && status != LK_ERROR_BUFFER_TOO_SMALL) return layerkit_failure(what, status);
    *out = malloc(length + 1);
    if (!*out) return fail(ORT_FAIL, "%s: out of memory", what);
    if ((status = get(index, op, *out, length + 1, &length)) != LK_OK) {
        free(*out);
        *out = NULL;
        return layerkit_failure(what, status);
    }
    return NULL;
}

/* ---- Kernels ------------------------------------------------------------------- */

/* Makes the node's layer (no weights set). */
static lk_status make_layer(const kernel_state *kernel, lk_layer **out) {
    const char *const *names = (const char *const *)kernel->names;
    if (kernel->op->is_formula)
        return lk_layer_create_formula(context, kernel->formula, names, kernel->values, kernel->count,
                                       (const char *const *)kernel->weight_names, kernel->weight_count, out);
    return lk_layer_create(context, kernel->op->name, names, kernel->values, kernel->count, out);
}

static void free_weighted(weighted_layer *entry) {
    if (!entry) return;
    lk_layer_destroy(entry->layer);
    free(entry->counts);
    free(entry->values);
    free(entry);
}

static void kernel_free(kernel_state *kernel) {
    if (!kernel) return;
    lk_layer_destroy(kernel->plain);
    free_weighted(kernel->cached);
    pthread_mutex_destroy(&kernel->lock);
    free(kernel->node);
    free(kernel->formula);
    free_strings(kernel->names, kernel->count);
    free(kernel->values);
    free_strings(kernel->weight_names, kernel->weight_count);
    free(kernel);
}

/* Reads the node's attributes as the op's parameters (a formula's: its
 * scalars and weight names). */
static OrtStatus *read_recipe(kernel_state *kernel, const OrtKernelInfo *info) {
    const op_type *op = kernel->op;
    char **candidates = NULL;
    size_t candidate_count = 0;
    if (op->is_formula) {
        OrtStatus *read = string_attribute(kernel, info, "formula", &kernel->formula);
        if (read) return read;
        if (!kernel->formula) return fail(ORT_INVALID_ARGUMENT, "%s: needs a string attribute 'formula'", kernel->node);
        /* The formula's values, by LayerKit's parser: the attributes to look for. */
        lk_status counted = lk_formula_value_count(context, kernel->formula, &candidate_count);
        if (counted != LK_OK) return layerkit_failure(kernel->node, counted);
        candidates = calloc(candidate_count + 1, sizeof *candidates);
        if (!candidates) return fail(ORT_FAIL, "%s: out of memory", kernel->node);
        for (size_t i = 0; i < candidate_count; i++) {
            OrtStatus *listed = api_string(get_formula_value_name, i, kernel->formula, kernel->node, &candidates[i]);
            if (listed) {
                free_strings(candidates, candidate_count);
                return listed;
            }
        }
    } else {
        candidates = op->parameters;
        candidate_count = op->parameter_count;
    }
    OrtStatus *status = NULL;
    kernel->names = calloc(candidate_count + 1, sizeof *kernel->names);
    kernel->values = calloc(candidate_count + 1, sizeof *kernel->values);
    if (!kernel->names || !kernel->values) status = fail(ORT_FAIL, "%s: out of memory", kernel->node);
    for (size_t i = 0; !status && i < candidate_count; i++) {
        const char *name = candidates[i];
        double value = 0;
        int found = 0;
        status = numeric_attribute(kernel, info, name, &found, &value);
        if (!status && found) {
            kernel->values[kernel->count] = value;
            if (!(kernel->names[kernel->count++] = copy_string(name))) status = fail(ORT_FAIL, "%s: out of memory", kernel->node);
        }
    }
    if (op->is_formula) free_strings(candidates, candidate_count);
    if (!status && op->is_formula) {
        /* The further inputs are the weights their names name; LayerKit
         * says which formula name has no value. */
        kernel->weight_names = calloc(kernel->input_count, sizeof *kernel->weight_names);
        if (!kernel->weight_names) return fail(ORT_FAIL, "%s: out of memory", kernel->node);
        for (size_t i = 1; !status && i < kernel->input_count; i++) {
            size_t size = 0;
            char *name = NULL;
            status = ort->KernelInfo_GetInputName(info, i, NULL, &size);
            if (!status && !(name = calloc(size + 1, 1))) status = fail(ORT_FAIL, "%s: out of memory", kernel->node);
            if (!status) status = ort->KernelInfo_GetInputName(info, i, name, &size);
            /* The name is the weight's name in LayerKit: cut at a NUL, it would name another. */
            if (!status) status = refuse_nul(kernel->node, "a weight input's name", name, size);
            if (status) free(name);
            else kernel->weight_names[kernel->weight_count++] = name;
        }
    }
    return status;
}

static OrtStatus *ORT_API_CALL kernel_create(const OrtCustomOp *base, const OrtApi *api, const OrtKernelInfo *info,
                                             void **out) {
    (void)api;
    const op_type *op = (const op_type *)base;
    *out = NULL;
    kernel_state *kernel = calloc(1, sizeof *kernel);
    if (!kernel) return fail(ORT_FAIL, "layerkit.%s: out of memory", op->name);
    kernel->op = op;
    pthread_mutex_init(&kernel->lock, NULL);

    size_t size = 0;
    char *name = NULL;
    OrtStatus *status = ort->KernelInfo_GetNodeName(info, NULL, &size);
    if (!status && (name = calloc(size + 1, 1))) status = ort->KernelInfo_GetNodeName(info, name, &size);
    if (status) {
        ort->ReleaseStatus(status);
        status = NULL;
    }
    size_t length = strlen(op->name) + (name ? strlen(name) : 0) + 32;
    kernel->node = malloc(length);
    if (kernel->node) snprintf(kernel->node, length, DOMAIN_NAME ".%s node '%s'", op->name, name ? name : "");
    free(name);
    if (!kernel->node) status = fail(ORT_FAIL, "layerkit.%s: out of memory", op->name);

    if (!status) status = ort->KernelInfo_GetInputCount(info, &kernel->input_count);
    if (!status) status = read_recipe(kernel, info);
    if (!status) {
        lk_status made = make_layer(kernel, &kernel->plain);
        if (made != LK_OK) status = layerkit_failure(kernel->node, made);
    }
    if (status) {
        kernel_free(kernel);
        return status;
    }
    *out = kernel;
    return NULL;
}

static void ORT_API_CALL kernel_destroy(void *state) { kernel_free(state); }

/* Drops one user of `entry`, freeing it with the last. */
static void release_weighted(kernel_state *kernel, weighted_layer *entry) {
    pthread_mutex_lock(&kernel->lock);
    int last = --entry->users == 0;
    pthread_mutex_unlock(&kernel->lock);
    if (last) free_weighted(entry);
}

static int same_weights(const weighted_layer *entry, size_t weight_count, const float *const *weights,
                        const size_t *counts) {
    if (entry->weight_count != weight_count) return 0;
    const float *values = entry->values;
    for (size_t i = 0; i < weight_count; i++) {
        if (entry->counts[i] != counts[i] || memcmp(values, weights[i], counts[i] * sizeof(float)) != 0) return 0;
        values += counts[i];
    }
    return 1;
}

/* The layer for `weights`, one user taken: the cached one when it has these
 * weights, else a new one, which then replaces it in the cache. */
static OrtStatus *acquire_weighted(kernel_state *kernel, size_t weight_count, const float *const *weights,
                                   const size_t *counts, weighted_layer **out) {
    pthread_mutex_lock(&kernel->lock);
    weighted_layer *cached = kernel->cached;
    if (cached && same_weights(cached, weight_count, weights, counts)) {
        cached->users++;
        pthread_mutex_unlock(&kernel->lock);
        *out = cached;
        return NULL;
    }
    pthread_mutex_unlock(&kernel->lock);

    size_t total = 0;
    for (size_t i = 0; i < weight_count; i++) total += counts[i];
    weighted_layer *entry = calloc(1, sizeof *entry);
    if (!entry) return fail(ORT_FAIL, "%s: out of memory", kernel->node);
    entry->users = 1;
    entry->weight_count = weight_count;
    entry->counts = malloc(weight_count * sizeof *entry->counts);
    entry->values = malloc((total ? total : 1) * sizeof *entry->values);
    if (!entry->counts || !entry->values) {
        free_weighted(entry);
        return fail(ORT_FAIL, "%s: out of memory", kernel->node);
    }
    float *values = entry->values;
    for (size_t i = 0; i < weight_count; i++) {
        entry->counts[i] = counts[i];
        if (counts[i]) memcpy(values, weights[i], counts[i] * sizeof(float));
        values += counts[i];
    }
    lk_status status = make_layer(kernel, &entry->layer);
    if (status == LK_OK) status = lk_layer_set_weights(context, entry->layer, weights, counts, weight_count);
    if (status != LK_OK) {
        OrtStatus *failure = layerkit_failure(kernel->node, status);
        free_weighted(entry);
        return failure;
    }
    pthread_mutex_lock(&kernel->lock);
    weighted_layer *old = kernel->cached;
    kernel->cached = entry;
    entry->users++;
    int free_old = old && --old->users == 0;
    pthread_mutex_unlock(&kernel->lock);
    if (free_old) free_weighted(old);
    *out = entry;
    return NULL;
}

/* Input `index`'s float data, dims and element count. */
static OrtStatus *read_input(const kernel_state *kernel, OrtKernelContext *ort_context, size_t index,
                             const float **data, int64_t *dims, size_t *rank, size_t *count) {
    const OrtValue *value = NULL;
    OrtStatus *status = ort->KernelContext_GetInput(ort_context, index, &value);
    if (status) return status;
    if (!value) return fail(ORT_INVALID_ARGUMENT, "%s: input %zu is missing", kernel->node, index);
    OrtTensorTypeAndShapeInfo *info = NULL;
    if ((status = ort->GetTensorTypeAndShape(value, &info))) return status;
    ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    if (!(status = ort->GetTensorElementType(info, &type)) && !(status = ort->GetDimensionsCount(info, rank))) {
        if (type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)
            status = fail(ORT_INVALID_ARGUMENT, "%s: input %zu is not float32", kernel->node, index);
        else if (*rank > LK_MAX_RANK)
            status = fail(ORT_INVALID_ARGUMENT, "%s: input %zu has rank %zu; LayerKit takes rank %d at most",
                          kernel->node, index, *rank, LK_MAX_RANK);
        else if (!(status = ort->GetDimensions(info, dims, *rank)))
            status = ort->GetTensorShapeElementCount(info, count);
    }
    ort->ReleaseTensorTypeAndShapeInfo(info);
    if (status) return status;
    void *pointer = NULL;
    /* GetTensorData (const) is newer than API 21; the data is only read. */
    if ((status = ort->GetTensorMutableData((OrtValue *)value, &pointer))) return status;
    *data = pointer;
    return NULL;
}

/* Runs `layer` on x (`dims`, `rank`; a scalar goes to LayerKit as [1]) into output 0. */
static OrtStatus *run_layer(const kernel_state *kernel, OrtKernelContext *ort_context, lk_layer *layer,
                            const float *x, const int64_t *dims, size_t rank) {
    static const int64_t scalar[1] = {1};
    lk_tensor *input = NULL, *output = NULL;
    size_t made = 0, output_rank = 0, count = 0;
    int64_t output_dims[LK_MAX_RANK];
    OrtStatus *failure = NULL;
    lk_status status = lk_tensor_create(context, rank ? dims : scalar, rank ? rank : 1, x, &input);
    if (status == LK_OK) status = lk_layer_apply(context, layer, (const lk_tensor *const *)&input, 1, &output, 1, &made, NULL);
    if (status == LK_OK && made != 1) {
        failure = fail(ORT_FAIL, "%s: LayerKit's layer made %zu outputs, not 1", kernel->node, made);
    } else if (status == LK_OK) {
        status = lk_tensor_shape(context, output, output_dims, LK_MAX_RANK, &output_rank);
        if (status == LK_OK) status = lk_tensor_element_count(context, output, &count);
    }
    if (status == LK_OK && !failure) {
        OrtValue *value = NULL;
        void *data = NULL;
        /* A scalar's output is a scalar too (LayerKit's [1]). */
        int scalar_out = rank == 0 && output_rank == 1 && output_dims[0] == 1;
        failure = ort->KernelContext_GetOutput(ort_context, 0, scalar_out ? dims : output_dims,
                                               scalar_out ? 0 : output_rank, &value);
        if (!failure) failure = ort->GetTensorMutableData(value, &data);
        if (!failure) status = lk_tensor_read(context, output, data, count);
    }
    if (status != LK_OK && !failure) failure = layerkit_failure(kernel->node, status);
    lk_tensor_destroy(input);
    lk_tensor_destroy(output);
    return failure;
}

static OrtStatus *ORT_API_CALL kernel_compute(void *state, OrtKernelContext *ort_context) {
    kernel_state *kernel = state;
    size_t input_count = 0;
    OrtStatus *status = ort->KernelContext_GetInputCount(ort_context, &input_count);
    if (status) return status;
    if (input_count == 0) return fail(ORT_INVALID_ARGUMENT, "%s: needs an input", kernel->node);

    const float *x = NULL;
    int64_t dims[LK_MAX_RANK];
    size_t rank = 0, count = 0;
    if ((status = read_input(kernel, ort_context, 0, &x, dims, &rank, &count))) return status;

    size_t weight_count = input_count - 1;
    const float **weights = calloc(weight_count + 1, sizeof *weights);
    size_t *counts = calloc(weight_count + 1, sizeof *counts);
    if (!weights || !counts) status = fail(ORT_FAIL, "%s: out of memory", kernel->node);
    for (size_t i = 0; !status && i < weight_count; i++) {
        int64_t weight_dims[LK_MAX_RANK];
        size_t weight_rank = 0;
        status = read_input(kernel, ort_context, i + 1, &weights[i], weight_dims, &weight_rank, &counts[i]);
    }
    if (!status && count == 0) {
        /* LayerKit's tensors have no empty dims: an empty input gives an empty output. */
        OrtValue *value = NULL;
        status = ort->KernelContext_GetOutput(ort_context, 0, dims, rank, &value);
    } else if (!status && weight_count == 0) {
        status = run_layer(kernel, ort_context, kernel->plain, x, dims, rank);
    } else if (!status) {
        weighted_layer *entry = NULL;
        status = acquire_weighted(kernel, weight_count, weights, counts, &entry);
        if (!status) {
            status = run_layer(kernel, ort_context, entry->layer, x, dims, rank);
            release_weighted(kernel, entry);
        }
    }
    free(weights);
    free(counts);
    return status;
}

/* ---- The ops' callbacks ---------------------------------------------------------- */

static const char *ORT_API_CALL op_name(const OrtCustomOp *base) { return ((const op_type *)base)->name; }

static const char *ORT_API_CALL op_provider(const OrtCustomOp *base) {
    (void)base;
    return "CPUExecutionProvider";
}

static ONNXTensorElementDataType ORT_API_CALL op_float_type(const OrtCustomOp *base, size_t index) {
    (void)base, (void)index;
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
}

static size_t ORT_API_CALL op_one(const OrtCustomOp *base) {
    (void)base;
    return 1;
}

/* One input, variadic: x, then the weights. */
static OrtCustomOpInputOutputCharacteristic ORT_API_CALL op_input_characteristic(const OrtCustomOp *base,
                                                                                 size_t index) {
    (void)base, (void)index;
    return INPUT_OUTPUT_VARIADIC;
}

static OrtCustomOpInputOutputCharacteristic ORT_API_CALL op_output_characteristic(const OrtCustomOp *base,
                                                                                  size_t index) {
    (void)base, (void)index;
    return INPUT_OUTPUT_REQUIRED;
}

static OrtMemType ORT_API_CALL op_memory_type(const OrtCustomOp *base, size_t index) {
    (void)base, (void)index;
    return OrtMemTypeDefault;
}

static int ORT_API_CALL op_min_arity(const OrtCustomOp *base) {
    (void)base;
    return 1;
}

static int ORT_API_CALL op_homogeneous(const OrtCustomOp *base) {
    (void)base;
    return 1;
}

/* The output has x's type and shape (every op is per element). */
static OrtStatus *ORT_API_CALL op_infer_shape(const OrtCustomOp *base, OrtShapeInferContext *infer) {
    (void)base;
    OrtTensorTypeAndShapeInfo *info = NULL;
    OrtStatus *status = ort->ShapeInferContext_GetInputTypeShape(infer, 0, &info);
    if (status) {
        /* An input of unknown shape leaves the output's unknown. */
        ort->ReleaseStatus(status);
        return NULL;
    }
    /* `info` is the context's own (it frees it). */
    return ort->ShapeInferContext_SetOutputTypeShape(infer, 0, info);
}

static size_t ORT_API_CALL op_no_map(int **input_index, int **output_index) {
    *input_index = NULL;
    *output_index = NULL;
    return 0;
}

static void ORT_API_CALL op_release_map(int *input_index, int *output_index) { (void)input_index, (void)output_index; }

static void *ORT_API_CALL op_create_kernel_v1(const OrtCustomOp *base, const OrtApi *api, const OrtKernelInfo *info) {
    /* Not called: onnxruntime uses CreateKernelV2 at this version. */
    (void)base, (void)api, (void)info;
    return NULL;
}

static void ORT_API_CALL op_compute_v1(void *state, OrtKernelContext *ort_context) { (void)state, (void)ort_context; }

/* Fills `op` as op type `name`, owning `name` and `parameters`. */
static void op_init(op_type *op, char *name, int is_formula, char **parameters, size_t parameter_count) {
    memset(op, 0, sizeof *op);
    op->name = name;
    op->is_formula = is_formula;
    op->parameters = parameters;
    op->parameter_count = parameter_count;
    OrtCustomOp *base = &op->base;
    base->version = ORT_API_VERSION;
    base->CreateKernel = op_create_kernel_v1;
    base->GetName = op_name;
    base->GetExecutionProviderType = op_provider;
    base->GetInputType = op_float_type;
    base->GetInputTypeCount = op_one;
    base->GetOutputType = op_float_type;
    base->GetOutputTypeCount = op_one;
    base->KernelCompute = op_compute_v1;
    base->KernelDestroy = kernel_destroy;
    base->GetInputCharacteristic = op_input_characteristic;
    base->GetOutputCharacteristic = op_output_characteristic;
    base->GetInputMemoryType = op_memory_type;
    base->GetVariadicInputMinArity = op_min_arity;
    base->GetVariadicInputHomogeneity = op_homogeneous;
    base->GetVariadicOutputMinArity = op_min_arity;
    base->GetVariadicOutputHomogeneity = op_homogeneous;
    base->CreateKernelV2 = kernel_create;
    base->KernelComputeV2 = kernel_compute;
    base->InferOutputShapeFn = op_infer_shape;
    base->GetMayInplace = op_no_map;
    base->ReleaseMayInplace = op_release_map;
    base->GetAliasMap = op_no_map;
    base->ReleaseAliasMap = op_release_map;
}

/* ---- Registration ------------------------------------------------------------------ */

/* One op type of the catalog: its name and parameter names from the C API. */
static OrtStatus *catalog_op(size_t index, op_type *op) {
    char *name = NULL;
    OrtStatus *status = api_string(get_op_name, index, NULL, "liblayerkit_ort", &name);
    if (status) return status;
    size_t count = 0;
    lk_status listed = lk_op_parameter_count(context, name, &count);
    if (listed != LK_OK) {
        free(name);
        return layerkit_failure("liblayerkit_ort", listed);
    }
    char **parameters = calloc(count + 1, sizeof *parameters);
    if (!parameters) status = fail(ORT_FAIL, "liblayerkit_ort: out of memory");
    for (size_t i = 0; !status && i < count; i++)
        status = api_string(get_parameter_name, i, name, "liblayerkit_ort", &parameters[i]);
    if (status) {
        free(name);
        free_strings(parameters, count);
        return status;
    }
    op_init(op, name, 0, parameters, count);
    return NULL;
}

/* The context and the domain, made once. */
static OrtStatus *set_up(void) {
    if (domain) return NULL;
    if (!context) {
        /* LayerKit's own threads per Compute call (onnxruntime runs nodes on its own). */
        const char *variable = getenv("LAYERKIT_ORT_THREADS");
        int32_t threads = variable && *variable ? (int32_t)strtol(variable, NULL, 10) : 1;
        char message[1024] = "";
        lk_status created = lk_context_create(LK_COMPUTE_CPU, threads, &context, message, sizeof message);
        if (created != LK_OK)
            return fail(ORT_FAIL, "liblayerkit_ort: LayerKit's CPU context: %s (%s)", message,
                        lk_status_string(created));
    }
    size_t count = 0;
    lk_status listed = lk_op_count(context, &count);
    if (listed != LK_OK) return layerkit_failure("liblayerkit_ort", listed);
    /* The catalog's ops and Formula; kept for the library's lifetime. */
    op_type *ops = calloc(count + 1, sizeof *ops);
    char *formula = copy_string(FORMULA_OP);
    if (!ops || !formula) {
        free(ops);
        free(formula);
        return fail(ORT_FAIL, "liblayerkit_ort: out of memory");
    }
    OrtStatus *status = NULL;
    size_t made = 0;
    for (; !status && made < count; made++) status = catalog_op(made, &ops[made]);
    if (!status) op_init(&ops[count], formula, 1, NULL, 0);
    OrtCustomOpDomain *made_domain = NULL;
    if (!status) status = ort->CreateCustomOpDomain(DOMAIN_NAME, &made_domain);
    for (size_t i = 0; !status && i <= count; i++) status = ort->CustomOpDomain_Add(made_domain, &ops[i].base);
    if (status) {
        if (made_domain) ort->ReleaseCustomOpDomain(made_domain);
        for (size_t i = 0; i < made; i++) {
            free(ops[i].name);
            free_strings(ops[i].parameters, ops[i].parameter_count);
        }
        free(ops);
        free(formula);
        return status;
    }
    domain = made_domain;
    return NULL;
}

OrtStatus *ORT_API_CALL RegisterCustomOps(OrtSessionOptions *options, const OrtApiBase *api_base) {
    const OrtApi *api = api_base->GetApi(ORT_API_VERSION);
    if (!api) {
        /* Version 1 of the API has CreateStatus in every runtime. */
        const OrtApi *oldest = api_base->GetApi(1);
        return oldest ? oldest->CreateStatus(ORT_FAIL, "liblayerkit_ort needs onnxruntime 1.21 or newer (API version "
                                                       "21)")
                      : NULL;
    }
    pthread_mutex_lock(&setup_lock);
    if (!ort) ort = api;
    OrtStatus *status = set_up();
    pthread_mutex_unlock(&setup_lock);
    if (status) return status;
    return ort->AddCustomOpDomain(options, domain);
}
