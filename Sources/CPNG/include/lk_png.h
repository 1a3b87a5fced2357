#ifndef LK_PNG_H
#define LK_PNG_H

#include <stddef.h>
#include <stdint.h>

/* libpng reports errors by longjmp, which Swift frames cannot survive, so every
   libpng call stays behind this small C API. Functions return 0 on success and
   -1 on failure, with a one-line reason in `err` (always NUL-terminated). */

/* Largest side and pixel count read or written: a guard against
   decompression bombs and absurd output pictures. */
#define LK_PNG_MAX_SIDE 16384
#define LK_PNG_MAX_PIXELS (1u << 26)
/* Largest ancillary chunk (tEXt, zTXt, iCCP...) libpng may allocate for, and
   the most ancillary chunks it keeps: a chunk length is read from the file. */
#define LK_PNG_MAX_CHUNK (8u << 20)
#define LK_PNG_MAX_CHUNKS 1000

/* A decoded PNG, samples interleaved row by row. Colour types come out as:
   gray -> 1 channel; gray+alpha, or gray with tRNS -> 4 (RGBA, gray copied to
   R, G and B); RGB and palette -> 3; RGBA, and RGB or palette with tRNS -> 4.
   Depths below 8 are scaled up to 8 bits. */
typedef struct lk_png_image {
    uint32_t width;
    uint32_t height;
    uint32_t channels;  /* 1, 3 or 4 */
    uint32_t bit_depth; /* 8: samples are uint8_t; 16: native-endian uint16_t */
    void *samples;      /* owned; release with lk_png_free */
} lk_png_image;

/* Decodes the PNG file open for reading on `fd` into `out`; the descriptor
   is always closed (the caller opens it, checking the file's type). */
int lk_png_read(int fd, lk_png_image *out, char *err, size_t errlen);

/* Frees the samples of an image filled by lk_png_read; safe on a zeroed image. */
void lk_png_free(lk_png_image *image);

/* Writes `width` x `height` 8-bit gray pixels, row-major, as a PNG file to
   `fd` (a new, empty file open for writing); the caller keeps and closes `fd`. */
int lk_png_write_gray8(int fd, const uint8_t *pixels, uint32_t width,
                       uint32_t height, char *err, size_t errlen);

/* Writes `width` x `height` pixels of `channels` 8-bit samples each (1: gray,
   3: RGB, 4: RGBA), interleaved row-major, as a PNG file to `fd`, as
   lk_png_write_gray8 does. */
int lk_png_write8(int fd, const uint8_t *pixels, uint32_t width, uint32_t height,
                  uint32_t channels, char *err, size_t errlen);

#endif
