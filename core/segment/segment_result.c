/* core/segment/segment_result.c — segment.h's steps 9 and 10: lines in
 * reading order (rows top to bottom, left to right within a row), each
 * digit's patch cut from the frame and prepared, frame coordinates, and
 * the result's arrays; nc_segment_result_free (segment.h), which frees
 * them.
 *
 * Layer: core, private to the segmentation module but for
 * nc_segment_result_free. */
#include "segment_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void nc_segment_result_free(nc_segment_result *r)
{
    if (!r)
        return;
    free(r->digits);
    free(r->lines);
    free(r->inputs);
    free(r->alts);
    free(r->alt_inputs);
    free(r->patch_pixels);
    free(r);
}

/* ---- step 9 and output -------------------------------------------------- */

typedef struct line_info {
    uint32_t id;
    uint32_t x0, x1, y0, y1;
    uint32_t row;
} line_info;

static int line_by_y(const void *a, const void *b)
{
    const line_info *p = a, *q = b;
    uint32_t cp = p->y0 + p->y1, cq = q->y0 + q->y1;
    return cp < cq ? -1 : cp > cq;
}
static int line_by_row_x(const void *a, const void *b)
{
    const line_info *p = a, *q = b;
    if (p->row != q->row)
        return p->row < q->row ? -1 : 1;
    return p->x0 < q->x0 ? -1 : p->x0 > q->x0;
}

/* What a pixel near a digit is, for make_patch. */
enum { PX_PAPER = 0, PX_OTHER = 1, PX_MINE = 2 };

/* A patch pixel's level from its grey level p: the same for every pixel of
 * that level, so each of the 256 is worked out (a division and a rounding)
 * at most once per patch and kept in lut (-1: not yet). */
static uint8_t patch_level(int16_t lut[256], uint8_t p, uint32_t light, double paper,
                           double span)
{
    if (lut[p] < 0) {
        double v = light ? 255 - p : p;
        double s = 255.0 * (paper - v) / span;
        lut[p] = s <= 0 ? 0 : s >= 255 ? 255 : (uint8_t)lrint(s);
    }
    return (uint8_t)lut[p];
}

/* Fill one digit's patch (light ink, 0 = paper).  The first sweep notes,
 * for the box widened by 2, what each pixel is (paper, other ink, this
 * piece's ink) in code, so the second sweep's tests of a pixel and its
 * 4 neighbours are byte reads, not label and group look-ups.  -ENOMEM is
 * its only failure. */
static int make_patch(const work *w, const piece *a, uint32_t light, nc_image *patch,
                      nc_rect pb)
{
    const nc_image *roi = w->roi;
    /* Paper level: mean of unlabelled pixels in the box widened by 3. */
    uint32_t qx0 = pb.x > 2 ? pb.x - 2 : 0, qy0 = pb.y > 2 ? pb.y - 2 : 0;
    uint32_t qx1 = umin(roi->width, pb.x + pb.width + 2);
    uint32_t qy1 = umin(roi->height, pb.y + pb.height + 2);
    const size_t qw = qx1 - qx0;
    uint8_t *code = malloc(qw * (qy1 - qy0));
    if (!code)
        return -ENOMEM;
    double psum = 0;
    uint64_t pn = 0;
    uint32_t hist[256] = { 0 }, nink = 0;
    for (uint32_t y = qy0; y < qy1; y++) {
        const uint8_t *row = roi->pixels + (size_t)y * roi->stride;
        uint8_t *c = code + (y - qy0) * qw;
        for (uint32_t x = qx0; x < qx1; x++) {
            uint8_t v = light ? 255 - row[x] : row[x];
            if (!nc_seg_label_at(w, x, y)) {
                psum += v;
                pn++;
                c[x - qx0] = PX_PAPER;
            } else if (nc_seg_piece_has(w, a, x, y)) {
                hist[v]++;
                nink++;
                c[x - qx0] = PX_MINE;
            } else
                c[x - qx0] = PX_OTHER;
        }
    }
    double paper = pn ? psum / pn : 255.0;
    /* Ink level: the 10th percentile of the digit's own pixels, so a few
     * very dark noise pixels do not set the scale. */
    uint32_t acc = 0, ink = 0;
    for (ink = 0; ink < 255; ink++) {
        acc += hist[ink];
        if (acc * 10 >= nink)
            break;
    }
    double span = paper - ink;
    if (span < 1)
        span = 1;
    int16_t lut[256];
    memset(lut, 0xff, sizeof lut);      /* -1: not computed yet */
    for (uint32_t j = 0; j < pb.height; j++) {
        uint32_t y = pb.y + j;
        const uint8_t *row = roi->pixels + (size_t)y * roi->stride;
        uint8_t *out = patch->pixels + (size_t)j * patch->stride;
        for (uint32_t i = 0; i < pb.width; i++) {
            uint32_t x = pb.x + i;
            /* the ring and the neighbours tested lie inside the coded box:
             * it is pb widened by 2, clipped only by the ROI's edges */
            const uint8_t *c = code + (y - qy0) * qw + (x - qx0);
            /* paper next to the digit is kept (strokes' soft edges) */
            int in = c[0] == PX_MINE;
            if (c[0] == PX_PAPER)
                in = (x > 0 && c[-1] == PX_MINE) ||
                     (x + 1 < roi->width && c[1] == PX_MINE) ||
                     (y > 0 && *(c - qw) == PX_MINE) ||
                     (y + 1 < roi->height && c[qw] == PX_MINE);
            if (!in) {
                out[i] = 0;
                continue;
            }
            out[i] = patch_level(lut, row[x], light, paper, span);
        }
    }
    free(code);
    return 0;
}

/* d's box, line, flags and patch box (a's box plus a 1-pixel ring, clipped
 * to the ROI) in ROI coordinates; the patch's bytes. */
static size_t place_digit(const work *w, const piece *a, uint32_t line, uint32_t flags,
                          nc_segment_digit *d)
{
    d->line = line;
    d->flags = flags;
    d->box = (nc_rect){ a->x0, a->y0, pw(a), ph(a) };
    uint32_t px0 = a->x0 ? a->x0 - 1 : 0, py0 = a->y0 ? a->y0 - 1 : 0;
    uint32_t px1 = umin(w->roi->width, a->x1 + 1), py1 = umin(w->roi->height, a->y1 + 1);
    d->patch_box = (nc_rect){ px0, py0, px1 - px0, py1 - py0 };
    return (size_t)d->patch_box.width * d->patch_box.height;
}

/* d's patch drawn from a at pixels + *off (advanced past it), then d's
 * boxes moved from ROI to frame coordinates.  -ENOMEM or 0. */
static int fill_patch(const work *w, const piece *a, uint32_t light, uint32_t ox, uint32_t oy,
                      uint8_t *pixels, size_t *off, nc_segment_digit *d)
{
    d->patch = (nc_image){ d->patch_box.width, d->patch_box.height, d->patch_box.width,
                           pixels + *off };
    *off += (size_t)d->patch_box.width * d->patch_box.height;
    if (make_patch(w, a, light, &d->patch, d->patch_box) < 0)
        return -ENOMEM;
    d->box.x += ox; d->box.y += oy;
    d->patch_box.x += ox; d->patch_box.y += oy;
    return 0;
}

/* d's patch through prep into out (len floats); a patch without ink gives
 * zeros and the NOPREP flag. */
static int prep_digit(const nc_prep *prep, nc_segment_digit *d, float *out, size_t len)
{
    int e = nc_prep_apply(&d->patch, prep, out);
    if (e == -ENOENT) {
        memset(out, 0, len * sizeof(float));
        d->flags |= NC_SEGMENT_DIGIT_NOPREP;
        return 0;
    }
    return e < 0 ? e : 0;
}

/* Live pieces of group g among the k listed in order. */
static uint32_t group_pieces(const work *w, const uint32_t *order, uint32_t k, uint32_t g)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < k; i++)
        n += w->pc[order[i]].group == g;
    return n;
}

int nc_seg_build_result(work *w, uint32_t polarity, uint32_t ox, uint32_t oy,
                        uint32_t *order, uint32_t *scratch, nc_segment_result **ret)
{
    int err = -ENOMEM;
    nc_segment_result *r = calloc(1, sizeof *r);
    line_info *li = NULL;
    uint32_t *line_pos = NULL;
    piece *wholes = NULL;       /* the uncut components of r->alts */
    if (!r)
        return -ENOMEM;
    r->polarity = polarity;
    r->components = w->ncomps;
    uint32_t k = nc_seg_sorted_live(w, order);
    if (k > NC_SEGMENT_MAX_DIGITS) {
        err = -ERANGE;
        goto fail;
    }
    /* Lines that still have digits, top to bottom; lines overlapping
     * vertically by half the shorter one share a row, read left to right. */
    li = calloc((size_t)w->nlines + 1, sizeof *li);
    line_pos = malloc(((size_t)w->nlines + 1) * sizeof *line_pos);
    if (!li || !line_pos)
        goto fail;
    uint32_t nl = 0;
    for (uint32_t i = 0; i < k; i++) {
        const piece *a = &w->pc[order[i]];
        if (!nl || li[nl - 1].id != a->line)
            li[nl++] = (line_info){ a->line, a->x0, a->x1, a->y0, a->y1, 0 };
        line_info *L = &li[nl - 1];
        L->x0 = umin(L->x0, a->x0); L->x1 = umax(L->x1, a->x1);
        L->y0 = umin(L->y0, a->y0); L->y1 = umax(L->y1, a->y1);
    }
    qsort(li, nl, sizeof *li, line_by_y);
    for (uint32_t i = 0, row = 0, head = 0; i < nl; i++) {
        if (i > 0) {
            const line_info *h = &li[head];
            uint32_t lo = umax(h->y0, li[i].y0), hi = umin(h->y1, li[i].y1);
            uint32_t shorter = umin(h->y1 - h->y0, li[i].y1 - li[i].y0);
            if (!(hi > lo && 2 * (hi - lo) >= shorter)) {
                row++;
                head = i;
            }
        }
        li[i].row = row;
    }
    qsort(li, nl, sizeof *li, line_by_row_x);
    for (uint32_t i = 0; i < nl; i++)
        line_pos[li[i].id] = i;     /* ids are < nlines */

    r->count = k;
    r->line_count = nl;
    if (k) {
        r->digits = calloc(k, sizeof *r->digits);
        r->lines = calloc(nl, sizeof *r->lines);
        if (!r->digits || !r->lines)
            goto fail;
    }
    /* Digits grouped by output line, each already in x order. */
    uint32_t di = 0;
    size_t patch_bytes = 0;
    for (uint32_t l = 0; l < nl; l++) {
        nc_segment_line *L = &r->lines[l];
        L->first = di;
        for (uint32_t i = 0; i < k; i++) {
            const piece *a = &w->pc[order[i]];
            if (line_pos[a->line] != l)
                continue;
            patch_bytes += place_digit(w, a, l, a->flags, &r->digits[di++]);
            scratch[di - 1] = order[i];
            L->count++;
            scratch[k + L->count - 1] = ph(a);
        }
        L->height = nc_median_u32(scratch + k, L->count);
        L->box = (nc_rect){ li[l].x0 + ox, li[l].y0 + oy, li[l].x1 - li[l].x0,
                            li[l].y1 - li[l].y0 };
    }
    /* Step 9: the two parts of a component cut in exactly two, side by side
     * in reading order, are offered uncut as well when the whole is no
     * broader than one digit may be (NC_SEG_BROAD_DIGIT, the bar that step 8 uses
     * to undo a cut): most touching pairs are broader, and are only ever
     * read as two. */
    if (w->p->alternatives && !w->p->expected_count && k >= 2) {
        if (!(r->alts = calloc(k / 2, sizeof *r->alts)) ||
            !(wholes = malloc(k / 2 * sizeof *wholes)))
            goto fail;
        for (uint32_t i = 0; i + 1 < k; i++) {
            const piece *a = &w->pc[scratch[i]], *b = &w->pc[scratch[i + 1]];
            if (r->digits[i].line != r->digits[i + 1].line || a->group != b->group ||
                !(a->flags & b->flags & NC_SEGMENT_DIGIT_SPLIT) ||
                group_pieces(w, order, k, a->group) != 2)
                continue;
            piece u = *a;
            u.x0 = umin(a->x0, b->x0); u.x1 = umax(a->x1, b->x1);
            u.y0 = umin(a->y0, b->y0); u.y1 = umax(a->y1, b->y1);
            u.area = a->area + b->area;
            u.flags = (a->flags | b->flags) & ~(uint32_t)NC_SEGMENT_DIGIT_SPLIT;
            if (pw(&u) > NC_SEG_BROAD_DIGIT * r->lines[r->digits[i].line].height)
                continue;
            wholes[r->alt_count] = u;
            nc_segment_alt *al = &r->alts[r->alt_count++];
            al->first = i;
            patch_bytes += place_digit(w, &u, r->digits[i].line, u.flags, &al->whole);
            i++;                /* a part belongs to one alternative at most */
        }
    }
    if (patch_bytes && !(r->patch_pixels = malloc(patch_bytes)))
        goto fail;
    size_t off = 0;
    const uint32_t light = polarity == NC_SEGMENT_POLARITY_LIGHT_INK;
    for (uint32_t i = 0; i < k; i++)
        if (fill_patch(w, &w->pc[scratch[i]], light, ox, oy, r->patch_pixels, &off,
                       &r->digits[i]) < 0)
            goto fail;          /* err is still -ENOMEM, its only failure */
    for (uint32_t j = 0; j < r->alt_count; j++)
        if (fill_patch(w, &wholes[j], light, ox, oy, r->patch_pixels, &off,
                       &r->alts[j].whole) < 0)
            goto fail;
    if (w->p->prep && k) {
        nc_prep prep = *w->p->prep;
        prep.invert = 0;        /* patches are light ink already */
        r->input_len = nc_prep_out_len(&prep);
        if (!(r->inputs = malloc((size_t)k * r->input_len * sizeof(float))) ||
            (r->alt_count &&
             !(r->alt_inputs = malloc((size_t)r->alt_count * r->input_len * sizeof(float)))))
            goto fail;
        for (uint32_t i = 0; i < k; i++)
            if ((err = prep_digit(&prep, &r->digits[i], r->inputs + (size_t)i * r->input_len,
                                  r->input_len)) < 0)
                goto fail;
        for (uint32_t j = 0; j < r->alt_count; j++)
            if ((err = prep_digit(&prep, &r->alts[j].whole,
                                  r->alt_inputs + (size_t)j * r->input_len, r->input_len)) < 0)
                goto fail;
    }
    if (w->p->charset == NC_SEGMENT_CHARSET_TEXT)
        nc_seg_chars_words(r, w->p->word_gap);
    free(wholes);
    free(li);
    free(line_pos);
    *ret = r;
    return 0;
fail:
    free(wholes);
    free(li);
    free(line_pos);
    nc_segment_result_free(r);
    return err;
}
