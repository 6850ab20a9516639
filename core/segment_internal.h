/* core/segment_internal.h — what segment.c and segment_binarise.c share.
 *
 * Layer: core, private to the segmentation module. */
#ifndef NC_CORE_SEGMENT_INTERNAL_H
#define NC_CORE_SEGMENT_INTERNAL_H

#include "segment.h"

/* Scratch that grows to the largest frame seen and is reused after. */
struct nc_segmenter {
    size_t cap_pixels;          /* capacity of mask and labels */
    size_t cap_blocks;          /* capacity of the block arrays */
    size_t cap_width;           /* capacity of the row arrays */
    uint64_t *isum;             /* integral of block sums of p, (gw+1)(gh+1) */
    uint64_t *isq;              /* integral of block sums of p^2 */
    int16_t *thr;               /* per block: ink-is-dark q is ink if q < thr */
    double *bmean, *bsq;        /* per block: window mean of p and of p^2 */
    float *mean;                /* per block: bmean in float (polarity) */
    uint32_t *colsum, *colsq;   /* per column: sums of p, p^2 over a band */
    uint8_t *thr_px;            /* per column: thr of the band's blocks,
                                   and 16 bytes of slack */
    double *wsum, *wsq, *wn;    /* per block of one row: window sums, count */
    uint8_t *mask;              /* ROI-sized ink mask, 255 = ink */
    uint32_t *labels;           /* ROI-sized component labels */
};

/* Make room for a w x h ROI (w, h already capped) with blocks of side b. */
int nc_segment_reserve(nc_segmenter *seg, uint32_t w, uint32_t h, uint32_t b);

/* The window side ADAPTIVE uses for a w x h ROI (resolves auto), and the
 * block side its statistics are gathered on. */
uint32_t nc_segment_window_side(const nc_segment_params *p, uint32_t w, uint32_t h);
uint32_t nc_segment_block_side(uint32_t window);

/* Binarise roi into seg->mask (ROI-sized, stride = width).  *ret_polarity
 * gets the polarity used.  A frame with no usable contrast gets an all-zero
 * mask. */
int nc_segment_binarise_roi(nc_segmenter *seg, const nc_image *roi,
                            const nc_segment_params *p, uint32_t *ret_polarity);

/* Step 4a (segment_boxes.c): clear from mask (ROI-sized, stride = width)
 * the sides of boxes drawn around digits, among comps (labels valid where
 * mask is set, component c labelled c + 1).  *ret_stripped gets the number
 * of boxes cleared; when it is not 0 the mask must be labelled again.
 * -ENOMEM is the only failure, and leaves the mask as it was or with some
 * boxes cleared. */
int nc_segment_strip_boxes(uint8_t *mask, const uint32_t *labels, uint32_t width,
                           const nc_component *comps, uint32_t ncomps,
                           const nc_segment_params *p, uint32_t *ret_stripped);

#endif
