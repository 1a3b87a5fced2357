/*
 * A C program running a model with layerkit.Swish in onnxruntime through its
 * C API: the session setup Docs/ONNXRUNTIME.md shows. test_ort.py compiles it
 * against onnxruntime 1.21's headers and links the pip wheel's 1.32 runtime.
 *
 *   ort_session LIBRARY MODEL   (MODEL: x [1, 4, 8, 8] -> layerkit.Swish(beta=0.5) -> y)
 *
 * Prints the max |error| against float64 and exits 1 above 1e-6.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <onnxruntime_c_api.h>

#define COUNT (1 * 4 * 8 * 8)

static const OrtApi *ort;

/* Exits with onnxruntime's message when `status` is a failure. */
static void check(OrtStatus *status) {
    if (!status) return;
    fprintf(stderr, "onnxruntime: %s\n", ort->GetErrorMessage(status));
    ort->ReleaseStatus(status);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s LIBRARY MODEL\n", argv[0]);
        return 2;
    }
    ort = OrtGetApiBase()->GetApi(ORT_API_VERSION);
    OrtEnv *env = NULL;
    OrtSessionOptions *options = NULL;
    OrtSession *session = NULL;
    check(ort->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "layerkit", &env));
    check(ort->CreateSessionOptions(&options));
    check(ort->SetIntraOpNumThreads(options, 1));
    /* Loads liblayerkit_ort.so and calls its RegisterCustomOps. */
    check(ort->RegisterCustomOpsLibrary_V2(options, argv[1]));
    check(ort->CreateSession(env, argv[2], options, &session));

    float x[COUNT];
    for (int i = 0; i < COUNT; i++) x[i] = -8.0f + 16.0f * (float)i / (COUNT - 1);
    const int64_t shape[4] = {1, 4, 8, 8};
    OrtMemoryInfo *memory = NULL;
    OrtValue *input = NULL, *output = NULL;
    check(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &memory));
    check(ort->CreateTensorWithDataAsOrtValue(memory, x, sizeof x, shape, 4, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
                                              &input));
    const char *input_names[] = {"x"}, *output_names[] = {"y"};
    check(ort->Run(session, NULL, input_names, (const OrtValue *const *)&input, 1, output_names, 1, &output));
    float *result = NULL;
    check(ort->GetTensorMutableData(output, (void **)&result));
    double worst = 0;
    for (int i = 0; i < COUNT; i++) {
        double expected = (double)x[i] / (1 + exp(-0.5 * (double)x[i]));
        worst = fmax(worst, fabs((double)result[i] - expected));
    }
    printf("C session, onnxruntime %s: layerkit.Swish over [-8, 8], max |error| vs float64 %.2e\n",
           OrtGetApiBase()->GetVersionString(), worst);
    ort->ReleaseValue(output);
    ort->ReleaseValue(input);
    ort->ReleaseMemoryInfo(memory);
    ort->ReleaseSession(session);
    ort->ReleaseSessionOptions(options);
    ort->ReleaseEnv(env);
    return worst <= 1e-6 ? 0 : 1;
}
