/* Reads the test fixtures' .npy files: version 1 or 2, '<f4', C order (what
 * Scripts/generate_model_fixtures.py writes), on a little-endian host.
 * Anything else fails the read. */
#ifndef LAYERKIT_TEST_NPY_H
#define LAYERKIT_TEST_NPY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The floats of the .npy file at `path` (malloc'd; the caller frees them) and
 * their count; NULL, with a message on stderr, when it cannot be read. */
static inline float *npy_read_floats(const char *path, size_t *count) {
    FILE *file = fopen(path, "rb");
    if (!file) {
        fprintf(stderr, "%s: cannot open\n", path);
        return NULL;
    }
    unsigned char magic[8];
    size_t header_length = 0;
    float *data = NULL;
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
    if (!strstr(header, "'<f4'") || !strstr(header, "'fortran_order': False")) goto fail;
    const char *shape = strstr(header, "'shape': (");
    if (!shape) goto fail;
    size_t elements = 1;
    for (const char *p = shape + 10; *p && *p != ')';) {
        char *end;
        long dim = strtol(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        elements *= (size_t)dim;
        p = end;
    }
    data = malloc(elements * sizeof(float));
    if (!data || fread(data, sizeof(float), elements, file) != elements) goto fail;
    fclose(file);
    *count = elements;
    return data;
fail:
    fprintf(stderr, "%s: not a float32 C-order .npy file this reader takes\n", path);
    free(data);
    fclose(file);
    return NULL;
}

#endif
