/* io/decode.h — untrusted image bytes to an 8-bit grey nc_image.
 *
 * Layer: io (the daemon decodes requests with it, neocog-classify files, so
 * both answer an image the same way).  No logging: a failure returns a
 * negative errno and a sentence in `why` for the client.
 * Every size is checked before anything is allocated: the header's
 * dimensions against the limits, raw byte counts against width x height.
 * Decoders never exit or abort on bad data: TurboJPEG treats warnings
 * (a truncated stream) as errors, libpng reports through setjmp.  A PNG's
 * size is judged from its IHDR before libpng reads it, so every format
 * over the cap gets the same sentence.  Grey, YCbCr and CMYK/YCCK JPEGs
 * all decode (CMYK mixed to its luminance).
 *
 * Errors: -EBADMSG corrupt or truncated data, -ERANGE zero or too large
 * dimensions, -ENOTSUP a format or variant not handled (16-bit PGM, P2),
 * -EINVAL bad arguments, -ENOMEM. */
#ifndef NC_DECODE_H
#define NC_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"

/* Same numbers as neocog.proto's ImageFormat. */
typedef enum nc_decode_format {
    NC_DECODE_AUTO = 0,
    NC_DECODE_PGM = 1,
    NC_DECODE_PNG = 2,
    NC_DECODE_JPEG = 3,
    NC_DECODE_RAW = 4,
} nc_decode_format;

typedef struct nc_decode_limits {
    uint32_t max_dim;       /* width and height each at most this */
    uint64_t max_pixels;    /* width * height at most this */
} nc_decode_limits;

/* The format data starts like (JPEG, PNG, PGM), else NC_DECODE_AUTO. */
int nc_decode_sniff(const uint8_t *data, size_t len);

/* Decode data as format (AUTO sniffs; RAW needs width and height with
 * width * height == len) into a new image (stride = width; free with
 * nc_image_free). */
int nc_decode_image(int format, const uint8_t *data, size_t len,
                    uint32_t width, uint32_t height,
                    const nc_decode_limits *lim, nc_image **ret_img,
                    char *why, size_t why_len);

const char *nc_decode_format_name(int format);

#endif
