/* core/segment/segment.c — digits out of a camera frame: the parameters,
 * the segmenter's scratch and the pipeline that runs the steps in order.
 *
 * Layer: core.  The pipeline and its parameters are documented in
 * segment.h.  Each step has its own file: binarisation in
 * segment_binarise.c, boxes drawn around digits in segment_boxes.c,
 * pieces and lines (steps 4-6) in segment_lines.c, splitting and the
 * expected count (7-8) in segment_split.c, reading order, patches and the
 * result (9-10) in segment_result.c, character mode in segment_chars.c,
 * the piece helpers they share in segment_pieces.c.
 * Working coordinates are the ROI's; boxes are moved to frame coordinates
 * at the very end. */
#include "segment_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void nc_segment_params_default(nc_segment_params *ret_params)
{
    *ret_params = (nc_segment_params){
        .binarise = NC_SEGMENT_BINARISE_ADAPTIVE,
        .polarity = NC_SEGMENT_POLARITY_AUTO,
        .window = 0,
        .sauvola_k = 0.25f,
        .min_contrast = 20,
        .min_area = 12,
        .min_height = 10,
        .max_height = 0,
        .max_aspect = 8.0f,
        .min_fill = 0.05f,
        .max_gap = 2.5f,
        .merge_overlap = 0.5f,
        .min_rel_height = 0.5f,
        .max_rel_height = 1.25f,
        .split_ratio = 1.5f,
        .max_split = 6,
        .max_components = 16384,
        .expected_count = 0,
        .drop_edge = 1,
        .use_roi = 0,
        .roi = { 0, 0, 0, 0 },
        .prep = NULL,
        .alternatives = 0,
        .charset = NC_SEGMENT_CHARSET_DIGITS,
        .word_gap = 2.5f,
    };
}

void nc_segment_params_for_view(nc_segment_params *p, uint32_t view_w, uint32_t view_h,
                                int explicit_roi)
{
    nc_segment_params_default(p);
    if (view_w >= 2 * (uint64_t)view_h) {
        p->max_height = view_h;
        p->drop_edge = 0;
    }
    if (explicit_roi)
        p->drop_edge = 0;
}

int nc_segment_params_check(const nc_segment_params *p)
{
    if (!p)
        return -EINVAL;
    if (p->binarise > NC_SEGMENT_BINARISE_OTSU || p->polarity > NC_SEGMENT_POLARITY_LIGHT_INK)
        return -EINVAL;
    if (p->window && (p->window < 3 || !(p->window & 1)))
        return -EINVAL;
    if (p->window > NC_SEGMENT_MAX_WINDOW)
        return -ERANGE;
    /* Written so that NaN fails. */
    if (!(p->sauvola_k > 0 && p->sauvola_k < 1) || !(p->max_aspect > 0) ||
        !(p->min_fill >= 0 && p->min_fill < 1) || !(p->max_gap > 0) ||
        !(p->merge_overlap > 0 && p->merge_overlap <= 1) ||
        !(p->min_rel_height >= 0 && p->min_rel_height < 1) || !(p->max_rel_height > 1) ||
        !(p->split_ratio > 1))
        return -EINVAL;
    if (p->min_contrast > 255 || p->max_split < 2 || p->max_split > 64)
        return -ERANGE;
    if (p->max_components == 0 || p->max_components > NC_SEGMENT_MAX_COMPONENTS)
        return -ERANGE;
    if (p->expected_count > NC_SEGMENT_MAX_DIGITS)
        return -ERANGE;
    if (p->use_roi > 1 || p->drop_edge > 1 || p->alternatives > 1 ||
        p->charset > NC_SEGMENT_CHARSET_TEXT)
        return -EINVAL;
    if (p->charset == NC_SEGMENT_CHARSET_TEXT && !(p->word_gap > 1 && p->word_gap < 100))
        return -EINVAL;
    if (p->prep)
        return nc_prep_check(p->prep);
    return 0;
}

/* ---- segmenter ------------------------------------------------------------ */

int nc_segmenter_new(nc_segmenter **ret_seg)
{
    if (!ret_seg)
        return -EINVAL;
    nc_segmenter *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    *ret_seg = s;
    return 0;
}

void nc_segmenter_free(nc_segmenter *seg)
{
    if (!seg)
        return;
    free(seg->isum);
    free(seg->isq);
    free(seg->thr);
    free(seg->mean);
    free(seg->bmean);
    free(seg->bsq);
    free(seg->colsum);
    free(seg->colsq);
    free(seg->thr_px);
    free(seg->wsum);
    free(seg->wsq);
    free(seg->wn);
    free(seg->mask);
    free(seg->labels);
    free(seg);
}

/* Validate frame and params, resolve the ROI. */
static int prepare(const nc_image *frame, const nc_segment_params *params,
                   nc_segment_params *p, nc_image *roi)
{
    int err = nc_image_check(frame);
    if (err < 0)
        return err;
    if (frame->width > NC_SEGMENT_MAX_DIM || frame->height > NC_SEGMENT_MAX_DIM)
        return -ERANGE;
    if (params)
        *p = *params;
    else
        nc_segment_params_default(p);
    if ((err = nc_segment_params_check(p)) < 0)
        return err;
    if (p->use_roi)
        return nc_image_crop(frame, p->roi, roi);
    *roi = *frame;
    return 0;
}

int nc_segment_binarise_frame(nc_segmenter *seg, const nc_image *frame,
                              const nc_segment_params *params, nc_image *mask,
                              uint32_t *ret_polarity)
{
    nc_segment_params p;
    nc_image roi;
    if (!seg || !ret_polarity)
        return -EINVAL;
    int err = prepare(frame, params, &p, &roi);
    if (err < 0)
        return err;
    if ((err = nc_image_check(mask)) < 0)
        return err;
    if (mask->width != frame->width || mask->height != frame->height)
        return -EINVAL;
    roi = *frame;
    uint32_t block = nc_segment_block_side(nc_segment_window_side(&p, roi.width, roi.height));
    if ((err = nc_segment_reserve(seg, roi.width, roi.height, block)) < 0)
        return err;
    uint32_t pol;
    if ((err = nc_segment_binarise_roi(seg, &roi, &p, &pol)) < 0)
        return err;
    for (uint32_t y = 0; y < roi.height; y++)
        memcpy(mask->pixels + (size_t)y * mask->stride, seg->mask + (size_t)y * roi.width,
               roi.width);
    *ret_polarity = pol;
    return 0;
}

int nc_segment_frame(nc_segmenter *seg, const nc_image *frame,
                     const nc_segment_params *params, nc_segment_result **ret_result)
{
    nc_segment_params p;
    nc_image roi;
    if (!seg || !ret_result)
        return -EINVAL;
    int err = prepare(frame, params, &p, &roi);
    if (err < 0)
        return err;
    uint32_t block = nc_segment_block_side(nc_segment_window_side(&p, roi.width, roi.height));
    if ((err = nc_segment_reserve(seg, roi.width, roi.height, block)) < 0)
        return err;
    uint32_t pol;
    if ((err = nc_segment_binarise_roi(seg, &roi, &p, &pol)) < 0)
        return err;

    work w = { .roi = &roi, .p = &p, .labels = seg->labels, .mask = seg->mask };
    uint32_t *order = NULL, *scratch = NULL, *heights = NULL, *prof = NULL;
    double *best_dx = NULL;
    nc_image mask_img = { roi.width, roi.height, roi.width, seg->mask };
    if ((err = nc_image_components_ink(&mask_img, p.max_components, seg->labels,
                                       &w.comps, &w.ncomps)) < 0)
        goto out;
    uint32_t boxes;
    if ((err = nc_segment_strip_boxes(seg->mask, seg->labels, roi.width, w.comps, w.ncomps,
                                      &p, &boxes)) < 0)
        goto out;
    if (boxes) {
        free(w.comps);
        w.comps = NULL;
        if ((err = nc_image_components_ink(&mask_img, p.max_components, seg->labels,
                                           &w.comps, &w.ncomps)) < 0)
            goto out;
    }
    err = -ENOMEM;
    if (!(w.group_of = malloc(((size_t)w.ncomps + 1) * sizeof *w.group_of)))
        goto out;
    if ((err = nc_seg_collect(&w)) < 0)
        goto out;
    nc_seg_drop_enclosures(&w);
    /* Splits add pieces, at most max_split per piece plus the fit rounds. */
    size_t cap = (size_t)w.npc * (p.max_split + 1) + 2 * NC_SEG_MAX_PIECES + 16;
    err = -ENOMEM;
    order = malloc(cap * sizeof *order);
    scratch = malloc(2 * cap * sizeof *scratch);
    heights = malloc(cap * sizeof *heights);
    best_dx = malloc(cap * sizeof *best_dx);
    prof = malloc(((size_t)roi.width + 1) * sizeof *prof);
    if (!order || !scratch || !heights || !best_dx || !prof)
        goto out;
    nc_seg_assign_lines(&w, order, best_dx, scratch, heights);
    if (p.charset == NC_SEGMENT_CHARSET_TEXT && (err = nc_seg_chars_rehome(&w)) < 0)
        goto out;
    nc_seg_cut_lines(&w, order, scratch, heights);
    if (p.charset == NC_SEGMENT_CHARSET_TEXT) {
        if ((err = nc_seg_chars_merge(&w, order, scratch)) < 0)
            goto out;
    } else {
        nc_seg_merge_digits(&w, order, scratch, heights);
    }
    err = p.charset == NC_SEGMENT_CHARSET_TEXT ? nc_seg_chars_split(&w, scratch, heights, prof)
                                                : nc_seg_split_wide(&w, scratch, heights, prof);
    if (err < 0 || (err = nc_seg_fit_count(&w, order, scratch, heights, prof)) < 0)
        goto out;
    err = nc_seg_build_result(&w, pol, p.use_roi ? p.roi.x : 0,
                       p.use_roi ? p.roi.y : 0, order, scratch, ret_result);
out:
    free(order);
    free(scratch);
    free(heights);
    free(best_dx);
    free(prof);
    free(w.group_of);
    free(w.comps);
    free(w.pc);
    return err;
}

int nc_segment_image(const nc_image *frame, const nc_segment_params *params,
                     nc_segment_result **ret_result)
{
    nc_segmenter *seg;
    int err = nc_segmenter_new(&seg);
    if (err < 0)
        return err;
    err = nc_segment_frame(seg, frame, params, ret_result);
    nc_segmenter_free(seg);
    return err;
}
