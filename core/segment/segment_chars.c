/* core/segment/segment_chars.c — segment.h's character mode (charset TEXT): the
 * steps that differ from digits' (5b, 6', 7', 10b there).
 *
 * Layer: core.  Digits are all about one height and come in one piece or
 * break by accident; characters are of three heights (x-height, capitals
 * and ascenders, descenders), and several come in pieces by design: the
 * dot of an i or j, the two of a colon, the bars of =, the circles of %,
 * the ticks of ".  Marks (. , ' -) are characters of their own, which the
 * digit steps drop as noise.  The rules below judge sizes against the
 * line's scale S and its pen, so they hold for any size of writing. */
#include "segment_internal.h"

#include <math.h>
#include <stdlib.h>

/* Per line: scale S (3rd quartile of heights), pen (median stroke run, in
 * pixels), baseline (median bottom of pieces at least S / 2 tall). */
typedef struct line_metrics {
    double S, pen, base;
    double tall;                /* 9th decile of heights: capitals, ascenders */
    uint32_t tallest;
} line_metrics;

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The value at fraction q of v[0..n) once sorted (v is sorted in place). */
static uint32_t quantile(uint32_t *v, uint32_t n, double q)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_u32);
    return v[(uint32_t)floor(q * (n - 1) + 0.5)];
}

static void measure_line(const work *w, uint32_t l, uint32_t *scratch, line_metrics *m)
{
    uint32_t k = 0, tallest = 0;
    for (uint32_t i = 0; i < w->npc; i++)
        if (w->pc[i].alive && w->pc[i].line == l) {
            scratch[k++] = ph(&w->pc[i]);
            tallest = umax(tallest, ph(&w->pc[i]));
        }
    m->tallest = tallest;
    m->S = quantile(scratch, k, 0.75);
    m->tall = fmax(m->S, quantile(scratch, k, 0.9));
    m->pen = nc_seg_line_stroke(w, l, scratch) / 16.0;
    if (m->pen < 1)
        m->pen = 1;
    k = 0;
    for (uint32_t i = 0; i < w->npc; i++)
        if (w->pc[i].alive && w->pc[i].line == l && 2 * ph(&w->pc[i]) >= m->S)
            scratch[k++] = w->pc[i].y1;
    m->base = k ? quantile(scratch, k, 0.5) : 0;
}

/* ---- step 5b ------------------------------------------------------------- */

int nc_seg_chars_rehome(work *w)
{
    const uint32_t nl = w->nlines;
    if (nl < 2)
        return 0;
    uint32_t *ext = malloc((size_t)nl * 5 * sizeof *ext);     /* tallest, x0, x1, y0, y1 */
    if (!ext)
        return -ENOMEM;
    for (uint32_t l = 0; l < nl; l++) {
        ext[5 * l] = 0;
        ext[5 * l + 1] = ext[5 * l + 3] = UINT32_MAX;
        ext[5 * l + 2] = ext[5 * l + 4] = 0;
    }
    for (uint32_t i = 0; i < w->npc; i++) {
        const piece *a = &w->pc[i];
        uint32_t *e = &ext[5 * a->line];
        if (!a->alive)
            continue;
        e[0] = umax(e[0], ph(a));
        e[1] = umin(e[1], a->x0); e[2] = umax(e[2], a->x1);
        e[3] = umin(e[3], a->y0); e[4] = umax(e[4], a->y1);
    }
    for (uint32_t i = 0; i < w->npc; i++) {
        piece *a = &w->pc[i];
        if (!a->alive)
            continue;
        const uint32_t own = ext[5 * a->line];
        const double cx = 0.5 * (a->x0 + a->x1), cy = 0.5 * (a->y0 + a->y1);
        uint32_t best = NONE;
        double best_d = INFINITY;
        for (uint32_t m = 0; m < nl; m++) {
            const uint32_t *e = &ext[5 * m];
            const double T = e[0];
            if (m == a->line || !e[0] || 2 * own >= e[0])
                continue;
            if (cy < e[3] - 0.5 * T || cy > e[4] + 0.5 * T || cx < e[1] - T || cx > e[2] + T)
                continue;
            double d = cy < e[3] ? e[3] - cy : cy > e[4] ? cy - e[4] : 0;
            if (d < best_d) {
                best_d = d;
                best = m;
            }
        }
        if (best != NONE)
            a->line = best;     /* extents stay those of the first pass */
    }
    free(ext);
    return 0;
}

/* ---- step 6' ------------------------------------------------------------- */

/* A dot: at most 2.5 pens both ways. */
static int is_dot(const piece *a, const line_metrics *m)
{
    return pw(a) <= 2.5 * m->pen && ph(a) <= 2.5 * m->pen;
}

/* A mark: at most S / 2 both ways. */
static int is_mark(const piece *a, const line_metrics *m)
{
    return 2.0 * pw(a) <= m->S && 2.0 * ph(a) <= m->S;
}

/* The baseline near piece a: the median bottom of the pieces of its line
 * at least S / 2 tall within 3 tall of it along the line (a tilted line's
 * baseline changes along it); the line's own where there are none. */
static double local_base(const work *w, const piece *a, const line_metrics *m)
{
    uint32_t v[64], k = 0;
    const double cx = 0.5 * (a->x0 + a->x1);
    for (uint32_t i = 0; i < w->npc && k < 64; i++) {
        const piece *b = &w->pc[i];
        if (b->alive && b->line == a->line && 2 * ph(b) >= m->S &&
            fabs(0.5 * (b->x0 + b->x1) - cx) <= 3 * m->tall)
            v[k++] = b->y1;
    }
    return k ? quantile(v, k, 0.5) : m->base;
}

/* Whether a and b (the same line, a.x0 <= b.x0) are pieces of one
 * character (segment.h step 6'). */
static int belong_together(const work *w, const piece *a, const piece *b,
                           const line_metrics *m, float merge_overlap)
{
    const double col = (double)umin(a->x1, b->x1) - umax(a->x0, b->x0);     /* < 0: apart */
    const double row = (double)umin(a->y1, b->y1) - umax(a->y0, b->y0);
    const piece *narrow = pw(a) <= pw(b) ? a : b, *wide = narrow == a ? b : a;
    const double shorter = umin(ph(a), ph(b));
    /* stacked: i j ! ? : ; = (the lower piece no lower than a comma
     * reaches: dust under a letter is not its dot) */
    const piece *lower = a->y0 + a->y1 > b->y0 + b->y1 ? a : b;
    if (row <= 0.25 * shorter && -row <= 0.8 * m->tall &&
        0.5 * (lower->y0 + lower->y1) <= local_base(w, lower, m) + 0.15 * m->S) {
        /* slanted writing and dots written off to the right: the upper
         * piece may stand aside by almost half the distance between them */
        const double c = 0.5 * (narrow->x0 + narrow->x1);
        const double tol = 0.75 * m->pen + 0.45 * fmax(0.0, -row);
        if (c >= wide->x0 - tol && c <= wide->x1 + tol)
            return 1;
    }
    /* overlapping columns: % and broken letters, not a dot under a T */
    if (col > 0 && col >= merge_overlap * pw(narrow) && !is_dot(narrow, m) && row > 0)
        return 1;
    /* two ticks side by side above the middle of the line: " */
    const double base = local_base(w, a, m);
    if (2 * pw(a) <= m->tall && 2 * ph(a) <= m->tall && 2 * pw(b) <= m->tall &&
        2 * ph(b) <= m->tall && row >= 0.3 * shorter &&
        a->y1 < base - 0.4 * m->S && b->y1 < base - 0.4 * m->S &&
        -col <= fmax(2.5 * m->pen, 0.4 * m->S))
        return 1;
    return 0;
}

/* The tallest live piece of a's line other than a. */
static uint32_t tallest_other(const work *w, const piece *a, const line_metrics *lm)
{
    (void)lm;
    uint32_t t = 0;
    for (uint32_t i = 0; i < w->npc; i++) {
        const piece *b = &w->pc[i];
        if (b != a && b->alive && b->line == a->line)
            t = umax(t, ph(b));
    }
    return t;
}

int nc_seg_chars_merge(work *w, uint32_t *order, uint32_t *scratch)
{
    const nc_segment_params *p = w->p;
    line_metrics *lm = malloc(((size_t)w->nlines + 1) * sizeof *lm);
    if (!lm)
        return -ENOMEM;
    for (uint32_t l = 0; l < w->nlines; l++)
        measure_line(w, l, scratch, &lm[l]);
    /* Merge until nothing changes; each merge kills a piece, so this ends. */
    for (int changed = 1; changed;) {
        changed = 0;
        uint32_t k = nc_seg_sorted_live(w, order);
        for (uint32_t i = 0; i < k && !changed; i++) {
            piece *a = &w->pc[order[i]];
            const line_metrics *m = &lm[a->line];
            const double reach = fmax(2.5 * m->pen, 0.4 * m->S) + m->pen;
            for (uint32_t j = i + 1; j < k; j++) {
                piece *b = &w->pc[order[j]];
                if (b->line != a->line || b->x0 > a->x1 + reach)
                    break;
                if (belong_together(w, a, b, m, p->merge_overlap)) {
                    nc_seg_piece_merge(w, a, b);
                    changed = 1;
                    break;
                }
            }
        }
    }
    for (uint32_t l = 0; l < w->nlines; l++)
        measure_line(w, l, scratch, &lm[l]);
    uint32_t frame_tallest = 0;
    for (uint32_t l = 0; l < w->nlines; l++)
        frame_tallest = umax(frame_tallest, lm[l].tallest);
    for (uint32_t i = 0; i < w->npc; i++) {
        piece *a = &w->pc[i];
        if (!a->alive)
            continue;
        const line_metrics *m = &lm[a->line];
        const double pen = m->pen;
        if (a->area < 0.4 * pen * pen || (pw(a) < 0.7 * pen && ph(a) < 0.7 * pen) ||
            ph(a) > 2.2 * m->S || m->tallest < p->min_height ||
            10 * m->tallest < 3 * frame_tallest) {
            a->alive = 0;
            continue;
        }
        /* a box side or a ruled column drawn with a thinner pen */
        if (pw(a) * 4 < ph(a) && 4 * nc_seg_stroke_runs(w, a) < 16 * pen) {
            a->alive = 0;
            continue;
        }
        /* the side of a box drawn around the string: a thin stroke well
         * above and below the line's other pieces (an l or a 1 stands no
         * taller than the capitals, a j is broader) */
        if (pw(a) * 6 < ph(a) && ph(a) > 1.25 * tallest_other(w, a, lm)) {
            a->alive = 0;
            continue;
        }
        /* a dot wholly under the line or far above it is dust, not a mark */
        if (is_dot(a, m) && (a->y0 > local_base(w, a, m) + 0.15 * m->S ||
                             a->y1 + 1.6 * m->S < local_base(w, a, m))) {
            a->alive = 0;
            continue;
        }
        if (is_mark(a, m))
            a->flags |= NC_SEGMENT_DIGIT_MARK;
    }
    free(lm);
    return 0;
}

/* ---- step 7' ------------------------------------------------------------- */

int nc_seg_chars_split(work *w, uint32_t *scratch, uint32_t *heights, uint32_t *prof)
{
    (void)heights;
    line_metrics *lm = malloc(((size_t)w->nlines + 1) * sizeof *lm);
    if (!lm)
        return -ENOMEM;
    for (uint32_t l = 0; l < w->nlines; l++)
        measure_line(w, l, scratch, &lm[l]);
    int err = 0;
    const uint32_t n0 = w->npc;
    for (uint32_t i = 0; i < n0 && !err; i++) {
        const piece *a = &w->pc[i];
        const double S = lm[a->line].S;
        if (!a->alive || !(S > 0) || pw(a) <= 3.0 * S)
            continue;
        long n = lround(pw(a) / (0.75 * S));
        n = n < 2 ? 2 : n > (long)w->p->max_split ? (long)w->p->max_split : n;
        err = nc_seg_split_piece(w, i, (uint32_t)n, prof, 0);
    }
    free(lm);
    return err;
}

/* ---- step 10b ------------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void nc_seg_chars_words(nc_segment_result *r, float word_gap)
{
    int64_t gaps[NC_SEGMENT_MAX_DIGITS];
    for (uint32_t l = 0; l < r->line_count; l++) {
        const nc_segment_line *L = &r->lines[l];
        if (L->count < 2)
            continue;
        uint32_t n = 0;
        for (uint32_t i = L->first; i + 1 < L->first + L->count; i++) {
            const nc_rect a = r->digits[i].box, b = r->digits[i + 1].box;
            int64_t g = (int64_t)b.x - ((int64_t)a.x + a.width);
            gaps[n++] = g > 0 ? g : 0;
        }
        qsort(gaps, n, sizeof *gaps, cmp_i64);
        /* with one gap there is nothing to compare with: the bar alone */
        const double med = n >= 2 ? (double)gaps[n / 2] : 0.0;
        const double bar = fmax(word_gap * med, 0.35 * L->height);
        for (uint32_t i = L->first; i + 1 < L->first + L->count; i++) {
            const nc_rect a = r->digits[i].box, b = r->digits[i + 1].box;
            if ((double)b.x - ((double)a.x + a.width) > bar)
                r->digits[i + 1].flags |= NC_SEGMENT_DIGIT_SPACE_BEFORE;
        }
    }
    for (uint32_t j = 0; j < r->alt_count; j++)
        r->alts[j].whole.flags |=
            r->digits[r->alts[j].first].flags & NC_SEGMENT_DIGIT_SPACE_BEFORE;
}
