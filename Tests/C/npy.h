/* Reads the test fixtures' .npy files: version 1 or 2, C order, of numpy's
 * fixed-width numeric dtypes and bool (what Scripts/generate_model_fixtures.py
 * and Scripts/generate_typed_fixtures.py write), on a little-endian host.
 * Anything else fails the read. */
#ifndef LAYERKIT_TEST_NPY_H
#define LAYERKIT_TEST_NPY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPY_MAX_RANK 8

/* An array read from a .npy file: its dtype as numpy writes it ("<i8",
 * "|b1", "<f2", ...), its shape, and its bytes (malloc'd; npy_free). */
struct npy_array {
    char descr[8];
    int64_t shape[NPY_MAX_RANK];
    size_t rank;
    size_t count;
    size_t byte_count;
    void *data;
};

/* Reads the .npy file at `path` into `array`; 0 on success, -1 (with a
 * message on stderr) when it cannot be read. */
static inline int npy_read(const char *path, struct npy_array *array) {
    memset(array, 0, sizeof *array);
    FILE *file = fopen(path, "rb");
    if (!file) {
        fprintf(stderr, "%s: cannot open\n", path);
        return -1;
    }
    unsigned char magic[8];
    size_t header_length = 0;
    if (fread(magic, 1, 8, file) != 8 || memcmp(magic, "\x93NUMPY", 6) != 0) goto fail;
    if (magic[6] == 1) {
        unsigned char bytes[2];
        if (fread(bytes, 1, 2, file) != 2) goto fail;
        header_length = (size_t)bytes[0] | (size_t)bytes[1] << 8;
    } else {
        unsigned char bytes[4];
        if (fread(bytes, 1, 4, file) != 4) goto fail;
        header_length = (size_t)bytes[0] | (size_t)bytes[1] << 8 | (size_t)bytes[2] << 16 | (size_t)bytes[3] << 24;
    }
    char header[1024];
    if (header_length >= sizeof header || fread(header, 1, header_length, file) != header_length) goto fail;
    header[header_length] = 0;
    if (!strstr(header, "'fortran_order': False")) goto fail;
    /* 'descr': '<i8': a byte order ('<' or '|', never '>'), a kind (f, i, u, b) and a width;
     * or '<U5': fixed-width unicode, 4 bytes (UTF-32) per character. */
    const char *descr = strstr(header, "'descr': '");
    if (!descr) goto fail;
    descr += 10;
    size_t descr_length = strcspn(descr, "'");
    if (descr_length < 3 || descr_length >= sizeof array->descr || (descr[0] != '<' && descr[0] != '|') ||
        !strchr("fiubU", descr[1]))
        goto fail;
    memcpy(array->descr, descr, descr_length);
    size_t width = (size_t)strtoul(descr + 2, NULL, 10);
    if (descr[1] == 'U') {
        if (width < 1 || width > 256) goto fail;
        width *= 4;
    } else if (width < 1 || width > 8) {
        goto fail;
    }
    const char *shape = strstr(header, "'shape': (");
    if (!shape) goto fail;
    array->count = 1;
    for (const char *p = shape + 10; *p && *p != ')';) {
        char *end;
        long dim = strtol(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        if (array->rank == NPY_MAX_RANK || dim < 0) goto fail;
        array->shape[array->rank++] = dim;
        array->count *= (size_t)dim;
        p = end;
    }
    array->byte_count = array->count * width;
    array->data = malloc(array->byte_count ? array->byte_count : 1);
    if (!array->data || fread(array->data, 1, array->byte_count, file) != array->byte_count) goto fail;
    fclose(file);
    return 0;
fail:
    fprintf(stderr, "%s: not a C-order .npy file of a numeric, bool or unicode dtype this reader takes\n", path);
    free(array->data);
    array->data = NULL;
    fclose(file);
    return -1;
}

static inline void npy_free(struct npy_array *array) {
    free(array->data);
    array->data = NULL;
}

/* The floats of the float32 .npy file at `path` (malloc'd; the caller frees
 * them) and their count; NULL, with a message on stderr, when it cannot be
 * read or is of another dtype. */
static inline float *npy_read_floats(const char *path, size_t *count) {
    struct npy_array array;
    if (npy_read(path, &array) != 0) return NULL;
    if (strcmp(array.descr, "<f4") != 0) {
        fprintf(stderr, "%s: dtype %s, not float32 ('<f4')\n", path, array.descr);
        npy_free(&array);
        return NULL;
    }
    *count = array.count;
    return array.data;
}

#endif
