/* The C tests' checks: each failure prints where and why, and the program
 * exits 1 at the end if any failed. */
#ifndef LAYERKIT_TEST_CHECK_H
#define LAYERKIT_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "layerkit.h"

static int check_failures = 0;

#define CHECK(condition)                                                              \
    do {                                                                              \
        if (!(condition)) {                                                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #condition); \
            check_failures++;                                                         \
        }                                                                             \
    } while (0)

/* A call that must return LK_OK; otherwise prints the context's message. */
#define CHECK_OK(context, call)                                                        \
    do {                                                                               \
        lk_status check_status_ = (call);                                              \
        if (check_status_ != LK_OK) {                                                  \
            fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #call,   \
                    lk_status_string(check_status_), lk_context_last_error(context));  \
            check_failures++;                                                          \
        }                                                                              \
    } while (0)

/* A call that must fail with `expected`, leaving a message. */
#define CHECK_STATUS(context, expected, call)                                          \
    do {                                                                               \
        lk_status check_status_ = (call);                                              \
        if (check_status_ != (expected)) {                                             \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__, __LINE__, \
                    #call, lk_status_string(check_status_), lk_status_string(expected), \
                    lk_context_last_error(context));                                   \
            check_failures++;                                                          \
        }                                                                              \
    } while (0)

/* GPU contexts: a missing device fails the test unless LAYERKIT_ALLOW_NO_GPU=1,
 * as in the Swift suite. Returns NULL when it may be skipped. */
/* A one-thread CPU context, or exit 1 saying why. */
static inline lk_context *check_cpu_context(void) {
    lk_context *context = NULL;
    char error[512];
    if (lk_context_create(LK_COMPUTE_CPU, 1, &context, error, sizeof error) == LK_OK) return context;
    fprintf(stderr, "lk_context_create: %s\n", error);
    exit(1);
}

static inline lk_context *check_gpu_context(void) {
    lk_context *context = NULL;
    char error[512];
    if (lk_context_create(LK_COMPUTE_GPU, 0, &context, error, sizeof error) == LK_OK) return context;
    const char *allow = getenv("LAYERKIT_ALLOW_NO_GPU");
    if (allow && allow[0] == '1') {
        fprintf(stderr, "no GPU (%s): GPU checks skipped (LAYERKIT_ALLOW_NO_GPU=1)\n", error);
        return NULL;
    }
    fprintf(stderr, "no GPU: %s (set LAYERKIT_ALLOW_NO_GPU=1 to run without one)\n", error);
    exit(1);
}

static inline int check_finish(const char *name) {
    if (check_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

#endif
