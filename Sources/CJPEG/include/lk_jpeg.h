#ifndef LK_JPEG_H
#define LK_JPEG_H

#include <stddef.h>
#include <stdint.h>

/* libjpeg (libjpeg-turbo) reports errors by longjmp, which Swift frames
   cannot survive, so every libjpeg call stays behind this small C API.
   Functions return 0 on success and -1 on failure, with a one-line reason
   in `err` (always NUL-terminated). */

/* Largest side and pixel count decoded, checked from the frame header
   before any pixel memory is allocated (the same limits as PNG). */
#define LK_JPEG_MAX_SIDE 16384
#define LK_JPEG_MAX_PIXELS (1u << 26)
/* The most memory libjpeg may use for its own buffers (progressive files
   keep every coefficient): far above what the pixel limit needs. */
#define LK_JPEG_MAX_MEMORY (512u << 20)

/* A decoded JPEG, 8-bit samples interleaved row by row: gray -> 1 channel,
   YCbCr and RGB -> 3 (RGB). CMYK and YCCK files are refused. */
typedef struct lk_jpeg_image {
    uint32_t width;
    uint32_t height;
    uint32_t channels; /* 1 or 3 */
    uint8_t *samples;  /* owned; release with lk_jpeg_free */
} lk_jpeg_image;

/* Decodes the JPEG file open for reading on `fd` into `out`; the descriptor
   is always closed (the caller opens it, checking the file's type). Corrupt
   data that libjpeg would only warn about (a truncated file it pads with
   gray, bad Huffman codes) is an error too. */
int lk_jpeg_read(int fd, lk_jpeg_image *out, char *err, size_t errlen);

/* Frees the samples of an image filled by lk_jpeg_read; safe on a zeroed image. */
void lk_jpeg_free(lk_jpeg_image *image);

#endif
