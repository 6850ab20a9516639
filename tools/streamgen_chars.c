/* tools/streamgen_chars.c — see streamgen_chars.h.
 *
 * A string is laid out in units of its capital height (the writer's
 * reference height, neocog_unipen_ref.c): each character's strokes are
 * resampled, slanted about their baseline by the string's slant (plus a
 * little of their own), scaled to units, jittered per stroke, and put on
 * the baseline with their ink a character gap (0.10..0.32 units) after the
 * previous one's, or a word gap (0.65..1.1) at a space.  Then the height
 * in pixels is drawn and shrunk until the rotated string fits its band
 * (as the digit strings do), each character is drawn with a round pen into
 * its own field and max-composited into the string's canvas, and the
 * canvas is placed by nc_render_place_string. */
#include "streamgen_chars.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strokes.h"

#define PI NC_RENDER_PI
/* A sample this much taller than its writer's capitals is a stray stroke
 * or a wrong segment (the tallest real ones, ( ) [ ] { } | j g, reach
 * about 1.6). */
#define MAX_REL_HEIGHT 2.0f

/* ---- texts --------------------------------------------------------------- */

static const char *const words[] = {
    "quick", "jump", "big", "pig", "yes", "joy", "lift", "high", "inky", "gift", "jig",
    "dig", "type", "query", "apply", "hello", "world", "fix", "zip", "java", "kilo", "lamp",
    "mix", "night", "open", "quip", "right", "sight", "tiny", "vivid", "wax", "young", "jazz",
    "fig", "Jim", "Kiwi", "Paris", "Tokyo", "ok", "go", "it", "is", "in", "at", "by", "of",
    "a", "I", "the", "and", "you", "page", "egg", "hat", "milk", "bread", "Oslo", "Nile",
    "zebra", "equip", "pilot", "judge", "ginger", "style", "happy", "dizzy", "Quebec",
    "Wight", "fjord", "lilac", "Mr", "Dr", "unit", "item", "lot", "box", "bay", "key",
};
#define N_WORDS (sizeof words / sizeof *words)

static uint32_t below(uint64_t *rng, uint32_t n)
{
    return (uint32_t)(nc_rng_next(rng) % n);
}

static void put(char *out, size_t cap, size_t *len, const char *s)
{
    for (; *s && *len + 1 < cap; s++)
        out[(*len)++] = *s;
    out[*len] = 0;
}

static uint32_t non_spaces(const char *s)
{
    uint32_t n = 0;
    for (; *s; s++)
        n += *s != ' ';
    return n;
}

/* AB-1294-XK: two or three groups of two to four capitals or digits, each
 * group all letters or all digits or mixed, joined by '-' (or a space). */
static void make_code(uint64_t *rng, char *out, size_t cap)
{
    static const char upper[] = "ABCDEFGHJKLMNPQRSTUVWXYZ", digit[] = "0123456789";
    size_t len = 0;
    uint32_t groups = 2 + below(rng, 2);
    out[0] = 0;
    for (uint32_t g = 0; g < groups; g++) {
        if (g)
            put(out, cap, &len, below(rng, 4) ? "-" : " ");
        uint32_t n = 2 + below(rng, 3), kind = below(rng, 3);
        for (uint32_t i = 0; i < n; i++) {
            int letter = kind == 0 || (kind == 2 && below(rng, 2));
            char c[2] = { letter ? upper[below(rng, sizeof upper - 1)]
                                 : digit[below(rng, sizeof digit - 1)], 0 };
            put(out, cap, &len, c);
        }
    }
}

static void make_words(uint64_t *rng, char *out, size_t cap)
{
    size_t len = 0;
    uint32_t n = 1 + below(rng, 3);
    out[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            put(out, cap, &len, " ");
        put(out, cap, &len, words[below(rng, N_WORDS)]);
    }
}

/* Words and the marks that come in pieces or sit at the baseline or the
 * top: , . ! ? : ; ' " % = - */
static void make_phrase(uint64_t *rng, char *out, size_t cap)
{
    static const char *const suffix[] = { ",", ".", "!", "?", ":", ";", "'s", "." };
    size_t len = 0;
    uint32_t n = 1 + below(rng, 3);
    out[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            put(out, cap, &len, " ");
        uint32_t form = below(rng, 8);
        char num[16];
        switch (form) {
        case 0:             /* 50% */
            num[0] = (char)('1' + below(rng, 9));
            num[1] = (char)('0' + below(rng, 10));
            num[2] = '%';
            num[3] = 0;
            put(out, cap, &len, num);
            break;
        case 1:             /* 12:30 */
            num[0] = (char)('1' + below(rng, 9));
            num[1] = ':';
            num[2] = (char)('0' + below(rng, 6));
            num[3] = (char)('0' + below(rng, 10));
            num[4] = 0;
            put(out, cap, &len, num);
            break;
        case 2:             /* x=4 */
            num[0] = "xyijn"[below(rng, 5)];
            num[1] = '=';
            num[2] = (char)('0' + below(rng, 10));
            num[3] = 0;
            put(out, cap, &len, num);
            break;
        case 3:             /* "word" */
            put(out, cap, &len, "\"");
            put(out, cap, &len, words[below(rng, N_WORDS)]);
            put(out, cap, &len, "\"");
            break;
        case 4:             /* e-mail, x-ray */
            put(out, cap, &len, words[below(rng, N_WORDS)]);
            put(out, cap, &len, "-");
            put(out, cap, &len, words[below(rng, N_WORDS)]);
            break;
        default:            /* word, word? word. word's */
            put(out, cap, &len, words[below(rng, N_WORDS)]);
            put(out, cap, &len, suffix[below(rng, sizeof suffix / sizeof *suffix)]);
            break;
        }
    }
}

void nc_text_make(uint32_t kind, uint32_t max_chars, uint64_t *rng, char *out, size_t cap)
{
    if (!cap)
        return;
    if (kind == NC_TEXT_MIXED)
        kind = below(rng, 3);
    for (int tries = 0; tries < 32; tries++) {
        if (kind == NC_TEXT_CODES)
            make_code(rng, out, cap);
        else if (kind == NC_TEXT_WORDS)
            make_words(rng, out, cap);
        else
            make_phrase(rng, out, cap);
        if (non_spaces(out) <= max_chars)
            return;
    }
    /* still too long: cut at the last space that fits, else hard */
    size_t keep = 0;
    uint32_t n = 0;
    for (size_t i = 0; out[i]; i++) {
        if (out[i] == ' ')
            keep = i;
        else if (++n > max_chars) {
            out[keep ? keep : i] = 0;
            return;
        }
    }
}

/* ---- the sample index ---------------------------------------------------- */

/* Whether sample s is whole and of a sane size: not much taller than its
 * writer's capitals (a stray stroke, a wrong segment) and, for classes of
 * some height, within reach of its class's typical height (some sites' `: =
 * " %` samples hold only part of the character). */
static int usable(const nc_unipen *u, const nc_unipen_sample *s)
{
    float rel = (s->box[3] - s->box[1]) / s->ref, typical = u->class_height[s->cls];
    if (!(s->ref > 0) || !(rel <= MAX_REL_HEIGHT) ||
        !(s->box[2] - s->box[0] <= 2.5f * s->ref))
        return 0;
    return !(typical >= 0.3f) || (rel >= 0.6f * typical && rel <= 1.7f * typical);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

int nc_text_source_init(nc_text_source *src, const nc_unipen *u, uint32_t writers)
{
    if (!src || !u || writers > NC_TEXT_WRITERS_ALL)
        return -EINVAL;
    memset(src, 0, sizeof *src);
    src->u = u;
    src->kind = NC_TEXT_MIXED;
    src->max_chars = 16;
    uint8_t *take = calloc(u->n_writers + 1, 1);
    if (!take)
        return -ENOMEM;
    for (uint32_t w = 0; w < u->n_writers; w++)
        take[w] = writers == NC_TEXT_WRITERS_ALL ||
                  nc_unipen_is_val_writer(u->writer_names[w]) == (writers == NC_TEXT_WRITERS_VAL);
    int err = -ENOMEM;
    for (uint32_t i = 0; i < u->n_samples; i++) {
        const nc_unipen_sample *s = &u->samples[i];
        if (!take[s->writer] || !usable(u, s))
            continue;
        if (take[s->writer] == 1)
            take[s->writer] = 2;        /* has a usable sample */
        if (s->n_strokes > src->max_strokes)
            src->max_strokes = s->n_strokes;
        src->n_class[s->cls]++;
    }
    for (uint32_t c = 0; c < NC_UNIPEN_CLASSES; c++) {
        if (!src->n_class[c])
            continue;
        if (!(src->by_class[c] = malloc(src->n_class[c] * sizeof(uint32_t))))
            goto fail;
        src->n_class[c] = 0;
    }
    for (uint32_t i = 0; i < u->n_samples; i++) {
        const nc_unipen_sample *s = &u->samples[i];
        if (take[s->writer] && usable(u, s))
            src->by_class[s->cls][src->n_class[s->cls]++] = i;
    }
    if (!(src->writers = malloc((u->n_writers + 1) * sizeof *src->writers)))
        goto fail;
    for (uint32_t w = 0; w < u->n_writers; w++)
        if (take[w] == 2)
            src->writers[src->n_writers++] = w;
    qsort(src->writers, src->n_writers, sizeof *src->writers, cmp_u32);
    err = -ENOENT;
    /* every character a text may hold */
    for (uint32_t c = 0; c < NC_UNIPEN_CLASSES; c++) {
        char ch = (char)(c + '!');
        if (strchr("#$&()*+/<>@[\\]^_`{|}~", ch))
            continue;
        if (!src->n_class[c])
            goto fail;
    }
    free(take);
    return 0;
fail:
    free(take);
    nc_text_source_fini(src);
    return err;
}

void nc_text_source_fini(nc_text_source *src)
{
    if (!src)
        return;
    for (uint32_t c = 0; c < NC_UNIPEN_CLASSES; c++)
        free(src->by_class[c]);
    free(src->writers);
    memset(src, 0, sizeof *src);
}

/* A sample of class c, by writer w when w wrote one. */
static uint32_t pick_sample(const nc_text_source *src, uint32_t c, uint32_t w, uint64_t *rng)
{
    const uint32_t *list = src->by_class[c], n = src->n_class[c];
    uint32_t mine = 0;
    for (uint32_t i = 0; i < n; i++)
        mine += src->u->samples[list[i]].writer == w;
    if (!mine)
        return list[below(rng, n)];
    uint32_t k = below(rng, mine);
    for (uint32_t i = 0; i < n; i++)
        if (src->u->samples[list[i]].writer == w && !k--)
            return list[i];
    return list[0];
}

/* ---- one string ---------------------------------------------------------- */

typedef struct glyph {
    nc_strokes st;              /* in units: baseline y = 0, ink left x = 0 */
    double x;                   /* where its ink starts, units */
    double x0, y0, x1, y1;      /* its points' box, units (pen not included) */
} glyph;

static void glyphs_free(glyph *g, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        nc_strokes_fini(&g[i].st);
}

/* Sample si's strokes in units of its writer's capital height, slanted by
 * slant_deg about its baseline and jittered. */
static int unit_glyph(const nc_unipen *u, uint32_t si, double slant_deg, uint64_t *rng,
                      uint32_t *start_scratch, glyph *g)
{
    const nc_unipen_sample *s = &u->samples[si];
    uint32_t p0 = u->stroke_start[s->first_stroke];
    uint32_t n_pts = u->stroke_start[s->first_stroke + s->n_strokes] - p0;
    for (uint32_t k = 0; k <= s->n_strokes; k++)
        start_scratch[k] = u->stroke_start[s->first_stroke + k] - p0;
    nc_strokes raw = { s->n_strokes, n_pts, start_scratch, u->xy + 2 * (size_t)p0 };
    float side = fmaxf(s->box[2] - s->box[0], s->box[3] - s->box[1]);
    float spacing = (side > 0.0f ? fminf(side, s->ref) : s->ref) / 32.0f;
    int err = nc_strokes_resample(&raw, spacing, &g->st);
    if (err)
        return err;
    double m[6], k = 1.0 / s->ref;
    float cx = 0.5f * (s->box[0] + s->box[2]);
    /* On the line by its class's typical drop below it: the estimate from
     * the file's neighbours (s->baseline) is often off by a third of a
     * capital for writers who wrote in grids, and a string written on a
     * line keeps its baseline better than that. */
    float drop = u->class_drop[s->cls];
    float baseline = isfinite(drop) ? s->box[3] - drop * s->ref : s->baseline;
    /* slant about the character's foot on its baseline, then to units with
     * the baseline at y = 0 */
    if ((err = nc_strokes_affine(slant_deg, 0.0, k, k, cx, baseline, m)) ||
        (err = nc_strokes_transform(&g->st, m)))
        goto fail;
    const double shift[6] = { 1, 0, -cx, 0, 1, -baseline + nc_rng_range(rng, -0.04, 0.04) };
    if ((err = nc_strokes_transform(&g->st, shift)))
        goto fail;
    nc_deform_rng dr = { nc_rng_next(rng) };
    if ((err = nc_strokes_jitter(&g->st, &dr, 0.02f, 3.0f, 0.04f)))
        goto fail;
    float b[4];
    if ((err = nc_strokes_bbox(&g->st, b)))
        goto fail;
    g->x0 = b[0]; g->y0 = b[1]; g->x1 = b[2]; g->y1 = b[3];
    return 0;
fail:
    nc_strokes_fini(&g->st);
    return err;
}

/* Draw glyph g (units) at pixel scale h into canvas loc with its ink
 * starting at canvas column x_px and its baseline on row base_px; its
 * truth box (coverage > 1/4) into box. */
static int draw_glyph(const glyph *g, double h, double pen, double x_px, double base_px,
                      nc_fimg *loc, double box[4])
{
    /* the glyph's canvas-continuous position: X = x_px + pen / 2 + (x - x0) h */
    double ox = x_px + pen / 2 - g->x0 * h, oy = base_px;
    long fx0 = (long)floor(ox + g->x0 * h - pen - 2), fy0 = (long)floor(oy + g->y0 * h - pen - 2);
    long fx1 = (long)ceil(ox + g->x1 * h + pen + 2), fy1 = (long)ceil(oy + g->y1 * h + pen + 2);
    uint32_t fw = (uint32_t)(fx1 - fx0), fh = (uint32_t)(fy1 - fy0);
    if (fw > NC_STROKES_MAX_FIELD || fh > NC_STROKES_MAX_FIELD)
        return -EINVAL;
    nc_strokes st = { 0 };
    int err = -ENOMEM;
    float *field = malloc((size_t)fw * fh * sizeof *field);
    st.n_strokes = g->st.n_strokes;
    st.n_points = g->st.n_points;
    st.start = malloc((g->st.n_strokes + 1) * sizeof *st.start);
    st.xy = malloc(2 * (size_t)g->st.n_points * sizeof *st.xy);
    if (!field || !st.start || !st.xy)
        goto out;
    memcpy(st.start, g->st.start, (g->st.n_strokes + 1) * sizeof *st.start);
    memcpy(st.xy, g->st.xy, 2 * (size_t)g->st.n_points * sizeof *st.xy);
    /* field pixel i has its centre at field x = i, which is canvas pixel
     * fx0 + i, centred at canvas-continuous fx0 + i + 0.5 */
    const double m[6] = { h, 0, ox - fx0 - 0.5, 0, h, oy - fy0 - 0.5 };
    if ((err = nc_strokes_transform(&st, m)) ||
        (err = nc_strokes_render(&st, (float)pen, field, fw, fh)))
        goto out;
    long bx0 = LONG_MAX, by0 = LONG_MAX, bx1 = LONG_MIN, by1 = LONG_MIN;
    for (uint32_t j = 0; j < fh; j++)
        for (uint32_t i = 0; i < fw; i++) {
            float v = field[(size_t)j * fw + i];
            long cx = fx0 + (long)i, cy = fy0 + (long)j;
            if (v > 0.25f) {
                if (cx < bx0) bx0 = cx;
                if (cy < by0) by0 = cy;
                if (cx + 1 > bx1) bx1 = cx + 1;
                if (cy + 1 > by1) by1 = cy + 1;
            }
            if (v <= 0 || cx < 0 || cy < 0 || cx >= (long)loc->w || cy >= (long)loc->h)
                continue;
            float *d = &loc->v[(size_t)cy * loc->w + (size_t)cx];
            if (v > *d)
                *d = v;
        }
    if (bx1 <= bx0) {           /* a dot thinner than a quarter: its centre */
        bx0 = (long)floor(ox + 0.5 * (g->x0 + g->x1) * h);
        by0 = (long)floor(oy + 0.5 * (g->y0 + g->y1) * h);
        bx1 = bx0 + 1;
        by1 = by0 + 1;
    }
    box[0] = (double)bx0; box[1] = (double)by0; box[2] = (double)bx1; box[3] = (double)by1;
    err = 0;
out:
    free(field);
    nc_strokes_fini(&st);
    return err;
}

static int text_string(void *ctx, const nc_render_params *p, uint64_t *rng, uint32_t band_y0,
                       uint32_t band_h, nc_fimg *cov, nc_render_string *ts)
{
    const nc_text_source *src = ctx;
    const nc_unipen *u = src->u;
    char text[4 * NC_RENDER_MAX_CHARS];
    if (src->text)
        snprintf(text, sizeof text, "%s", src->text);
    else
        nc_text_make(src->kind, src->max_chars, rng, text, sizeof text);
    glyph g[NC_RENDER_MAX_CHARS];
    uint8_t label[NC_RENDER_MAX_CHARS], space[NC_RENDER_MAX_CHARS];
    uint32_t src_idx[NC_RENDER_MAX_CHARS], n = 0;
    double theta = nc_rng_range(rng, -p->max_rotate_deg, p->max_rotate_deg) * PI / 180.0;
    double h = nc_rng_range(rng, p->min_height, p->max_height);
    double slant = nc_rng_range(rng, -12.0, 12.0);
    double pen_frac = nc_rng_range(rng, 0.09, 0.17);
    uint32_t writer = src->writers[below(rng, src->n_writers)];
    uint32_t *scratch = malloc((src->max_strokes + 1) * sizeof *scratch);
    if (!scratch)
        return -ENOMEM;
    /* Lay out in units. */
    double x = 0, top = 0, bottom = 0;
    int err = 0, gap_is_word = 0;
    for (const char *c = text; *c && n < NC_RENDER_MAX_CHARS; c++) {
        if (*c == ' ') {
            gap_is_word = 1;
            continue;
        }
        uint32_t cls = (uint32_t)(*c - '!');
        if (cls >= NC_UNIPEN_CLASSES || !src->n_class[cls])
            continue;
        uint32_t si = pick_sample(src, cls, writer, rng);
        if ((err = unit_glyph(u, si, slant + nc_rng_range(rng, -3.0, 3.0), rng, scratch,
                              &g[n])) < 0)
            goto out;
        if (n)
            x += gap_is_word ? nc_rng_range(rng, 0.65, 1.1) : nc_rng_range(rng, 0.10, 0.32);
        g[n].x = x;
        x += g[n].x1 - g[n].x0 + pen_frac;      /* the ink's width */
        top = fmin(top, g[n].y0);
        bottom = fmax(bottom, g[n].y1);
        label[n] = (uint8_t)*c;
        space[n] = (uint8_t)(n && gap_is_word);
        src_idx[n] = si;
        gap_is_word = 0;
        n++;
    }
    if (!n) {
        err = -EINVAL;
        goto out;
    }
    /* Shrink h until the rotated string fits the band and the frame. */
    const uint32_t W = cov->w;
    double lw = 0, lh = 0, margin = 0;
    for (int it = 0; it < 64; it++) {
        lw = x * h;
        margin = 0.5 * h;
        lh = (bottom - top + pen_frac) * h + 2 * margin;
        double ext_h = (lh - margin) + (lw + 2 * margin) * fabs(sin(theta));
        double ext_w = (lw + 2 * margin) * 1.1 + 8;
        if ((ext_h <= band_h && ext_w <= W) || h < 10)
            break;
        h *= 0.93;
    }
    if (h < 10) {
        err = -EINVAL;          /* frame too small for this many strings */
        goto out;
    }
    double pen = fmax(1.5, pen_frac * h);
    uint32_t cw = (uint32_t)ceil(lw + 2 * margin), ch = (uint32_t)ceil(lh);
    nc_local_string ls = { .canvas = { cw, ch, calloc((size_t)cw * ch, sizeof(float)) },
                           .theta = theta, .h = h, .margin = margin, .lh = lh,
                           .vc = ch / 2.0, .count = n };
    if (!ls.canvas.v) {
        err = -ENOMEM;
        goto out;
    }
    double base_px = margin + (pen_frac / 2 - top) * h;
    for (uint32_t i = 0; i < n && !err; i++) {
        err = draw_glyph(&g[i], h, pen, margin + g[i].x * h, base_px, &ls.canvas, ls.box[i]);
        ls.label[i] = label[i];
        ls.source[i] = src_idx[i];
        ls.space_before[i] = space[i];
    }
    ls.x_end = margin + lw;
    ls.box_up = (ls.vc - margin) / h;
    ls.box_down = (ch - margin - ls.vc) / h;
    if (!err)
        err = nc_render_place_string(p, rng, &ls, band_y0, band_h, cov, ts);
    free(ls.canvas.v);
out:
    glyphs_free(g, n);
    free(scratch);
    return err;
}

int nc_render_text_frame(const nc_render_params *p, const nc_text_source *src, uint64_t *rng,
                         nc_image *frame, nc_render_truth *ret_truth)
{
    if (!src || !src->u || !src->n_writers || src->max_chars < 4 ||
        src->max_chars > NC_RENDER_MAX_CHARS || src->kind > NC_TEXT_MIXED)
        return -EINVAL;
    return nc_render_frame_with(p, text_string, (void *)src, rng, frame, ret_truth);
}
