/*
 * layerkit.h — LayerKit's C API (liblayerkit.so.1).
 *
 * Conventions, the same for every function:
 *   - Handles are opaque and made by a `*_create` or `*_load` function, and are
 *     released by the matching `*_destroy` (which accepts NULL). A handle made
 *     with a context must be destroyed before that context.
 *   - Every call that can fail returns an `lk_status`; LK_OK is 0. The message
 *     of the last failed call a thread made on a context is
 *     `lk_context_last_error(context)`. No Swift error or trap crosses this
 *     boundary: a failure is a status and a message.
 *   - No struct is passed or returned by value, and no struct is defined here:
 *     options are plain parameters, so a binding (ctypes, cffi) never depends on
 *     a field layout.
 *   - Buffers are the caller's: LayerKit copies in what it is given and writes
 *     results into memory the caller passes, never keeping a caller's pointer
 *     past the call. Strings are written as (buffer, capacity, length): at most
 *     capacity - 1 bytes and a NUL, `*length` (when not NULL) the full length;
 *     LK_ERROR_BUFFER_TOO_SMALL when it was cut. Strings passed in are
 *     NUL-terminated UTF-8: a caller whose strings carry a length must refuse
 *     one holding a NUL, which would end it early ("x*2\0+1" reads as "x*2").
 *   - Tensors are row-major (C order), of rank 1 to LK_MAX_RANK; a 4-D tensor
 *     is NCHW. A tensor has an element type (lk_element_type): float32 unless
 *     made by lk_tensor_create_typed or returned by lk_model_predict for an
 *     output of another type. Layers, parity and lk_tensor_read/write take
 *     float32 tensors only: a tensor of another type there is
 *     LK_ERROR_TYPE, never converted.
 *   - Thread safety is stated per function. "Any thread" means the call may
 *     run at the same time as any other call on the same handles.
 */
#ifndef LAYERKIT_H
#define LAYERKIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header's API. A library whose lk_api_version() differs
 * from the header a program was compiled with may lack or change functions. */
#define LK_API_VERSION 1

/* The highest tensor rank the API takes or returns. */
#define LK_MAX_RANK 8

/* ---- Handles ----------------------------------------------------------------- */

/* A context holds a backend (compute units, an open Vulkan device when asked
 * for, the CPU evaluator's threads), the custom layers registered on it, and
 * each thread's last error. */
typedef struct lk_context lk_context;
/* A tensor owned by the library: float32, or of the element type it was made
 * with (lk_tensor_element_type). */
typedef struct lk_tensor lk_tensor;
/* An op, a formula or a custom layer, with its parameters and weights. */
typedef struct lk_layer lk_layer;
/* A loaded ONNX model, planned for its context's backend. */
typedef struct lk_model lk_model;
/* Records the steps of the runs it is passed to: CPU evaluations, uploads,
 * dispatches (GPU timestamps), downloads and waits. */
typedef struct lk_profiler lk_profiler;

/* ---- Status codes --------------------------------------------------------- */

typedef int32_t lk_status;

enum {
    LK_OK = 0,
    LK_ERROR_INVALID_ARGUMENT = 1, /* a NULL handle, a bad count, a parameter out of range */
    LK_ERROR_SHAPE = 2,            /* shapes, ranks or element counts that do not fit */
    LK_ERROR_WEIGHTS = 3,          /* weights of the wrong count or kind */
    LK_ERROR_FILE = 4,             /* a file that cannot be read, parsed or written */
    LK_ERROR_UNSUPPORTED = 5,      /* a feature LayerKit does not implement */
    LK_ERROR_GPU_UNAVAILABLE = 6,  /* the GPU was asked for and cannot be used */
    LK_ERROR_UNKNOWN_OP = 7,       /* no layer is registered by that name */
    LK_ERROR_INVALID_MODEL = 8,    /* a malformed model, or one using what LayerKit cannot run */
    LK_ERROR_BUFFER_TOO_SMALL = 9, /* a caller's buffer is too small (see the conventions) */
    LK_ERROR_CALLBACK = 10,        /* a custom layer's callback returned a failure */
    LK_ERROR_INTERNAL = 11,        /* anything else; the message says what */
    LK_ERROR_TYPE = 12             /* a tensor of an element type the call does not take (the
                                      message names both types); nothing is converted */
};

/* ---- Element types ---------------------------------------------------------- */

/* The element type of a tensor: ONNX's TensorProto.DataType codes. Elements
 * are little-endian, each `lk_element_type_size` bytes, in C order:
 *   - LK_BOOL: one byte each, 0 or 1;
 *   - LK_FLOAT16, LK_BFLOAT16 and the float8/6/4 types: their bit patterns
 *     (uint16_t or uint8_t), as ONNX stores them;
 *   - the types under a byte (LK_INT4, LK_UINT4, LK_INT2, LK_UINT2,
 *     LK_FLOAT4E2M1, LK_FLOAT6E2M3, LK_FLOAT6E3M2): one byte each, the value's
 *     bits in the low bits and the others 0 (int4 -3 is 0x0D; ONNX files pack
 *     them, this API does not);
 *   - LK_COMPLEX64, LK_COMPLEX128: (real, imaginary) pairs of float32, float64.
 * LK_STRING is listed for lk_model_input_type/lk_model_output_type only:
 * tensors of strings cannot be made or read through this API
 * (LK_ERROR_UNSUPPORTED). What a model computes with is its own matter: float
 * inputs of every width are computed in float32, integer, bool inputs are
 * values it plans with (Docs/C_API.md). */
typedef int32_t lk_element_type;

enum {
    LK_FLOAT32 = 1,
    LK_UINT8 = 2,
    LK_INT8 = 3,
    LK_UINT16 = 4,
    LK_INT16 = 5,
    LK_INT32 = 6,
    LK_INT64 = 7,
    LK_STRING = 8,
    LK_BOOL = 9,
    LK_FLOAT16 = 10,
    LK_FLOAT64 = 11,
    LK_UINT32 = 12,
    LK_UINT64 = 13,
    LK_COMPLEX64 = 14,
    LK_COMPLEX128 = 15,
    LK_BFLOAT16 = 16,
    LK_FLOAT8E4M3FN = 17,
    LK_FLOAT8E4M3FNUZ = 18,
    LK_FLOAT8E5M2 = 19,
    LK_FLOAT8E5M2FNUZ = 20,
    LK_UINT4 = 21,
    LK_INT4 = 22,
    LK_FLOAT4E2M1 = 23,
    LK_FLOAT8E8M0 = 24,
    LK_UINT2 = 25,
    LK_INT2 = 26,
    LK_FLOAT6E2M3 = 27,
    LK_FLOAT6E3M2 = 28
};

/* Compute units of a context. */
enum {
    LK_COMPUTE_AUTOMATIC = 0, /* the GPU when it is faster, else the CPU (and a notice says why) */
    LK_COMPUTE_CPU = 1,       /* the CPU evaluator only; no Vulkan device is opened */
    LK_COMPUTE_GPU = 2        /* the GPU; creating the context fails without a usable device */
};

/* Kinds of Vulkan device (lk_device_info). */
enum {
    LK_DEVICE_OTHER = 0,
    LK_DEVICE_INTEGRATED = 1,
    LK_DEVICE_DISCRETE = 2,
    LK_DEVICE_VIRTUAL = 3,
    LK_DEVICE_CPU = 4 /* a CPU implementation of Vulkan, such as Mesa's lavapipe */
};

/* ---- Versions -------------------------------------------------------------- */

/* The LK_API_VERSION the library was built with. Any thread. */
int32_t lk_api_version(void);

/* LayerKit's release, e.g. "0.8.0": static storage, never freed. Any thread. */
const char *lk_version_string(void);

/* A short constant name of `status`, e.g. "LK_ERROR_SHAPE": static storage.
 * Any thread. */
const char *lk_status_string(lk_status status);

/* The bytes one element of `type` takes in a tensor's data (8 for LK_INT64,
 * 1 for LK_BOOL and the types under a byte), or 0 for LK_STRING and codes
 * that are not an lk_element_type. Any thread. */
size_t lk_element_type_size(lk_element_type type);

/* ---- Contexts -------------------------------------------------------------- */

/* Creates a context. `compute_units` is an LK_COMPUTE_* value; `threads` is
 * the CPU evaluator's thread count, 0 for the cores the process may use.
 * The Vulkan device is LAYERKIT_DEVICE's (an index or a name) when that
 * variable is set, else the one `layerkit devices` marks as chosen.
 * On failure `*out` is NULL and the message is written to `error`
 * (capacity `error_capacity`; `error` may be NULL). Any thread. */
lk_status lk_context_create(int32_t compute_units, int32_t threads, lk_context **out,
                            char *error, size_t error_capacity);

/* Releases a context. No other call may be using it. */
void lk_context_destroy(lk_context *context);

/* The message of the calling thread's last failed call on `context`, or ""
 * when none failed: valid until that thread's next call on `context`.
 * Any thread. */
const char *lk_context_last_error(lk_context *context);

/* Whether the context's layers may run on a GPU (1) or only on the CPU (0).
 * Any thread. */
lk_status lk_context_uses_gpu(lk_context *context, int32_t *uses_gpu);

/* Receives one notice of a context: NUL-terminated UTF-8, valid for the call
 * only, such as "model.onnx: all 24 layers run on the CPU: ...". It is called on the thread of the call that raised it (a
 * load, a predict, an apply), possibly several at once. */
typedef void (*lk_notice_fn)(void *user_data, const char *message);

/* Sends the context's notices (each layer a GPU context runs on the CPU, and
 * why; a DOUBLE model input computed in float32; each said once per context)
 * to `notice` with `user_data` from now on, instead of standard error, where
 * a new context writes them ("layerkit: " and the line). A NULL `notice`
 * drops them. `user_data` must stay valid until the context is destroyed or
 * another call replaces it. Any thread. */
lk_status lk_context_set_notice(lk_context *context, lk_notice_fn notice, void *user_data);

/* ---- Devices --------------------------------------------------------------- */

/* The number of Vulkan devices found (0 without a Vulkan loader or device;
 * that is not an error). The devices are surveyed once, at the process's
 * first device call, LAYERKIT_DEVICE read then. Any thread. */
lk_status lk_device_count(lk_context *context, int32_t *count);

/* Device `index` (0 ..< count): its name, its LK_DEVICE_* kind, whether
 * LayerKit can use it, and whether it is the one a GPU context opens.
 * Any pointer may be NULL to skip that field. Any thread. */
lk_status lk_device_info(lk_context *context, int32_t index, char *name, size_t name_capacity,
                         size_t *name_length, int32_t *kind, int32_t *usable, int32_t *chosen);

/* ---- Tensors --------------------------------------------------------------- */

/* Creates a float32 tensor of `shape` (`rank` dims, each at least 0: a dim of
 * 0 makes a zero-size tensor, as ONNX's empty KV-cache past), copying
 * product(shape) floats from `data`, or zero-filled when `data` is NULL.
 * A negative dim, or an element count past the limit, is LK_ERROR_SHAPE.
 * Any thread. */
lk_status lk_tensor_create(lk_context *context, const int64_t *shape, size_t rank, const float *data,
                           lk_tensor **out);

/* Creates a tensor of element type `type` and `shape` (`rank` dims, each at
 * least 0), copying `byte_count` bytes from `data`, laid out as the element
 * types say. `byte_count` must be product(shape) * lk_element_type_size(type)
 * (LK_ERROR_SHAPE otherwise, naming both counts); `data` may be NULL (and
 * `byte_count` 0) for a zero-filled tensor. A bool byte other than 0 or 1,
 * or set high bits in a type under a byte, is LK_ERROR_INVALID_ARGUMENT;
 * LK_STRING is LK_ERROR_UNSUPPORTED (lk_tensor_create_strings makes string
 * tensors), a code not listed LK_ERROR_INVALID_ARGUMENT. A tensor made with LK_FLOAT32 is the same as one
 * made by lk_tensor_create. Any thread. */
lk_status lk_tensor_create_typed(lk_context *context, lk_element_type type, const int64_t *shape, size_t rank,
                                 const void *data, size_t byte_count, lk_tensor **out);

/* Releases a tensor. No other call may be using it. */
void lk_tensor_destroy(lk_tensor *tensor);

/* Creates an LK_STRING tensor of `shape` (`rank` dims) holding `count`
 * NUL-terminated UTF-8 strings (product(shape); LK_ERROR_SHAPE otherwise),
 * copied in row-major order; a NULL or non-UTF-8 string is
 * LK_ERROR_INVALID_ARGUMENT. For models of tensor(string) inputs. Any thread. */
lk_status lk_tensor_create_strings(lk_context *context, const int64_t *shape, size_t rank, const char *const *strings,
                                   size_t count, lk_tensor **out);

/* String `index` (row-major) of an LK_STRING tensor, written as (buffer,
 * capacity, length); another type is LK_ERROR_TYPE, an index past the
 * element count LK_ERROR_INVALID_ARGUMENT. Any thread, while no call writes
 * the tensor. */
lk_status lk_tensor_read_string(lk_context *context, const lk_tensor *tensor, size_t index, char *buffer,
                                size_t capacity, size_t *length);

/* The tensor's element type (an LK_* element type code). Any thread. */
lk_status lk_tensor_element_type(lk_context *context, const lk_tensor *tensor, lk_element_type *type);

/* The tensor's rank and, when `shape` is not NULL, its dims (`capacity` at
 * least the rank, else LK_ERROR_BUFFER_TOO_SMALL). Any thread. */
lk_status lk_tensor_shape(lk_context *context, const lk_tensor *tensor, int64_t *shape, size_t capacity,
                          size_t *rank);

/* The tensor's element count. Any thread. */
lk_status lk_tensor_element_count(lk_context *context, const lk_tensor *tensor, size_t *count);

/* Copies the float32 tensor's elements into `data`; `count` must be its
 * element count (`data` may be NULL when it is 0). A tensor of another type is LK_ERROR_TYPE (read it with
 * lk_tensor_read_bytes). Any thread, while no call writes the tensor. */
lk_status lk_tensor_read(lk_context *context, const lk_tensor *tensor, float *data, size_t count);

/* Copies `count` floats (its element count; `data` may be NULL when it is 0)
 * from `data` into the float32 tensor; a tensor of another type is LK_ERROR_TYPE. No other call may be
 * using the tensor. */
lk_status lk_tensor_write(lk_context *context, lk_tensor *tensor, const float *data, size_t count);

/* Copies the elements of a tensor of any type but LK_STRING into `data`, laid
 * out as the element types say; `byte_count` must be element count *
 * lk_element_type_size(type) (LK_ERROR_BUFFER_TOO_SMALL when less,
 * LK_ERROR_SHAPE when more; `data` may be NULL when it is 0). Any thread,
 * while no call writes the tensor. */
lk_status lk_tensor_read_bytes(lk_context *context, const lk_tensor *tensor, void *data, size_t byte_count);

/* ---- Pictures ------------------------------------------------------------- */

/* Reads the PNG or JPEG file at `path` into a new float32 tensor, prepared
 * as a model's picture input exactly as `layerkit run`'s picture options
 * prepare it (the same code): decoded to 0..1 values (C = 1 gray, 3 RGB,
 * 4 RGBA), then resized, centre-cropped, scaled, put in channel order and
 * normalized, in that order. Each string may be NULL for its default:
 *   resize         "N": the shorter side to N, the aspect kept (the longer
 *                  side floor(N * long / short), torchvision's Resize(N));
 *                  "WxH": stretched to W by H. NULL: no resize.
 *   center_crop    "N" or "WxH": the middle pixels, offset round((size -
 *                  crop) / 2) with halves to even. NULL: no crop.
 *   interpolation  "bilinear" (default), "nearest" or "bicubic", as Pillow's
 *                  Image.resize (antialiased when shrinking).
 *   normalize      "0,1" (default: none), "-1,1", "imagenet" (mean
 *                  0.485,0.456,0.406, std 0.229,0.224,0.225 by colour) or
 *                  "mean=A[,B,C],std=D[,E,F]" in the tensor's channel order;
 *                  (x * scale - mean) / std, the presets times `scale`.
 *   channel_order  "rgb" (default) or "bgr".
 *   layout         "nchw" (default: 1xCxHxW) or "nhwc" (1xHxWxC).
 * `scale` is what a full-intensity pixel becomes (255 for 0..255 inputs); 0
 * means 1. A malformed option is LK_ERROR_INVALID_ARGUMENT, an unreadable
 * or corrupt picture LK_ERROR_FILE or LK_ERROR_UNSUPPORTED. Any thread. */
lk_status lk_image_load(lk_context *context, const char *path, const char *resize, const char *center_crop,
                        const char *interpolation, const char *normalize, const char *channel_order, float scale,
                        const char *layout, lk_tensor **out);

/* ---- Layers: ops, formulas and custom layers ------------------------------- */

/* Makes the layer registered as `op` (a catalog op such as "Swish" or "Relu",
 * or a custom layer registered on `context`; case-insensitive) with scalar
 * parameters `names[i] = values[i]` (`count` of them; the arrays may be NULL
 * when `count` is 0). Any thread. */
lk_status lk_layer_create(lk_context *context, const char *op, const char *const *names,
                          const double *values, size_t count, lk_layer **out);

/* Makes a per-element layer from one formula over `x`, e.g.
 * "x * tanh(softplus(x))" (Docs/FORMULAS.md). Names in the formula other than
 * x are its values: scalars from `names`/`values`, or per-channel weights
 * named in `weight_names` (`weight_count` of them) and set with
 * lk_layer_set_weights in that order. Any thread. */
lk_status lk_layer_create_formula(lk_context *context, const char *formula, const char *const *names,
                                  const double *values, size_t count, const char *const *weight_names,
                                  size_t weight_count, lk_layer **out);

/* Sets the layer's weights: `weight_count` arrays, array i of `counts[i]`
 * floats (per-channel values: one per channel of the input; 0 floats keeps
 * that value's scalar), in the order of the op's weight names (Swish: "beta";
 * a formula, made by lk_layer_create_formula or registered with
 * lk_register_formula: its `weight_names`). No other call may be using the
 * layer. */
lk_status lk_layer_set_weights(lk_context *context, lk_layer *layer, const float *const *weights,
                               const size_t *counts, size_t weight_count);

/* The number of weight arrays lk_layer_set_weights takes for `layer`.
 * Any thread. */
lk_status lk_layer_weight_count(lk_context *context, lk_layer *layer, size_t *count);

/* The name of weight `index` (0 ..< lk_layer_weight_count), in the order
 * lk_layer_set_weights takes them (Linear: "scale", "bias"), so a binding
 * can match weights by name; `name` as in the string conventions. Any thread. */
lk_status lk_layer_weight_name(lk_context *context, lk_layer *layer, size_t index, char *name, size_t capacity,
                               size_t *length);

/* Releases a layer. No other call may be using it. */
void lk_layer_destroy(lk_layer *layer);

/* Runs `layer` on `inputs` (`input_count` tensors) on the context's backend
 * and creates its outputs: `outputs` has room for `output_capacity` handles,
 * and `*output_count` is set to the number made (LK_ERROR_BUFFER_TOO_SMALL,
 * with nothing run or made and `*output_count` the number needed, when that
 * is over the capacity). `profiler` may be NULL; otherwise the run's steps
 * are recorded there (one run at a time per profiler: its op labels are
 * shared). Any thread: the same layer may be applied by several threads at
 * once, on one context, without a lock (each run plans its own buffers).
 * A zero-size input is LK_ERROR_SHAPE (layers take at least one element). */
lk_status lk_layer_apply(lk_context *context, lk_layer *layer, const lk_tensor *const *inputs,
                         size_t input_count, lk_tensor **outputs, size_t output_capacity,
                         size_t *output_count, lk_profiler *profiler);

/* ---- The op catalog ------------------------------------------------------- */

/* The number of ops lk_layer_create finds by name on `context`: the catalog's
 * (`layerkit ops`), then the custom layers registered on it. A registration
 * between calls changes the count and the indices. Any thread. */
lk_status lk_op_count(lk_context *context, size_t *count);

/* The name of op `index` (0 ..< lk_op_count), in `layerkit ops` order, then
 * custom layers by name; `name` as in the string conventions. Any thread. */
lk_status lk_op_name(lk_context *context, size_t index, char *name, size_t capacity, size_t *length);

/* The number of named parameters op `op` (found as by lk_layer_create)
 * takes: its scalars, which lk_layer_create sets by name, and a word choice
 * such as Gelu's "approximate". Its per-channel weights are not among them.
 * Any thread. */
lk_status lk_op_parameter_count(lk_context *context, const char *op, size_t *count);

/* The name of parameter `index` (0 ..< lk_op_parameter_count) of op `op`;
 * `name` as in the string conventions. Any thread. */
lk_status lk_op_parameter_name(lk_context *context, const char *op, size_t index, char *name, size_t capacity,
                               size_t *length);

/* The number of values `formula` uses (the names in it other than x and the
 * functions, Docs/FORMULAS.md): what lk_layer_create_formula takes as its
 * scalars or per-channel weights. A formula that does not parse fails with
 * the parser's message. Any thread. */
lk_status lk_formula_value_count(lk_context *context, const char *formula, size_t *count);

/* The name of value `index` (0 ..< lk_formula_value_count) of `formula`, in
 * the order of first use; `name` as in the string conventions. Any thread. */
lk_status lk_formula_value_name(lk_context *context, const char *formula, size_t index, char *name,
                                size_t capacity, size_t *length);

/* ---- Parity ---------------------------------------------------------------- */

/* Runs `layer` on `input`, first rounded to fp16 so both sides read the same
 * values, on the context's GPU and on the CPU, and compares them: `*passed`
 * is 1 when every element is within `tolerance * max(1, |cpu|)` and no
 * non-finite value differs. `input` is of rank 1 to 4 (what a GPU image
 * holds; LK_ERROR_SHAPE otherwise). Any of the result pointers may be NULL. A
 * context without a GPU gives LK_ERROR_GPU_UNAVAILABLE. Any thread. */
lk_status lk_parity(lk_context *context, lk_layer *layer, const lk_tensor *input, double tolerance,
                    int32_t *passed, double *max_abs_error, double *max_rel_error);

/* ---- Models ---------------------------------------------------------------- */

/* Loads the ONNX model at `path` (external weights beside it) on the
 * context's backend, with the custom layers registered on the context so
 * far. Any thread. */
lk_status lk_model_load(lk_context *context, const char *path, lk_model **out);

/* Releases a model. No other call may be using it. */
void lk_model_destroy(lk_model *model);

/* The number of the model's inputs or outputs. Any thread. */
lk_status lk_model_input_count(lk_context *context, lk_model *model, size_t *count);
lk_status lk_model_output_count(lk_context *context, lk_model *model, size_t *count);

/* The name of input or output `index`. Any thread. */
lk_status lk_model_input_name(lk_context *context, lk_model *model, size_t index, char *name,
                              size_t capacity, size_t *length);
lk_status lk_model_output_name(lk_context *context, lk_model *model, size_t index, char *name,
                               size_t capacity, size_t *length);

/* The declared shape of input `index`: a symbolic or unknown dim is -1.
 * `shape` as in lk_tensor_shape. Any thread. */
lk_status lk_model_input_shape(lk_context *context, lk_model *model, size_t index, int64_t *shape,
                               size_t capacity, size_t *rank);

/* The element type of input or output `index`, as the model declares it
 * (LK_FLOAT32 when it declares none): the type lk_model_predict takes for
 * that input and returns for that output. Any thread. */
lk_status lk_model_input_type(lk_context *context, lk_model *model, size_t index, lk_element_type *type);
lk_status lk_model_output_type(lk_context *context, lk_model *model, size_t index, lk_element_type *type);

/* Runs the model: `inputs[i]` is the input named `names[i]` (`input_count`
 * of them, every input once), each of the element type the model declares
 * for it (lk_model_input_type; otherwise LK_ERROR_TYPE, naming both types: a
 * float32 tensor for an int64 input is refused, not converted). `outputs`
 * receives one new tensor per model output, in the model's output order, of
 * the type the model declares for it (lk_model_output_type; read a float32
 * one with lk_tensor_read, any with lk_tensor_read_bytes); `output_capacity`
 * must be at least the output count (else LK_ERROR_BUFFER_TOO_SMALL); on
 * failure no tensor is made. `profiler` may be NULL (one run at a time per
 * profiler). Any thread: one model may be run by several threads at once;
 * its runs take turns (a model reuses its plans' memory run after run), so
 * load one model per thread to run in parallel. */
lk_status lk_model_predict(lk_context *context, lk_model *model, const char *const *names,
                           const lk_tensor *const *inputs, size_t input_count, lk_tensor **outputs,
                           size_t output_capacity, lk_profiler *profiler);

/* ---- Profiling ------------------------------------------------------------- */

/* Any thread. */
lk_status lk_profiler_create(lk_context *context, lk_profiler **out);

/* Releases a profiler. No other call may be using it. */
void lk_profiler_destroy(lk_profiler *profiler);

/* Writes what the profiler recorded as a Chrome trace (JSON; open it in
 * Perfetto or chrome://tracing) to `path`, replacing the file atomically.
 * Any thread, while no run records into the profiler. */
lk_status lk_profiler_write_trace(lk_context *context, lk_profiler *profiler, const char *path);

/* ---- Registering custom layers --------------------------------------------- */

/* Registers a per-element layer `name`, defined by `formula` (as in
 * lk_layer_create_formula, with `names`/`values` as the scalars' defaults and
 * `weight_names` its per-channel weights), on the context: lk_layer_create
 * and models loaded afterwards find it by name (a model node of domain
 * "layerkit" and that op type; its attributes set the scalars, its further
 * inputs the weights). It runs on both backends. Replaces any layer of that
 * name. Not while another thread creates layers or loads models on the
 * context. */
lk_status lk_register_formula(lk_context *context, const char *name, const char *formula,
                              const char *const *names, const double *values, size_t count,
                              const char *const *weight_names, size_t weight_count);

/* Registers `formula` (as in lk_layer_create_formula) for the model nodes of
 * op type `op_type`, in any domain, as `layerkit run --layer OPTYPE=FORMULA`
 * does: each node's attributes are the formula's scalars and its constant
 * inputs its per-channel weights, matched by name (an input named as a value
 * of the formula, or ending in ".NAME", "/NAME" or "_NAME"). A value the node
 * does not give, or an attribute or constant input the formula does not use,
 * fails the model's load naming it. The formula's syntax is checked here
 * (LK_ERROR_INVALID_ARGUMENT). Models loaded afterwards on the context find
 * it; replaces any layer of that name. Not while another thread creates
 * layers or loads models on the context. */
lk_status lk_register_node_formula(lk_context *context, const char *op_type, const char *formula);

/* A custom layer's output shape from its input shapes: `input_count` inputs,
 * input i of `input_ranks[i]` dims `input_shapes[i]`. Writes at most
 * LK_MAX_RANK dims to `output_shape` and the rank to `*output_rank`; returns
 * 0 on success, anything else to fail. */
typedef int32_t (*lk_shape_fn)(void *user_data, size_t input_count, const int64_t *const *input_shapes,
                               const size_t *input_ranks, int64_t *output_shape, size_t *output_rank);

/* A custom layer's CPU evaluation: reads the inputs (float32, C order, of the
 * given shapes) and writes every element of the output, whose shape the
 * shape callback gave. Returns 0 on success, anything else to fail. It may be
 * called from several threads at once. */
typedef int32_t (*lk_evaluate_fn)(void *user_data, size_t input_count, const float *const *inputs,
                                  const int64_t *const *input_shapes, const size_t *input_ranks, float *output,
                                  const int64_t *output_shape, size_t output_rank);

/* Registers a custom layer `name` with one output, evaluated on the CPU by
 * `evaluate` (Core ML's `evaluate`). `shape` may be NULL: the output has the
 * first input's shape. `user_data` is passed to both callbacks; `destroy`,
 * when not NULL, is called with it once the context and every layer and
 * model made from the registration are gone (a registration replaced by
 * another of its name goes with the last layer or model made from it); on
 * failure nothing is registered and `destroy` is not called. It takes no
 * parameters and no weights. A callback's non-zero return fails the call
 * that ran it with LK_ERROR_CALLBACK, naming the layer and the value, except
 * the shape callback's while a model is planned (lk_model_load, or a predict
 * on new input shapes): LK_ERROR_INVALID_MODEL, naming the node too. Found by
 * name as in lk_register_formula; replaces any layer of that name. Not while
 * another thread creates layers or loads models on the context. */
lk_status lk_register_layer(lk_context *context, const char *name, lk_evaluate_fn evaluate, lk_shape_fn shape,
                            void *user_data, void (*destroy)(void *user_data));

#ifdef __cplusplus
}
#endif

#endif /* LAYERKIT_H */
