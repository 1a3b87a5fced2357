#include "lk_jpeg.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jpeglib.h>

/* libjpeg's error manager, extended with the jump back and the caller's
   message buffer. */
typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    char *buf;
    size_t len;
} lk_jpeg_error;

static void lk_set_error(char *buf, size_t len, const char *message) {
    if (buf && len > 0) snprintf(buf, len, "%s", message);
}

static void lk_on_error(j_common_ptr cinfo) {
    lk_jpeg_error *e = (lk_jpeg_error *)cinfo->err;
    char message[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, message);
    lk_set_error(e->buf, e->len, message);
    longjmp(e->jump, 1);
}

/* Level -1 is a warning about corrupt data (a premature end of file, bad
   Huffman codes, extraneous bytes): libjpeg goes on and makes up pixels,
   so LayerKit stops instead. Trace messages (levels 0 and up) are dropped
   instead of printed. */
static void lk_on_message(j_common_ptr cinfo, int level) {
    if (level < 0) lk_on_error(cinfo);
}

int lk_jpeg_read(int fd, lk_jpeg_image *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    lk_set_error(err, errlen, "unknown error");
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        lk_set_error(err, errlen, strerror(errno));
        close(fd);
        return -1;
    }
    unsigned char signature[3];
    if (fread(signature, 1, 3, fp) != 3 || signature[0] != 0xFF || signature[1] != 0xD8 || signature[2] != 0xFF) {
        lk_set_error(err, errlen, "not a JPEG file (no start-of-image marker)");
        fclose(fp);
        return -1;
    }
    rewind(fp);

    struct jpeg_decompress_struct cinfo;
    lk_jpeg_error e;
    memset(&cinfo, 0, sizeof cinfo);
    cinfo.err = jpeg_std_error(&e.base);
    e.base.error_exit = lk_on_error;
    e.base.emit_message = lk_on_message;
    e.buf = err;
    e.len = errlen;
    /* Written after setjmp and read after a longjmp, so volatile. */
    unsigned char *volatile samples = NULL;
    if (setjmp(e.jump)) {
        free(samples);
        jpeg_destroy_decompress(&cinfo);
        fclose(fp);
        return -1;
    }
    jpeg_create_decompress(&cinfo);
    cinfo.mem->max_memory_to_use = LK_JPEG_MAX_MEMORY;
    jpeg_stdio_src(&cinfo, fp);
    jpeg_read_header(&cinfo, TRUE);

    /* The frame header's size, checked before libjpeg allocates for it. */
    if (cinfo.image_width == 0 || cinfo.image_height == 0 || cinfo.image_width > LK_JPEG_MAX_SIDE ||
        cinfo.image_height > LK_JPEG_MAX_SIDE ||
        (uint64_t)cinfo.image_width * cinfo.image_height > LK_JPEG_MAX_PIXELS) {
        char message[160];
        snprintf(message, sizeof message, "image is %ux%u; LayerKit reads 1 to %u pixels a side and at most %u in all",
                 (unsigned)cinfo.image_width, (unsigned)cinfo.image_height, (unsigned)LK_JPEG_MAX_SIDE,
                 (unsigned)LK_JPEG_MAX_PIXELS);
        lk_set_error(err, errlen, message);
        longjmp(e.jump, 1);
    }
    switch (cinfo.jpeg_color_space) {
    case JCS_GRAYSCALE:
        cinfo.out_color_space = JCS_GRAYSCALE;
        break;
    case JCS_YCbCr:
    case JCS_RGB:
        cinfo.out_color_space = JCS_RGB;
        break;
    default:
        lk_set_error(err, errlen, "CMYK and YCCK JPEGs are not supported; convert the image to RGB first");
        longjmp(e.jump, 1);
    }
    /* Pillow's and libjpeg's defaults, so the pixels match Pillow's. */
    cinfo.dct_method = JDCT_ISLOW;
    cinfo.do_fancy_upsampling = TRUE;
    jpeg_start_decompress(&cinfo);

    uint32_t channels = (uint32_t)cinfo.output_components;
    size_t rowbytes = (size_t)cinfo.output_width * channels;
    samples = malloc(rowbytes * cinfo.output_height);
    if (!samples) {
        lk_set_error(err, errlen, "out of memory");
        longjmp(e.jump, 1);
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = samples + (size_t)cinfo.output_scanline * rowbytes;
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);

    out->width = cinfo.output_width;
    out->height = cinfo.output_height;
    out->channels = channels;
    out->samples = samples;
    jpeg_destroy_decompress(&cinfo);
    fclose(fp);
    return 0;
}

void lk_jpeg_free(lk_jpeg_image *image) {
    free(image->samples);
    image->samples = NULL;
}
