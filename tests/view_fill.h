/* tests/view_fill.h — a caller that prepares views on demand
 * (core/backend/backend.h, nc_backend_fill) for tests: each view the engine
 * asks for is copied from the prepared input into a buffer that is NaN
 * until then, so a view read before it was asked for shows in the answer.
 * One copy for the core and GPU tests of nc_backend_forward_fill.
 * Header-only; link core's backend. */
#ifndef NC_TEST_VIEW_FILL_H
#define NC_TEST_VIEW_FILL_H

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

typedef struct nc_test_filler {
    const float *src;       /* [n][views][view_len]: every view prepared */
    float *dst;             /* the same layout: the views asked for so far */
    size_t view_len;
    uint32_t views, n;
    uint32_t *filled;       /* [n]: the views asked for, per image; may be NULL */
    uint32_t bad;           /* calls outside the n images or the views */
} nc_test_filler;

static inline int nc_test_fill_copy(void *ctx, uint32_t mask, const uint32_t *image, uint32_t d)
{
    nc_test_filler *f = (nc_test_filler *)ctx;
    for (uint32_t k = 0; k < d; k++) {
        if (image[k] >= f->n || mask >> f->views) {
            f->bad++;
            continue;
        }
        for (uint32_t v = 0; v < f->views; v++)
            if (mask >> v & 1u)
                memcpy(f->dst + ((size_t)image[k] * f->views + v) * f->view_len,
                       f->src + ((size_t)image[k] * f->views + v) * f->view_len,
                       f->view_len * sizeof *f->dst);
        if (f->filled)
            f->filled[image[k]] |= mask;
    }
    return 0;
}

/* be's forward of in (n images) through nc_backend_forward_fill, its views
 * copied as the engine asks for them; filled (may be NULL) gets the views
 * asked for per image.  -EINVAL when a fill call asked for what is not. */
static inline int nc_test_forward_filled(const nc_backend *be, void *w, const float *in,
                                         uint32_t n, float *out, uint32_t *filled)
{
    const size_t floats = (size_t)n * be->input_len;
    float *dst = (float *)malloc(floats * sizeof *dst);
    if (!dst)
        return -ENOMEM;
    for (size_t i = 0; i < floats; i++)
        dst[i] = NAN;
    if (filled)
        memset(filled, 0, n * sizeof *filled);
    nc_test_filler f = { in, dst, nc_prep_view_len(&be->info.prep),
                         nc_prep_views(&be->info.prep), n, filled, 0 };
    const nc_backend_fill fill = { &f, nc_test_fill_copy };
    int err = nc_backend_forward_fill(be, w, dst, n, &fill, out);
    free(dst);
    return err ? err : f.bad ? -EINVAL : 0;
}

#endif
