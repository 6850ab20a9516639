/* core/image.h — 8-bit grey images and the preprocessing both networks use.
 *
 * Layer: core.  Pure functions on caller-owned memory; error codes as in
 * common.h.  Convention: pixel value 0 = background, 255 = full ink (MNIST's
 * polarity).  Images from cameras (dark ink on light paper) are inverted by
 * the caller or by nc_prep.invert before preprocessing. */
#ifndef NC_IMAGE_H
#define NC_IMAGE_H

#include "common.h"

/* Largest width or height any core function accepts; larger is -ERANGE.
 * Caps memory before anything is allocated. */
#define NC_IMAGE_MAX_DIM 16384

typedef struct nc_image {
    uint32_t width, height;
    uint32_t stride;        /* bytes from one row to the next, >= width */
    uint8_t *pixels;        /* row-major, height * stride bytes */
} nc_image;

/* How a raw grey image becomes a network input.  Stored in model files so a
 * model always sees what it was trained on. */
typedef enum nc_prep_kind {
    NC_PREP_MNIST = 1,      /* bounding box, fit in box x box keeping aspect,
                               centre of mass to the middle of size x size
                               (MNIST's own: box 20, size 28); output in [0,1]
                               or, with pad, embedded in a larger field */
    NC_PREP_NEOCOG = 2,     /* threshold, crop, scale to box px tall (width at
                               most size-4), re-binarise, centre in size x size
                               (spec: size 65, box 40..44); output 0/1 */
} nc_prep_kind;

typedef struct nc_prep {
    uint32_t kind;          /* nc_prep_kind */
    uint32_t size;          /* output field is size x size */
    uint32_t box;           /* MNIST: fit box; NEOCOG: digit height */
    uint32_t pad;           /* MNIST only: zero border added around the
                               size x size field (29x29 CNN input = 28 + 1) */
    uint32_t invert;        /* 1: input is dark ink on light paper */
    float threshold;        /* ink threshold in [0,1]; < 0 means Otsu */
} nc_prep;

/* Number of floats nc_prep_apply writes: (size + 2 pad)^2. */
size_t nc_prep_out_len(const nc_prep *p);

/* Turn a raw grey image into a network input per p (see nc_prep_kind):
 * out receives nc_prep_out_len(p) floats in [0, 1], row-major.  An image with
 * no ink gives -ENOENT (nothing to recognise); bad sizes give -EINVAL/-ERANGE. */
int nc_prep_apply(const nc_image *img, const nc_prep *p, float *out);

#endif
