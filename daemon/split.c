/* daemon/split.c — see split.h. */
#include "split.h"

#include "image_clean.h"

#include <stdio.h>

/* Neocog__Polarity's values, spelled here so this file (and the fuzzer
 * linking it) need not pull in the generated protocol code. */
enum { POL_AUTO = 0, POL_LIGHT_INK = 1, POL_DARK_INK = 2 };

int nc_split_check_opts(const nc_split_opts *o, uint32_t max_digits, uint32_t max_dim,
                        char *why, size_t why_len)
{
    if (o->polarity < POL_AUTO || o->polarity > POL_DARK_INK) {
        snprintf(why, why_len, "unknown polarity %d", o->polarity);
        return -EINVAL;
    }
    if (o->expected_digits > max_digits) {
        snprintf(why, why_len, "expected_digits %u exceeds the limit of %u per image",
                 o->expected_digits, max_digits);
        return -ERANGE;
    }
    if (!o->use_roi)
        return 0;
    const nc_rect *r = &o->roi;
    if (r->width < NC_SPLIT_MIN_ROI || r->height < NC_SPLIT_MIN_ROI) {
        snprintf(why, why_len, "roi %ux%u is too small (at least %ux%u)", r->width, r->height,
                 NC_SPLIT_MIN_ROI, NC_SPLIT_MIN_ROI);
        return -EINVAL;
    }
    /* 64-bit sums: x + width must not wrap to pass the check */
    if (r->width > max_dim || r->height > max_dim ||
        (uint64_t)r->x + r->width > max_dim || (uint64_t)r->y + r->height > max_dim) {
        snprintf(why, why_len, "roi %u,%u %ux%u reaches past the largest image (%u a side)",
                 r->x, r->y, r->width, r->height, max_dim);
        return -ERANGE;
    }
    return 0;
}

int nc_split_frame_opts(nc_segmenter **seg, const nc_image *frame, const nc_split_opts *o,
                        uint32_t max_digits, nc_segment_result **ret, char *why,
                        size_t why_len)
{
    int err = nc_split_check_opts(o, max_digits, NC_SEGMENT_MAX_DIM, why, why_len);
    if (err < 0)
        return err;
    if (frame->width > NC_SEGMENT_MAX_DIM || frame->height > NC_SEGMENT_MAX_DIM) {
        snprintf(why, why_len, "%ux%u is too large to segment (%u a side at most)",
                 frame->width, frame->height, NC_SEGMENT_MAX_DIM);
        return -ERANGE;
    }
    if (o->use_roi && ((uint64_t)o->roi.x + o->roi.width > frame->width ||
                       (uint64_t)o->roi.y + o->roi.height > frame->height)) {
        snprintf(why, why_len, "roi %u,%u %ux%u lies outside the %ux%u image", o->roi.x,
                 o->roi.y, o->roi.width, o->roi.height, frame->width, frame->height);
        return -ERANGE;
    }
    nc_segment_params p;
    /* the view decides the height cap and the edge rule (see segment.h) */
    nc_segment_params_for_view(&p, o->use_roi ? o->roi.width : frame->width,
                               o->use_roi ? o->roi.height : frame->height, o->use_roi);
    p.polarity = o->polarity == POL_LIGHT_INK ? NC_SEGMENT_POLARITY_LIGHT_INK
               : o->polarity == POL_DARK_INK ? NC_SEGMENT_POLARITY_DARK_INK
                                             : NC_SEGMENT_POLARITY_AUTO;
    p.expected_count = o->expected_digits;
    p.use_roi = o->use_roi ? 1 : 0;
    p.alternatives = o->alternatives ? 1 : 0;
    p.charset = o->text ? NC_SEGMENT_CHARSET_TEXT : NC_SEGMENT_CHARSET_DIGITS;
    p.roi = o->roi;
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

int nc_split_frame(nc_segmenter **seg, const nc_image *frame, int polarity,
                   uint32_t max_digits, nc_segment_result **ret, char *why, size_t why_len)
{
    nc_split_opts o = { .polarity = polarity };
    return nc_split_frame_opts(seg, frame, &o, max_digits, ret, why, why_len);
}

int nc_split_keep_whole(float whole, float left, float right)
{
    return whole > NC_SPLIT_WHOLE_ODDS * left * right;
}

const char *nc_split_separator(uint32_t i, uint32_t line, uint32_t prev_line, uint32_t flags)
{
    if (!i)
        return "";
    if (line != prev_line)
        return "\n";
    return flags & NC_SEGMENT_DIGIT_SPACE_BEFORE ? " " : "";
}

/* A line of at least four pieces (not cut from a wider one), each at least
 * half as tall as the line and three in four of them taller than wide, the
 * line three times as wide as it is tall, is a string (the pieces of one
 * broken character are of all heights, or squat): no need to look for one
 * character in the frame, a camera's frames above all, whose preparation
 * time counts. */
static int holds_a_string(const nc_segment_result *sr)
{
    for (uint32_t i = 0; sr && i < sr->count; i++) {
        uint32_t n = 0, x0 = UINT32_MAX, y0 = UINT32_MAX, x1 = 0, y1 = 0, low = UINT32_MAX;
        uint32_t upright = 0;
        for (uint32_t j = 0; j < sr->count; j++) {
            /* a piece cut out of a wider one says nothing: the segmenter
             * cuts a long stroke of one big character into many */
            if (sr->digits[j].line != sr->digits[i].line ||
                (sr->digits[j].flags & NC_SEGMENT_DIGIT_SPLIT))
                continue;
            const nc_rect b = sr->digits[j].box;
            n++;
            x0 = b.x < x0 ? b.x : x0;
            y0 = b.y < y0 ? b.y : y0;
            x1 = b.x + b.width > x1 ? b.x + b.width : x1;
            y1 = b.y + b.height > y1 ? b.y + b.height : y1;
            low = b.height < low ? b.height : low;
            upright += b.height >= b.width;
        }
        if (n >= 4 && 4 * upright >= 3 * n && 2 * low >= y1 - y0 && x1 - x0 > 3 * (y1 - y0))
            return 1;
    }
    return 0;
}

int nc_split_one_character(const nc_image *frame, const nc_split_opts *o,
                           const nc_segment_result *sr, nc_image **ret_clean,
                           nc_rect *ret_box)
{
    if (o->expected_digits > 1 || holds_a_string(sr))
        return 0;
    nc_image view = *frame;
    if (o->use_roi && nc_image_crop(frame, o->roi, &view) < 0)
        return 0;
    nc_image *clean = NULL;
    nc_clean_info info;
    int err = nc_image_clean(&view, (nc_polarity)o->polarity, &clean, &info);
    if (err == -ENOMEM)
        return err;
    if (err < 0)
        return 0;
    nc_rect b = info.box;
    if (o->use_roi) {
        b.x += o->roi.x;
        b.y += o->roi.y;
    }
    double grow = (b.width > b.height ? b.width : b.height) / 6.0;
    double gx0 = b.x - grow, gy0 = b.y - grow;
    double gx1 = b.x + b.width + grow, gy1 = b.y + b.height + grow;
    uint32_t inside = 0;
    for (uint32_t i = 0; sr && i < sr->count; i++) {
        const nc_rect d = sr->digits[i].box;
        if (d.x < gx0 || d.y < gy0 || d.x + d.width > gx1 || d.y + d.height > gy1) {
            nc_image_free(clean);
            return 0;
        }
        inside++;
    }
    int verdict = inside < 2 || b.width <= NC_SPLIT_ONE_ASPECT * b.height ? 1
                : b.width <= NC_SPLIT_MAYBE_ASPECT * b.height ? 2 : 0;
    if (!verdict) {
        nc_image_free(clean);
        return 0;
    }
    *ret_clean = clean;
    *ret_box = b;
    return verdict;
}
