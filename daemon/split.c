/* daemon/split.c — see split.h. */
#include "split.h"

#include <stdio.h>

/* Neocog__Polarity's values, spelled here so this file (and the fuzzer
 * linking it) need not pull in the generated protocol code. */
enum { POL_AUTO = 0, POL_LIGHT_INK = 1, POL_DARK_INK = 2 };

int nc_split_frame(nc_segmenter **seg, const nc_image *frame, int polarity,
                   uint32_t max_digits, nc_segment_result **ret, char *why, size_t why_len)
{
    nc_segment_params p;
    nc_segment_params_default(&p);
    switch (polarity) {
    case POL_AUTO: p.polarity = NC_SEGMENT_POLARITY_AUTO; break;
    case POL_LIGHT_INK: p.polarity = NC_SEGMENT_POLARITY_LIGHT_INK; break;
    case POL_DARK_INK: p.polarity = NC_SEGMENT_POLARITY_DARK_INK; break;
    default:
        snprintf(why, why_len, "unknown polarity %d", polarity);
        return -EINVAL;
    }
    /* core/segment drops components taller than 3/4 of a frame: in a camera
     * view those are borders and shadows.  A strip at least twice as wide as
     * it is high is a line of characters the caller has already cropped,
     * whose digits fill its height; there the only cap is the strip. */
    if (frame->width >= 2 * (uint64_t)frame->height)
        p.max_height = frame->height;
    if (frame->width > NC_SEGMENT_MAX_DIM || frame->height > NC_SEGMENT_MAX_DIM) {
        snprintf(why, why_len, "%ux%u is too large to segment (%u a side at most)",
                 frame->width, frame->height, NC_SEGMENT_MAX_DIM);
        return -ERANGE;
    }
    int err = 0;
    if (!*seg && (err = nc_segmenter_new(seg)) < 0) {
        snprintf(why, why_len, "out of memory");
        return err;
    }
    nc_segment_result *r = NULL;
    if ((err = nc_segment_frame(*seg, frame, &p, &r)) < 0) {
        snprintf(why, why_len, "%s", err == -ERANGE ? "too many characters to segment"
                                   : err == -ENOMEM ? "out of memory"
                                                    : "segmentation failed");
        return err;
    }
    if (r->count > max_digits) {
        snprintf(why, why_len, "too many characters to segment (%u, at most %u)", r->count,
                 max_digits);
        nc_segment_result_free(r);
        return -ERANGE;
    }
    *ret = r;
    return 0;
}
