#include "lk_png.h"

#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where libpng's error callback leaves its message before it longjmps. */
typedef struct {
    char *buf;
    size_t len;
} lk_error;

static void lk_set_error(char *buf, size_t len, const char *message) {
    if (buf && len > 0) snprintf(buf, len, "%s", message);
}

static void lk_on_error(png_structp png, png_const_charp message) {
    lk_error *e = png_get_error_ptr(png);
    lk_set_error(e->buf, e->len, message);
    png_longjmp(png, 1);
}

/* Warnings (bad ancillary CRCs, odd gamma) are not the caller's problem, and
   libpng would otherwise print them to stderr. */
static void lk_on_warning(png_structp png, png_const_charp message) {
    (void)png;
    (void)message;
}

int lk_png_read(int fd, lk_png_image *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    lk_set_error(err, errlen, "unknown error");
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        lk_set_error(err, errlen, strerror(errno));
        close(fd);
        return -1;
    }
    png_byte signature[8];
    if (fread(signature, 1, 8, fp) != 8 || png_sig_cmp(signature, 0, 8) != 0) {
        lk_set_error(err, errlen, "not a PNG file (bad signature)");
        fclose(fp);
        return -1;
    }
    lk_error e = {err, errlen};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &e, lk_on_error, lk_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        fclose(fp);
        lk_set_error(err, errlen, "out of memory");
        return -1;
    }
    /* Written after setjmp and read after a longjmp, so volatile. */
    unsigned char *volatile samples = NULL;
    png_bytep *volatile rows = NULL;
    if (setjmp(png_jmpbuf(png))) {
        free(rows);
        free(samples);
        png_destroy_read_struct(&png, &info, NULL);
        fclose(fp);
        return -1;
    }
    png_init_io(png, fp);
    png_set_sig_bytes(png, 8);
    png_set_user_limits(png, LK_PNG_MAX_SIDE, LK_PNG_MAX_SIDE);
    /* A chunk's length is read from the file: a 51-byte file whose tEXt
       chunk claimed 0x7fffffff bytes made libpng allocate 2 GiB before it
       found the file short (its over-long-chunk check is only a benign
       error, a warning on read). The ancillary chunks LayerKit does not use
       are skipped unread, through a small buffer, as unknown chunks; for
       the rest, chunk allocations are capped at LK_PNG_MAX_CHUNK bytes and
       LK_PNG_MAX_CHUNKS chunks. */
    static const png_byte ignored[] = "bKGD\0cHRM\0eXIf\0gAMA\0hIST\0iCCP\0iTXt\0oFFs\0pCAL\0pHYs\0"
                                      "sBIT\0sCAL\0sPLT\0sRGB\0tEXt\0tIME\0zTXt";
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, ignored, (int)(sizeof ignored / 5));
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, NULL, 0);
    png_set_chunk_malloc_max(png, LK_PNG_MAX_CHUNK);
    png_set_chunk_cache_max(png, LK_PNG_MAX_CHUNKS);
    png_read_info(png, info);

    png_uint_32 width = png_get_image_width(png, info);
    png_uint_32 height = png_get_image_height(png, info);
    if ((uint64_t)width * height > LK_PNG_MAX_PIXELS) {
        char message[128];
        snprintf(message, sizeof message, "image is %ux%u, over the limit of %u pixels",
                 (unsigned)width, (unsigned)height, (unsigned)LK_PNG_MAX_PIXELS);
        png_error(png, message);
    }
    int color = png_get_color_type(png, info);
    int depth = png_get_bit_depth(png, info);
    int has_trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (has_trns) png_set_tRNS_to_alpha(png);
    /* Gray with alpha has no 2-channel form in LayerKit: expand it to RGBA. */
    if ((color == PNG_COLOR_TYPE_GRAY && has_trns) || color == PNG_COLOR_TYPE_GRAY_ALPHA)
        png_set_gray_to_rgb(png);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (depth == 16) png_set_swap(png); /* PNG stores 16-bit samples big-endian */
#endif
    png_set_interlace_handling(png);
    png_read_update_info(png, info);

    png_uint_32 channels = png_get_channels(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    samples = malloc(rowbytes * height);
    rows = malloc(sizeof(png_bytep) * height);
    if (!samples || !rows) png_error(png, "out of memory");
    for (png_uint_32 y = 0; y < height; y++) rows[y] = samples + y * rowbytes;
    png_read_image(png, rows);
    png_read_end(png, NULL);

    out->width = width;
    out->height = height;
    out->channels = channels;
    out->bit_depth = depth == 16 ? 16 : 8;
    out->samples = samples;
    free(rows);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(fp);
    return 0;
}

void lk_png_free(lk_png_image *image) {
    free(image->samples);
    image->samples = NULL;
}

int lk_png_write_gray8(int fd, const uint8_t *pixels, uint32_t width,
                       uint32_t height, char *err, size_t errlen) {
    return lk_png_write8(fd, pixels, width, height, 1, err, errlen);
}

int lk_png_write8(int fd, const uint8_t *pixels, uint32_t width, uint32_t height,
                  uint32_t channels, char *err, size_t errlen) {
    lk_set_error(err, errlen, "unknown error");
    int color = channels == 1 ? PNG_COLOR_TYPE_GRAY : channels == 3 ? PNG_COLOR_TYPE_RGB
              : channels == 4 ? PNG_COLOR_TYPE_RGB_ALPHA : -1;
    if (color < 0) {
        lk_set_error(err, errlen, "a PNG holds 1 (gray), 3 (RGB) or 4 (RGBA) channels");
        return -1;
    }
    if (width == 0 || height == 0 || width > LK_PNG_MAX_SIDE || height > LK_PNG_MAX_SIDE ||
        (uint64_t)width * height > LK_PNG_MAX_PIXELS) {
        lk_set_error(err, errlen, "image size out of range");
        return -1;
    }
    int own = dup(fd);
    FILE *fp = own < 0 ? NULL : fdopen(own, "wb");
    if (!fp) {
        if (own >= 0) close(own);
        lk_set_error(err, errlen, strerror(errno));
        return -1;
    }
    lk_error e = {err, errlen};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &e, lk_on_error, lk_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        fclose(fp);
        lk_set_error(err, errlen, "out of memory");
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(fp);
        return -1;
    }
    png_init_io(png, fp);
    png_set_IHDR(png, info, width, height, 8, color, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (uint32_t y = 0; y < height; y++) png_write_row(png, pixels + (size_t)y * width * channels);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    /* A full disk shows up only at flush or close; report it rather than
       leave a short file behind. */
    errno = 0;
    int failed = fflush(fp) != 0 || ferror(fp);
    if (fclose(fp) != 0) failed = 1;
    if (failed) {
        lk_set_error(err, errlen, errno ? strerror(errno) : "write error");
        return -1;
    }
    return 0;
}
