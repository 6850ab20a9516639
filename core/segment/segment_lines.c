/* core/segment/segment_lines.c — segment.h's steps 4 to 6: components to
 * candidate pieces (a "piece" is a group of components restricted to a
 * column range: segment_internal.h), boxes drawn around digits dropped,
 * pieces gathered into lines (tallest first), lines cut at wide gaps and
 * overlapping pieces merged (digit mode; segment_chars.c merges
 * characters).  The piece helpers are segment_pieces.c's.
 *
 * Layer: core, private to the segmentation module. */
#include "segment_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- step 4: components -> candidate pieces ----------------------------- */

int nc_seg_collect(work *w)
{
    const nc_segment_params *p = w->p;
    uint32_t max_h = p->max_height ? p->max_height : umax(1, w->roi->height * 3 / 4);
    /* characters: a thin pen's period is judged against its line later */
    uint32_t min_area = p->charset == NC_SEGMENT_CHARSET_TEXT ? umin(p->min_area, 4)
                                                               : p->min_area;
    for (uint32_t c = 0; c < w->ncomps; c++) {
        const nc_component *k = &w->comps[c];
        uint32_t bw = k->box.width, bh = k->box.height;
        w->group_of[c] = NONE;
        if (k->area < min_area || bh > max_h)
            continue;
        /* Cut by the edge of the view: shadows, vignetting, the paper's
         * edge; a digit cut in part cannot be read anyway. */
        if (p->drop_edge && (k->box.x == 0 || k->box.y == 0 ||
                             k->box.x + bw == w->roi->width || k->box.y + bh == w->roi->height))
            continue;
        if ((double)bw > p->max_aspect * bh)
            continue;               /* a rule, an underline, a border side */
        if ((double)k->area < p->min_fill * bw * bh)
            continue;               /* a box drawn around the digits */
        if (w->npc >= NC_SEG_MAX_PIECES)
            return -ERANGE;
        w->group_of[c] = c;
        int err = nc_seg_push_piece(w, (piece){ c, k->box.x, k->box.x + bw, k->box.y,
                                         k->box.y + bh, k->area, NONE, 0, 1 });
        if (err < 0)
            return err;
    }
    return 0;
}

/* Share of piece a's pixels (a single component at this stage) lying in
 * the middle of its bounding box: the box shrunk by a quarter of its height
 * on every side, and vertically by a further 6% of its width, so the edges
 * of a box drawn a few degrees off level still fall outside. */
static double middle_share(const work *w, const piece *a)
{
    uint32_t mx = ph(a) / 4, my = ph(a) / 4 + pw(a) * 6 / 100;
    if (2 * mx >= pw(a) || 2 * my >= ph(a))
        return 0;
    uint32_t mid = 0, all = 0;
    for (uint32_t y = a->y0; y < a->y1; y++)
        for (uint32_t x = a->x0; x < a->x1; x++) {
            uint32_t l = nc_seg_label_at(w, x, y);
            if (l != a->group + 1)
                continue;
            all++;
            mid += x >= a->x0 + mx && x < a->x1 - mx && y >= a->y0 + my && y < a->y1 - my;
        }
    return all ? (double)mid / all : 0;
}

/* A box drawn around digits (a meter window, a form field) is a sparse
 * component whose pixels hug its bounding box and whose box holds whole
 * other components of digit size; thick boxes pass min_fill, so look for
 * that directly.  A digit broken into pieces can hold its own fragments in
 * its box, which is why the candidate must also be hollow. */
void nc_seg_drop_enclosures(work *w)
{
    for (uint32_t i = 0; i < w->npc; i++) {
        piece *a = &w->pc[i];
        if (ph(a) < 2 * w->p->min_height || a->area * 5 > pw(a) * ph(a))
            continue;           /* only sparse, tall-enough candidates */
        uint32_t inside = 0;
        for (uint32_t j = 0; j < w->npc && inside < 2; j++) {
            const piece *b = &w->pc[j];
            if (j != i && b->x0 > a->x0 && b->x1 < a->x1 && b->y0 > a->y0 && b->y1 < a->y1 &&
                ph(b) * 10 >= ph(a) * 3)
                inside++;
        }
        if (inside >= 2 && middle_share(w, a) <= 0.03)
            a->alive = 0;
    }
    /* compact, so later passes see live pieces only */
    uint32_t k = 0;
    for (uint32_t i = 0; i < w->npc; i++)
        if (w->pc[i].alive)
            w->pc[k++] = w->pc[i];
        else
            w->group_of[w->pc[i].group] = NONE;
    w->npc = k;
}

/* ---- step 5: lines ------------------------------------------------------ */

/* qsort has no context argument; thread-local keeps segmenters on different
 * threads apart. */
static _Thread_local const piece *sort_base;
static int by_height_desc(const void *a, const void *b)
{
    const piece *p = &sort_base[*(const uint32_t *)a], *q = &sort_base[*(const uint32_t *)b];
    uint32_t hp = ph(p), hq = ph(q);
    if (hp != hq)
        return hp > hq ? -1 : 1;
    return p->x0 < q->x0 ? -1 : p->x0 > q->x0;
}

/* Assign every piece a line (tallest first, see segment.h step 5).  best_dx
 * and best_m are per-line scratch of npc entries. */
void nc_seg_assign_lines(work *w, uint32_t *order, double *best_dx, uint32_t *best_m,
                         uint32_t *line_h)
{
    uint32_t n = w->npc;
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    sort_base = w->pc;
    qsort(order, n, sizeof *order, by_height_desc);
    w->nlines = 0;
    for (uint32_t oi = 0; oi < n; oi++) {
        piece *a = &w->pc[order[oi]];
        double ax = 0.5 * (a->x0 + a->x1);
        for (uint32_t l = 0; l < w->nlines; l++)
            best_dx[l] = INFINITY;
        /* nearest member of each line, by centre column */
        for (uint32_t oj = 0; oj < oi; oj++) {
            const piece *b = &w->pc[order[oj]];
            double dx = fabs(0.5 * (b->x0 + b->x1) - ax);
            if (dx < best_dx[b->line]) {
                best_dx[b->line] = dx;
                best_m[b->line] = order[oj];
            }
        }
        uint32_t best = NONE;
        double best_ov = 0.5, best_d = INFINITY;
        for (uint32_t l = 0; l < w->nlines; l++) {
            if (best_dx[l] == INFINITY)
                continue;
            const piece *b = &w->pc[best_m[l]];
            /* widen by the line's tallest height, not the neighbour's: the
             * neighbour may itself be the lower half of a broken digit */
            double grow = 0.35 * line_h[l];
            double lo = fmax(a->y0, b->y0 - grow), hi = fmin(a->y1, b->y1 + grow);
            double ov = (hi - lo) / ph(a);
            if (ov > best_ov + 1e-9 || (ov >= best_ov - 1e-9 && ov >= 0.5 && best_dx[l] < best_d)) {
                best = l;
                best_ov = ov;
                best_d = best_dx[l];
            }
        }
        if (best == NONE) {
            best = w->nlines++;
            line_h[best] = ph(a);       /* tallest first: its first member */
        }
        a->line = best;
    }
}

/* A digit broken by the binarisation (the detached bar of a 5, the open
 * arm of a 4) leaves a piece clearly shorter than its line beside the
 * rest, overlapping it in columns too little for the merge above.  Such a
 * fragment joins its nearer neighbour when they nearly touch and their
 * union is no wider than a broad digit.  Dots (small both ways) are left
 * alone, so a decimal point is not glued to a digit. */
static void attach_fragments(work *w, uint32_t *order, const uint32_t *heights)
{
    for (int changed = 1; changed;) {
        changed = 0;
        uint32_t k = nc_seg_sorted_live(w, order);
        for (uint32_t i = 0; i < k && !changed; i++) {
            piece *a = &w->pc[order[i]];
            double H = heights[a->line];
            if (!(ph(a) < 0.7 * H) || (pw(a) < 0.25 * H && ph(a) < 0.35 * H))
                continue;
            piece *best = NULL;
            double best_gap = 0.15 * H;
            for (int side = -1; side <= 1; side += 2) {
                if ((side < 0 && i == 0) || (side > 0 && i + 1 >= k))
                    continue;
                piece *b = &w->pc[order[i + side]];
                if (b->line != a->line)
                    continue;
                double gap = side < 0 ? (double)a->x0 - b->x1 : (double)b->x0 - a->x1;
                uint32_t uw = umax(a->x1, b->x1) - umin(a->x0, b->x0);
                uint32_t uh = umax(a->y1, b->y1) - umin(a->y0, b->y0);
                /* split siblings share a group: not built yet here */
                if (gap <= best_gap && uw <= 1.15 * H && uh <= w->p->max_rel_height * H) {
                    best = b;
                    best_gap = gap;
                }
            }
            if (best) {
                nc_seg_piece_merge(w, best, a);
                changed = 1;
            }
        }
    }
}

/* Cut lines at wide gaps (step 5, either charset). */
void nc_seg_cut_lines(work *w, uint32_t *order, uint32_t *scratch, uint32_t *heights)
{
    for (uint32_t l = 0; l < w->nlines; l++)
        heights[l] = nc_seg_line_height(w, l, scratch);
    uint32_t k = nc_seg_sorted_live(w, order);
    uint32_t cur_line = NONE, new_id = NONE, right = 0;
    for (uint32_t i = 0; i < k; i++) {
        piece *a = &w->pc[order[i]];
        uint32_t l = a->line;
        if (l != cur_line) {
            cur_line = l;
            new_id = l;
            right = a->x1;
        } else {
            /* heights[] is indexed by the old ids, which stay valid */
            if (a->x0 > right && a->x0 - right > w->p->max_gap * heights[l])
                new_id = w->nlines++;
            right = umax(right, a->x1);
        }
        a->line = new_id;
    }
}

/* Merge overlapping pieces, attach fragments, drop what is too short for
 * its line (step 6, digit mode). */
void nc_seg_merge_digits(work *w, uint32_t *order, uint32_t *scratch, uint32_t *heights)
{
    /* Walk each line left to right, folding a piece into the one before it
     * when their column ranges overlap enough. */
    uint32_t k = nc_seg_sorted_live(w, order);
    piece *cur = NULL;
    for (uint32_t i = 0; i < k; i++) {
        piece *a = &w->pc[order[i]];
        if (cur && cur->line == a->line) {
            uint32_t lo = umax(cur->x0, a->x0), hi = umin(cur->x1, a->x1);
            uint32_t narrow = umin(pw(cur), pw(a));
            if (hi > lo && (double)(hi - lo) >= w->p->merge_overlap * narrow) {
                nc_seg_piece_merge(w, cur, a);
                continue;
            }
        }
        cur = a;
    }

    for (uint32_t l = 0; l < w->nlines; l++)
        heights[l] = nc_seg_line_height(w, l, scratch);
    attach_fragments(w, order, heights);

    /* Drop what is too short for its line. */
    for (uint32_t l = 0; l < w->nlines; l++)
        heights[l] = nc_seg_line_height(w, l, scratch);
    for (uint32_t l = 0; l < w->nlines; l++)
        scratch[l] = nc_seg_line_stroke(w, l, scratch + w->nlines);
    /* The main line (most pieces): a piece alone on another line is judged
     * by the main line's height and pen when the main line holds at least
     * four (one string in view; what stands alone beside it is a texture's
     * stroke, a speck or a box side far more often than a digit). */
    uint32_t *members = order, main_line = NONE;
    for (uint32_t l = 0; l < w->nlines; l++)
        members[l] = 0;
    for (uint32_t i = 0; i < w->npc; i++)
        if (w->pc[i].alive)
            members[w->pc[i].line]++;
    for (uint32_t l = 0; l < w->nlines; l++)
        if (main_line == NONE || members[l] > members[main_line])
            main_line = l;
    if (main_line != NONE && members[main_line] < 4)
        main_line = NONE;
    for (uint32_t i = 0; i < w->npc; i++) {
        piece *a = &w->pc[i];
        if (!a->alive)
            continue;
        const uint32_t ref = main_line != NONE && members[a->line] == 1 ? main_line : a->line;
        double h = ph(a), H = heights[ref];
        if (h < w->p->min_height || h < w->p->min_rel_height * H ||
            h > w->p->max_rel_height * H)
            a->alive = 0;
        /* A thin stroke standing clearly above and below its neighbours is
         * the side of a box or a ruled column, not a 1. */
        if (pw(a) * 4 < ph(a) && h > 1.12 * H)
            a->alive = 0;
        /* A stroke much thinner than the pen that wrote the line is a box
         * side or a ruled column drawn with another pen, even at digit
         * height.  On generated frames box sides measure under 0.2 of the
         * line's median run, upright 1s 0.4 or more. */
        if (pw(a) * 4 < ph(a) && 4 * nc_seg_stroke_runs(w, a) < scratch[ref])
            a->alive = 0;
    }
}
