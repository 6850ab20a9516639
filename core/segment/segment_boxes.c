/* core/segment/segment_boxes.c — step 4a of segment.h: free digits that touch the
 * box drawn around them.
 *
 * Layer: core, private to the segmentation module.
 *
 * A meter window or a form field is a thin rectangle around the string.
 * When a digit's stroke touches one of its sides, the digit and the box are
 * one component, and the box filters of step 4 (fill, hollowness) drop both:
 * the string loses a digit, and with an expected count a wrong cut makes up
 * for it.  So before the pieces are collected, each large sparse component
 * is tested for box sides: per column (top, bottom) or row (left, right),
 * the first ink pixel seen from outside.  On a box side these points lie on
 * one straight line along the box's edge (a few degrees off level or
 * plumb), whatever touches the side from inside.  A side must also be thin
 * and longer than any stroke of a digit (1.6 times the median height of
 * the digit-shaped components), so a digit's own straight stroke is never
 * taken for one.  Each side found is judged on its own, because
 * binarisation may break a box into several components.  Its own pixels
 * (the run of the side's measured thickness, plus one, from its edge point
 * inwards) leave the ink mask, and the caller labels the mask again: what
 * touched the box is then a component of its own.  Columns or rows whose
 * edge point is off the line (a stroke crossing the side) keep their
 * pixels. */
#include "segment_internal.h"

#include <math.h>
#include <stdlib.h>

enum { SIDE_TOP, SIDE_BOTTOM, SIDE_LEFT, SIDE_RIGHT };

/* Edge points further than this from the fitted line are not on the side. */
#define SIDE_TOL 2.5
/* Share of a side's columns (rows) that must lie on its line. */
#define SIDE_MIN_SHARE 0.75
/* Steepest side, as depth per pixel along it (about 8.5 degrees). */
#define SIDE_MAX_SLOPE 0.15
/* Shortest side, in digit heights: a digit's longest stroke is about one. */
#define SIDE_MIN_LEN 1.6

typedef struct comp_view {
    const uint8_t *mask;
    const uint32_t *labels;
    uint32_t width;
    uint32_t label;             /* component index + 1 */
} comp_view;

static int is_mine(const comp_view *v, uint32_t x, uint32_t y)
{
    size_t i = (size_t)y * v->width + x;
    return v->mask[i] && v->labels[i] == v->label;
}

/* Pixel (x, y) of side s at position t along it and depth d into it. */
static void side_pixel(const nc_rect *b, int s, uint32_t t, uint32_t d, uint32_t *x,
                       uint32_t *y)
{
    switch (s) {
    case SIDE_TOP:    *x = b->x + t; *y = b->y + d; break;
    case SIDE_BOTTOM: *x = b->x + t; *y = b->y + b->height - 1 - d; break;
    case SIDE_LEFT:   *x = b->x + d; *y = b->y + t; break;
    default:          *x = b->x + b->width - 1 - d; *y = b->y + t; break;
    }
}

/* Least-squares line depth = a + c t through the points with ok[t] set;
 * 0 if fewer than two. */
static int fit_line(const int32_t *depth, const uint8_t *ok, uint32_t n, double *a, double *c)
{
    double st = 0, sd = 0, stt = 0, std = 0;
    uint32_t m = 0;
    for (uint32_t t = 0; t < n; t++)
        if (ok[t]) {
            st += t; sd += depth[t]; stt += (double)t * t; std += (double)t * depth[t];
            m++;
        }
    if (m < 2)
        return 0;
    double den = m * stt - st * st;
    *c = den != 0 ? (m * std - st * sd) / den : 0;
    *a = (sd - *c * st) / m;
    return 1;
}

/* Keep in ok[] only the points within tol of the line; their count. */
static uint32_t keep_near(const int32_t *depth, uint8_t *ok, uint32_t n, double a, double c,
                          double tol)
{
    uint32_t m = 0;
    for (uint32_t t = 0; t < n; t++) {
        ok[t] = depth[t] >= 0 && fabs(depth[t] - (a + c * t)) <= tol;
        m += ok[t];
    }
    return m;
}

/* Find side s of component box b: depth[t] = the first pixel's depth at
 * position t (-1: none), ok[t] = on the side's line.  Returns the side's
 * thickness in pixels, or 0 if it is not a straight side. */
static uint32_t find_side(const comp_view *v, const nc_rect *b, int s, int32_t *depth,
                          uint8_t *ok, uint32_t *runs)
{
    int across = s == SIDE_TOP || s == SIDE_BOTTOM;
    uint32_t n = across ? b->width : b->height;
    uint32_t reach = across ? b->height : b->width;
    for (uint32_t t = 0; t < n; t++) {
        depth[t] = -1;
        for (uint32_t d = 0; d < reach; d++) {
            uint32_t x, y;
            side_pixel(b, s, t, d, &x, &y);
            if (is_mine(v, x, y)) {
                depth[t] = (int32_t)d;
                break;
            }
        }
        ok[t] = depth[t] >= 0;
    }
    /* Start level at the median depth, wide enough for the steepest side
     * (a least-squares start would follow the other sides' corners, which
     * sit far from a tilted box's side); fit, narrow, fit again. */
    uint32_t m = 0;
    for (uint32_t t = 0; t < n; t++)
        if (ok[t])
            runs[m++] = (uint32_t)depth[t];
    if (m < 2)
        return 0;
    double a = nc_median_u32(runs, m), c = 0;
    keep_near(depth, ok, n, a, c, 3 * SIDE_TOL + SIDE_MAX_SLOPE * n / 2);
    if (!fit_line(depth, ok, n, &a, &c))
        return 0;
    keep_near(depth, ok, n, a, c, 3 * SIDE_TOL);
    if (!fit_line(depth, ok, n, &a, &c))
        return 0;
    uint32_t on = keep_near(depth, ok, n, a, c, SIDE_TOL);
    /* a side runs along its edge of the box, a few degrees off at most
     * (a straight stroke such as a slanted 1 is a line too, but not
     * along its box) */
    double near = fmin(a, a + c * (n - 1));
    if (on < SIDE_MIN_SHARE * n || fabs(c) > SIDE_MAX_SLOPE || near > SIDE_TOL + 1)
        return 0;
    /* thickness: the median run of ink from the edge point inwards */
    m = 0;
    for (uint32_t t = 0; t < n; t++) {
        if (!ok[t])
            continue;
        uint32_t d = (uint32_t)depth[t];
        uint32_t x, y;
        side_pixel(b, s, t, d, &x, &y);
        while (d < reach && is_mine(v, x, y)) {
            d++;
            if (d < reach)
                side_pixel(b, s, t, d, &x, &y);
        }
        runs[m++] = d - (uint32_t)depth[t];
    }
    uint32_t thick = nc_median_u32(runs, m);
    /* a side is thin against the box: a filled blob is no box */
    return thick * 4 <= reach ? thick : 0;
}

/* Clear side s's pixels from the mask: at each position on the line, the
 * run from the edge point inwards, up to thick + 1 pixels. */
static void strip_side(uint8_t *mask, const comp_view *v, const nc_rect *b, int s,
                       const int32_t *depth, const uint8_t *ok, uint32_t thick)
{
    int across = s == SIDE_TOP || s == SIDE_BOTTOM;
    uint32_t n = across ? b->width : b->height;
    uint32_t reach = across ? b->height : b->width;
    for (uint32_t t = 0; t < n; t++) {
        if (!ok[t])
            continue;
        for (uint32_t d = (uint32_t)depth[t]; d < reach && d <= (uint32_t)depth[t] + thick;
             d++) {
            uint32_t x, y;
            side_pixel(b, s, t, d, &x, &y);
            if (!is_mine(v, x, y))
                break;
            mask[(size_t)y * v->width + x] = 0;
        }
    }
}

/* Median height of the components shaped like digits: the scale a box
 * side is measured against.  0 if there are none. */
static uint32_t digit_scale(const nc_component *comps, uint32_t ncomps,
                            const nc_segment_params *p, uint32_t *heights)
{
    uint32_t m = 0;
    for (uint32_t c = 0; c < ncomps; c++) {
        const nc_rect *b = &comps[c].box;
        if (comps[c].area >= p->min_area && b->height >= p->min_height &&
            b->width <= 2 * b->height &&
            (uint64_t)comps[c].area * 5 >= (uint64_t)b->width * b->height)
            heights[m++] = b->height;
    }
    return nc_median_u32(heights, m);
}

int nc_segment_strip_boxes(uint8_t *mask, const uint32_t *labels, uint32_t width,
                           const nc_component *comps, uint32_t ncomps,
                           const nc_segment_params *p, uint32_t *ret_stripped)
{
    uint32_t stripped = 0, cap = 0;
    int32_t *depth = NULL;
    uint32_t *runs = NULL;
    uint8_t *ok = NULL;
    uint32_t *heights = malloc(((size_t)ncomps + 1) * sizeof *heights);
    if (!heights)
        return -ENOMEM;
    uint32_t h = digit_scale(comps, ncomps, p, heights);
    free(heights);
    /* a side is longer than any stroke of a digit */
    double min_len = SIDE_MIN_LEN * (h > p->min_height ? h : p->min_height);
    for (uint32_t c = 0; c < ncomps; c++) {
        const nc_rect *b = &comps[c].box;
        if ((b->width < min_len && b->height < min_len) ||
            (uint64_t)comps[c].area * 5 > (uint64_t)b->width * b->height)
            continue;       /* only large, sparse components */
        uint32_t n = b->width > b->height ? b->width : b->height;
        if (n > cap) {
            int32_t *nd = realloc(depth, (size_t)n * sizeof *nd);
            if (!nd)
                goto nomem;
            depth = nd;
            uint32_t *nr = realloc(runs, (size_t)n * sizeof *nr);
            if (!nr)
                goto nomem;
            runs = nr;
            uint8_t *no = realloc(ok, n);
            if (!no)
                goto nomem;
            ok = no;
            cap = n;
        }
        comp_view v = { mask, labels, width, c + 1 };
        uint32_t found = 0;
        for (int s = 0; s < 4; s++) {
            uint32_t len = s == SIDE_TOP || s == SIDE_BOTTOM ? b->width : b->height;
            if (len < min_len)
                continue;
            /* sides cleared before this one moved its edge points at the
             * corners only, which the line fit tolerates */
            uint32_t thick = find_side(&v, b, s, depth, ok, runs);
            if (thick) {
                strip_side(mask, &v, b, s, depth, ok, thick);
                found = 1;
            }
        }
        stripped += found;
    }
    free(depth);
    free(runs);
    free(ok);
    *ret_stripped = stripped;
    return 0;
nomem:
    free(depth);
    free(runs);
    free(ok);
    return -ENOMEM;
}
