/* Profiling: a model's predict recorded by an lk_profiler and written as a
 * Chrome trace (parsed here as JSON, its events counted); bad paths fail with
 * LK_ERROR_FILE and write nothing; an existing trace is replaced whole. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#define MODEL LAYERKIT_SOURCE_DIR "/Models/article.onnx"

/* A minimal JSON reader: enough to tell a well-formed document and to count
 * the complete ("ph": "X") events of a trace. */
struct json {
    const char *p;
    int complete_events;
    int ok;
};

static void json_value(struct json *json);

static void json_space(struct json *json) {
    while (*json->p == ' ' || *json->p == '\n' || *json->p == '\r' || *json->p == '\t') json->p++;
}

static int json_expect(struct json *json, char c) {
    json_space(json);
    if (*json->p != c) return json->ok = 0;
    json->p++;
    return 1;
}

/* A string; its text (escapes kept) to `text` when it fits. */
static void json_string(struct json *json, char *text, size_t capacity) {
    size_t length = 0;
    if (!json_expect(json, '"')) return;
    while (*json->p && *json->p != '"') {
        if (*json->p == '\\' && json->p[1]) json->p++;
        if (text && length + 1 < capacity) text[length++] = *json->p;
        json->p++;
    }
    if (text && capacity) text[length] = 0;
    if (!json_expect(json, '"')) return;
}

static void json_object(struct json *json) {
    json_expect(json, '{');
    json_space(json);
    if (*json->p == '}') {
        json->p++;
        return;
    }
    while (json->ok) {
        char key[32];
        json_string(json, key, sizeof key);
        if (!json_expect(json, ':')) return;
        json_space(json);
        if (strcmp(key, "ph") == 0 && *json->p == '"') {
            char phase[8];
            json_string(json, phase, sizeof phase);
            json->complete_events += strcmp(phase, "X") == 0;
        } else {
            json_value(json);
        }
        json_space(json);
        if (*json->p == ',') {
            json->p++;
            continue;
        }
        json_expect(json, '}');
        return;
    }
}

static void json_array(struct json *json) {
    json_expect(json, '[');
    json_space(json);
    if (*json->p == ']') {
        json->p++;
        return;
    }
    while (json->ok) {
        json_value(json);
        json_space(json);
        if (*json->p == ',') {
            json->p++;
            continue;
        }
        json_expect(json, ']');
        return;
    }
}

static void json_value(struct json *json) {
    json_space(json);
    char c = *json->p;
    if (c == '{') {
        json_object(json);
    } else if (c == '[') {
        json_array(json);
    } else if (c == '"') {
        json_string(json, NULL, 0);
    } else if (strncmp(json->p, "true", 4) == 0 || strncmp(json->p, "null", 4) == 0) {
        json->p += 4;
    } else if (strncmp(json->p, "false", 5) == 0) {
        json->p += 5;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        while (strchr("+-.eE0123456789", *json->p) && *json->p) json->p++;
    } else {
        json->ok = 0;
    }
}

/* The file's bytes, NUL-terminated (malloc'd), or NULL. */
static char *read_file(const char *path) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    if (text && fread(text, 1, (size_t)size, file) == (size_t)size) {
        text[size] = 0;
    } else {
        free(text);
        text = NULL;
    }
    fclose(file);
    return text;
}

static int entries_in(const char *directory) {
    DIR *dir = opendir(directory);
    if (!dir) return -1;
    int count = 0;
    for (struct dirent *entry; (entry = readdir(dir));) count += entry->d_name[0] != '.';
    closedir(dir);
    return count;
}

int main(void) {
    char error[256];
    lk_context *context = NULL;
    CHECK(lk_context_create(LK_COMPUTE_CPU, 1, &context, error, sizeof error) == LK_OK);
    lk_model *model = NULL;
    CHECK_OK(context, lk_model_load(context, MODEL, &model));
    lk_profiler *profiler = NULL;
    CHECK_OK(context, lk_profiler_create(context, &profiler));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_profiler_create(context, NULL));

    const int64_t shape[4] = {1, 3, 64, 64};
    lk_tensor *input = NULL, *output = NULL;
    CHECK_OK(context, lk_tensor_create(context, shape, 4, NULL, &input));
    const lk_tensor *inputs[] = {input};
    const char *names[] = {"image"};
    CHECK_OK(context, lk_model_predict(context, model, names, inputs, 1, &output, 1, profiler));
    lk_tensor_destroy(output);

    char directory[] = "/tmp/layerkit-trace-XXXXXX";
    CHECK(mkdtemp(directory) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/trace.json", directory);
    /* An old file there is replaced whole. */
    FILE *old = fopen(path, "w");
    if (old) {
        fputs("old contents", old);
        fclose(old);
    }
    CHECK_OK(context, lk_profiler_write_trace(context, profiler, path));
    char *trace = read_file(path);
    CHECK(trace != NULL);
    if (trace) {
        struct json json = {.p = trace, .ok = 1};
        json_space(&json);
        CHECK(*json.p == '{');
        json_value(&json);
        json_space(&json);
        CHECK(json.ok && *json.p == 0);
        CHECK(strstr(trace, "\"traceEvents\"") != NULL);
        /* The run, and a CPU span per layer of the model's 6 nodes at least. */
        CHECK(json.complete_events >= 7);
        CHECK(strstr(trace, "Swish") != NULL);
        printf("trace: %zu bytes of JSON, %d complete events\n", strlen(trace), json.complete_events);
        free(trace);
    }

    /* Bad paths: LK_ERROR_FILE, nothing written. */
    char missing[160];
    snprintf(missing, sizeof missing, "%s/no-such-dir/trace.json", directory);
    CHECK_STATUS(context, LK_ERROR_FILE, lk_profiler_write_trace(context, profiler, missing));
    CHECK(strstr(lk_context_last_error(context), "no-such-dir") != NULL);
    CHECK_STATUS(context, LK_ERROR_FILE, lk_profiler_write_trace(context, profiler, directory));
    CHECK(entries_in(directory) == 1);
    struct stat status;
    CHECK(stat(missing, &status) != 0);
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_profiler_write_trace(context, profiler, NULL));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_profiler_write_trace(context, profiler, ""));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT, lk_profiler_write_trace(context, NULL, path));
    CHECK_STATUS(context, LK_ERROR_INVALID_ARGUMENT,
                 lk_profiler_write_trace(context, (lk_profiler *)model, path));

    /* An empty profiler still writes a valid trace (its track names only). */
    lk_profiler *empty = NULL;
    CHECK_OK(context, lk_profiler_create(context, &empty));
    CHECK_OK(context, lk_profiler_write_trace(context, empty, path));
    trace = read_file(path);
    if (trace) {
        struct json json = {.p = trace, .ok = 1};
        json_value(&json);
        CHECK(json.ok && json.complete_events == 0);
        free(trace);
    }
    unlink(path);
    rmdir(directory);

    lk_profiler_destroy(empty);
    lk_profiler_destroy(profiler);
    lk_profiler_destroy(NULL);
    lk_tensor_destroy(input);
    lk_model_destroy(model);
    lk_context_destroy(context);
    return check_finish("test_profiling");
}
