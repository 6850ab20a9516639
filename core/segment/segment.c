/* core/segment/segment.c — digits out of a camera frame: components, lines,
 * merging, splitting, ordering and per-digit patches.
 *
 * Layer: core.  The pipeline and its parameters are documented in
 * segment.h; binarisation lives in segment_binarise.c.  Working coordinates
 * are the ROI's; boxes are moved to frame coordinates at the very end.
 *
 * A candidate digit ("piece") is a set of components (a "group": every
 * component c with group_of[c] == piece.group) restricted to the columns
 * [x0, x1).  Merging unions groups; splitting makes pieces that share a
 * group with disjoint column ranges.  Pixel-level work (profiles, tight
 * boxes, patches) scans the labels inside a piece's box.  Labels are
 * written only on ink (nc_image_components_ink: the frame's paper would be
 * a megabyte of zeros per frame), so every read goes through label_at,
 * which consults the mask first. */
#include "segment_internal.h"

#include <math.h>
#include <string.h>

/* More candidate pieces than this after filtering is a frame of noise:
 * line building is quadratic in them, so stop before it. */
#define MAX_PIECES 4096u
/* The broadest a single digit gets on camera frames, in line heights (a
 * broad 0, 3 or 5 reaches about 1.15 to 1.25; touching pairs are mostly
 * broader): steps 7 to 9 keep, join or offer whole what is no broader. */
#define BROAD_DIGIT 1.3

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

/* ---- small helpers ------------------------------------------------------ */


/* The component label at (x, y), 0 on paper. */
static uint32_t label_at(const work *w, uint32_t x, uint32_t y)
{
    size_t i = (size_t)y * w->roi->width + x;
    return w->mask[i] ? w->labels[i] : 0;
}

static int piece_has(const work *w, const piece *a, uint32_t x, uint32_t y)
{
    uint32_t l = label_at(w, x, y);
    return l && w->group_of[l - 1] == a->group && x >= a->x0 && x < a->x1;
}

/* Shrink a's box to the pixels it really has (after a split) and count
 * them; 0 if it has none. */
static uint32_t piece_tighten(const work *w, piece *a)
{
    uint32_t x0 = NONE, y0 = NONE, x1 = 0, y1 = 0, area = 0;
    for (uint32_t y = a->y0; y < a->y1; y++)
        for (uint32_t x = a->x0; x < a->x1; x++)
            if (piece_has(w, a, x, y)) {
                x0 = umin(x0, x); x1 = umax(x1, x + 1);
                y0 = umin(y0, y); y1 = umax(y1, y + 1);
                area++;
            }
    if (!area)
        return 0;
    a->x0 = x0; a->x1 = x1; a->y0 = y0; a->y1 = y1;
    a->area = area;
    return area;
}

static int push_piece(work *w, piece a)
{
    if (w->npc == w->cap_pc) {
        if (w->cap_pc >= 4 * MAX_PIECES)
            return -ERANGE;
        uint32_t cap = w->cap_pc ? 2 * w->cap_pc : 64;
        piece *n = realloc(w->pc, (size_t)cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        w->pc = n;
        w->cap_pc = cap;
    }
    w->pc[w->npc++] = a;
    return 0;
}

/* Fold b into a: b's components join a's group, boxes unite. */
void nc_seg_piece_merge(work *w, piece *a, piece *b)
{
    if (a->group != b->group)
        for (uint32_t c = 0; c < w->ncomps; c++)
            if (w->group_of[c] == b->group)
                w->group_of[c] = a->group;
    a->x0 = umin(a->x0, b->x0); a->x1 = umax(a->x1, b->x1);
    a->y0 = umin(a->y0, b->y0); a->y1 = umax(a->y1, b->y1);
    a->area += b->area;
    a->flags |= NC_SEGMENT_DIGIT_MERGED | b->flags;
    b->alive = 0;
}

/* ---- step 4: components -> candidate pieces ----------------------------- */

static int collect(work *w)
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
        if (w->npc >= MAX_PIECES)
            return -ERANGE;
        w->group_of[c] = c;
        int err = push_piece(w, (piece){ c, k->box.x, k->box.x + bw, k->box.y,
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
            uint32_t l = label_at(w, x, y);
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
static void drop_enclosures(work *w)
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
static int by_line_x(const void *a, const void *b)
{
    const piece *p = &sort_base[*(const uint32_t *)a], *q = &sort_base[*(const uint32_t *)b];
    if (p->line != q->line)
        return p->line < q->line ? -1 : 1;
    return p->x0 < q->x0 ? -1 : p->x0 > q->x0;
}

/* Assign every piece a line (tallest first, see segment.h step 5).  best_dx
 * and best_m are per-line scratch of npc entries. */
static void assign_lines(work *w, uint32_t *order, double *best_dx, uint32_t *best_m,
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

/* Median height of the live pieces of line l (scratch: n entries). */
uint32_t nc_seg_line_height(const work *w, uint32_t l, uint32_t *scratch)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < w->npc; i++)
        if (w->pc[i].alive && w->pc[i].line == l)
            scratch[k++] = ph(&w->pc[i]);
    return nc_median_u32(scratch, k);
}

/* Sort live pieces by (line, x0) into order; returns how many. */
uint32_t nc_seg_sorted_live(const work *w, uint32_t *order)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < w->npc; i++)
        if (w->pc[i].alive)
            order[k++] = i;
    sort_base = w->pc;
    qsort(order, k, sizeof *order, by_line_x);
    return k;
}

/* Mean horizontal run length of a's pixels, x16 (fixed point): the pen's
 * width for upright strokes, more for slanted or horizontal ones. */
uint32_t nc_seg_stroke_runs(const work *w, const piece *a)
{
    uint32_t area = 0, runs = 0;
    for (uint32_t y = a->y0; y < a->y1; y++) {
        int prev = 0;
        for (uint32_t x = a->x0; x < a->x1; x++) {
            int in = piece_has(w, a, x, y);
            area += (uint32_t)in;
            runs += (uint32_t)(in && !prev);
            prev = in;
        }
    }
    return runs ? 16 * area / runs : 0;
}

/* The line's pen width: median of its pieces' stroke_runs (scratch: npc). */
uint32_t nc_seg_line_stroke(const work *w, uint32_t l, uint32_t *scratch)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < w->npc; i++)
        if (w->pc[i].alive && w->pc[i].line == l)
            scratch[k++] = nc_seg_stroke_runs(w, &w->pc[i]);
    return nc_median_u32(scratch, k);
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

/* Cut lines at wide gaps, then merge overlapping pieces (steps 5-6). */
static int cut_and_merge(work *w, uint32_t *order, uint32_t *scratch, uint32_t *heights)
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

    if (w->p->charset == NC_SEGMENT_CHARSET_TEXT)
        return nc_seg_chars_merge(w, order, scratch);

    /* Merge: walk each line left to right, folding a piece into the one
     * before it when their column ranges overlap enough. */
    k = nc_seg_sorted_live(w, order);
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
    return 0;
}

/* ---- step 7: splitting --------------------------------------------------- */

/* Typical digit width of line l: median width of pieces of ordinary
 * proportions, clamped to 0.45..0.85 of the line height (MNIST-like digits
 * are about 0.65 as wide as tall; the clamp keeps a line made only of "1"s
 * or only of touching pairs from setting an absurd scale). */
static double typical_width(const work *w, uint32_t l, uint32_t height, uint32_t *scratch)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < w->npc; i++) {
        const piece *a = &w->pc[i];
        if (a->alive && a->line == l && pw(a) >= 0.3 * height && pw(a) <= 1.2 * height)
            scratch[k++] = pw(a);
    }
    double t = k ? nc_median_u32(scratch, k) : 0.65 * height;
    return fmin(fmax(t, 0.45 * height), 0.85 * height);
}

/* Cut piece idx into n parts at ink-profile minima near the even cuts.  With min_h > 0
 * the cut is not made when a part would be shorter than min_h: a broad
 * digit's own long stroke (the bar of a 5) is not a digit of its own,
 * while touching digits cut apart are each about as tall as their line. */
int nc_seg_split_piece(work *w, uint32_t idx, uint32_t n, uint32_t *prof, uint32_t min_h)
{
    piece a = w->pc[idx];
    uint32_t width = pw(&a);
    if (n < 2 || width < 2 * n)
        return 0;
    for (uint32_t x = a.x0; x < a.x1; x++)
        prof[x - a.x0] = 0;
    for (uint32_t y = a.y0; y < a.y1; y++)
        for (uint32_t x = a.x0; x < a.x1; x++)
            if (piece_has(w, &a, x, y))
                prof[x - a.x0]++;
    uint32_t cuts[65];
    cuts[0] = a.x0;
    double step = (double)width / n;
    for (uint32_t k = 1; k < n; k++) {
        double nominal = a.x0 + k * step;
        uint32_t lo = (uint32_t)fmax(cuts[k - 1] + 1, nominal - 0.3 * step);
        uint32_t hi = (uint32_t)fmin(a.x1 - 1, nominal + 0.3 * step);
        uint32_t best = (uint32_t)lround(nominal);
        if (best <= cuts[k - 1])
            best = cuts[k - 1] + 1;
        double best_cost = INFINITY;
        for (uint32_t x = lo; x <= hi; x++) {
            /* ink first, distance from the even cut breaks ties */
            double cost = prof[x - a.x0] + 0.01 * fabs(x - nominal);
            if (cost < best_cost) {
                best_cost = cost;
                best = x;
            }
        }
        if (best >= a.x1)
            return 0;
        cuts[k] = best;
    }
    cuts[n] = a.x1;
    piece parts[64];
    uint32_t np = 0;
    for (uint32_t k = 0; k < n; k++) {
        piece b = a;
        b.x0 = cuts[k];
        b.x1 = cuts[k + 1];
        b.flags |= NC_SEGMENT_DIGIT_SPLIT;
        b.alive = 1;
        if (!piece_tighten(w, &b))
            continue;
        if (ph(&b) < min_h)
            return 0;
        parts[np++] = b;
    }
    w->pc[idx].alive = 0;
    for (uint32_t k = 0; k < np; k++) {
        int err = push_piece(w, parts[k]);
        if (err < 0)
            return err;
    }
    return 0;
}

static int split_wide(work *w, uint32_t *scratch, uint32_t *heights, uint32_t *prof)
{
    uint32_t n0 = w->npc;
    for (uint32_t l = 0; l < w->nlines; l++)
        heights[l] = nc_seg_line_height(w, l, scratch);
    double *tw = malloc((size_t)w->nlines * sizeof *tw + 1);
    if (!tw)
        return -ENOMEM;
    for (uint32_t l = 0; l < w->nlines; l++)
        tw[l] = typical_width(w, l, heights[l], scratch);
    int err = 0;
    for (uint32_t i = 0; i < n0 && !err; i++) {
        piece *a = &w->pc[i];
        if (!a->alive || !heights[a->line])
            continue;
        double t = tw[a->line];
        /* Wide for its line, and wider than tall: single digits hardly
         * ever are (a broad 0 or 3 reaches about 1.05), touching pairs
         * almost always. */
        if (pw(a) <= w->p->split_ratio * t || pw(a) <= 1.1 * heights[a->line])
            continue;
        /* a broken digit put back together (merged pieces) may be as broad
         * as attach_fragments allows */
        if ((a->flags & NC_SEGMENT_DIGIT_MERGED) && pw(a) <= 1.15 * heights[a->line])
            continue;
        long n = lround(pw(a) / t);
        n = n < 2 ? 2 : n > (long)w->p->max_split ? (long)w->p->max_split : n;
        /* as broad as one digit may be (the bar that undoing a cut uses):
         * keep it whole if a part would be too short to be a digit */
        uint32_t min_h = pw(a) <= BROAD_DIGIT * heights[a->line]
                             ? (uint32_t)ceil(w->p->min_rel_height * heights[a->line]) : 0;
        err = nc_seg_split_piece(w, i, (uint32_t)n, prof, min_h);
    }
    free(tw);
    return err;
}

/* ---- step 8: expected count ---------------------------------------------- */

static uint32_t live_count(const work *w)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < w->npc; i++)
        k += w->pc[i].alive;
    return k;
}

/* Whether step 8 may join neighbours a and b: the same line, and split
 * parts only with their own siblings (a union with another piece would take
 * a sibling's pixels). */
static int may_join(const piece *a, const piece *b)
{
    return a->line == b->line &&
           (a->group == b->group || !((a->flags | b->flags) & NC_SEGMENT_DIGIT_SPLIT));
}

/* Width of a and b's union, in line heights H. */
static double union_width(const piece *a, const piece *b, uint32_t H)
{
    return (double)(umax(a->x1, b->x1) - umin(a->x0, b->x0)) / H;
}

/* Step 8's last resort before dropping piece `small`: the index i into
 * order (k live pieces, by line and x) of the pair (i, i + 1) that holds
 * small and a neighbour on its line no more than max(2, H / 8) pixels away,
 * their union at most 1.3 line heights H wide (the narrowest such union);
 * NONE if there is none.  Split parts pair only with their own siblings, as
 * in the merge above. */
static uint32_t fragment_pair(const work *w, const uint32_t *order, uint32_t k,
                              uint32_t small, const uint32_t *heights)
{
    uint32_t at = 0, frag = NONE;
    double frag_u = INFINITY;
    while (at < k && order[at] != small)
        at++;
    for (uint32_t i = at ? at - 1 : 0; i <= at && i + 1 < k; i++) {
        const piece *a = &w->pc[order[i]], *b = &w->pc[order[i + 1]];
        const uint32_t H = heights[a->line];
        if (!may_join(a, b) || !H)
            continue;
        const uint32_t gap = b->x0 > a->x1 ? b->x0 - a->x1 : 0;
        const double u = union_width(a, b, H);
        if (gap <= umax(2, H / 8) && u <= BROAD_DIGIT && u < frag_u) {
            frag_u = u;
            frag = i;
        }
    }
    return frag;
}

static int fit_count(work *w, uint32_t *order, uint32_t *scratch, uint32_t *heights,
                     uint32_t *prof)
{
    uint32_t want = w->p->expected_count;
    /* Each round changes the count by one; 2 * MAX_PIECES bounds the loop. */
    for (uint32_t round = 0; want && round < 2 * MAX_PIECES; round++) {
        uint32_t have = live_count(w);
        if (have == want || have == 0)
            break;
        for (uint32_t l = 0; l < w->nlines; l++)
            heights[l] = nc_seg_line_height(w, l, scratch);
        if (have < want) {
            /* widest relative to its line's height */
            uint32_t best = NONE;
            double best_r = 0;
            for (uint32_t i = 0; i < w->npc; i++) {
                piece *a = &w->pc[i];
                if (!a->alive || !heights[a->line])
                    continue;
                double r = (double)pw(a) / heights[a->line];
                if (pw(a) >= 4 && r > best_r) {
                    best_r = r;
                    best = i;
                }
            }
            if (best == NONE)
                break;
            uint32_t before = w->npc;
            int err = nc_seg_split_piece(w, best, 2, prof, 0);
            if (err < 0)
                return err;
            if (w->npc == before)
                break;          /* could not cut it: give up */
        } else {
            uint32_t k = nc_seg_sorted_live(w, order);
            uint32_t best = NONE;
            double best_u = INFINITY;
            for (uint32_t i = 0; i + 1 < k; i++) {
                piece *a = &w->pc[order[i]], *b = &w->pc[order[i + 1]];
                if (!may_join(a, b))
                    continue;
                double u = union_width(a, b, heights[a->line]);
                if (u < best_u) {
                    best_u = u;
                    best = i;
                }
            }
            uint32_t small = NONE;
            for (uint32_t i = 0; i < w->npc; i++)
                if (w->pc[i].alive && (small == NONE || w->pc[i].area < w->pc[small].area))
                    small = i;
            /* No pair fits in one digit's width: a speck goes first; then
             * a piece alone on its line; then a cut that split_wide made
             * in one component is undone (a broad 0 or 3 reaches 1.15 line
             * heights on camera frames, touching pairs 1.3 and more); only
             * then is a real piece (often a thin 1) dropped, or joined to
             * the digit it nearly touches (fragment_pair). */
            if (best == NONE || best_u > 0.9) {
                for (uint32_t i = 0; i < k; i++)
                    scratch[i] = w->pc[order[i]].area;
                const uint32_t med = nc_median_u32(scratch, k);
                /* a piece alone on its line while another line holds
                 * several: clutter beside the string (a texture's stroke,
                 * a shadow), not the string's own digit */
                uint32_t lone = NONE, most = 0;
                for (uint32_t l = 0; l < w->nlines; l++)
                    scratch[l] = 0;
                for (uint32_t i = 0; i < k; i++)
                    most = umax(most, ++scratch[w->pc[order[i]].line]);
                for (uint32_t i = 0; most >= 2 && i < k; i++) {
                    const uint32_t j = order[i];
                    if (scratch[w->pc[j].line] == 1 &&
                        (lone == NONE || w->pc[j].area < w->pc[lone].area))
                        lone = j;
                }
                if (4 * w->pc[small].area >= med && lone != NONE) {
                    small = lone;
                } else if (4 * w->pc[small].area >= med) {
                    double sib_u = INFINITY;
                    uint32_t sib = NONE;
                    for (uint32_t i = 0; i + 1 < k; i++) {
                        const piece *a = &w->pc[order[i]], *b = &w->pc[order[i + 1]];
                        if (a->line != b->line || a->group != b->group ||
                            !(a->flags & b->flags & NC_SEGMENT_DIGIT_SPLIT))
                            continue;
                        double u = union_width(a, b, heights[a->line]);
                        if (u < sib_u) {
                            sib_u = u;
                            sib = i;
                        }
                    }
                    if (sib != NONE && sib_u <= BROAD_DIGIT) {
                        best = sib;
                        best_u = 0.0;
                    }
                }
            }
            if (best == NONE || best_u > 0.9) {
                /* the piece about to go, within a few pixels of a piece of
                 * its line and their union no broader than a broad digit,
                 * is more likely a broken stroke of that digit (half of a 0
                 * whose ring broke) than clutter: it joins the digit */
                const uint32_t frag = fragment_pair(w, order, k, small, heights);
                if (frag != NONE) {
                    best = frag;
                    best_u = 0.0;
                }
            }
            if (best != NONE && best_u <= 0.9) {
                piece *a = &w->pc[order[best]], *b = &w->pc[order[best + 1]];
                if (a->group == b->group) {
                    a->x1 = umax(a->x1, b->x1);
                    a->x0 = umin(a->x0, b->x0);
                    a->y0 = umin(a->y0, b->y0);
                    a->y1 = umax(a->y1, b->y1);
                    a->area += b->area;
                    b->alive = 0;
                } else
                    nc_seg_piece_merge(w, a, b);
            } else {
                w->pc[small].alive = 0;
            }
        }
    }
    return 0;
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
            if (!label_at(w, x, y)) {
                psum += v;
                pn++;
                c[x - qx0] = PX_PAPER;
            } else if (piece_has(w, a, x, y)) {
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

static int build_result(work *w, uint32_t polarity, uint32_t ox, uint32_t oy,
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
     * broader than one digit may be (BROAD_DIGIT, the bar that step 8 uses
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
            if (pw(&u) > BROAD_DIGIT * r->lines[r->digits[i].line].height)
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
    if ((err = collect(&w)) < 0)
        goto out;
    drop_enclosures(&w);
    /* Splits add pieces, at most max_split per piece plus the fit rounds. */
    size_t cap = (size_t)w.npc * (p.max_split + 1) + 2 * MAX_PIECES + 16;
    err = -ENOMEM;
    order = malloc(cap * sizeof *order);
    scratch = malloc(2 * cap * sizeof *scratch);
    heights = malloc(cap * sizeof *heights);
    best_dx = malloc(cap * sizeof *best_dx);
    prof = malloc(((size_t)roi.width + 1) * sizeof *prof);
    if (!order || !scratch || !heights || !best_dx || !prof)
        goto out;
    assign_lines(&w, order, best_dx, scratch, heights);
    if ((p.charset == NC_SEGMENT_CHARSET_TEXT && (err = nc_seg_chars_rehome(&w)) < 0) ||
        (err = cut_and_merge(&w, order, scratch, heights)) < 0)
        goto out;
    if ((err = p.charset == NC_SEGMENT_CHARSET_TEXT ? nc_seg_chars_split(&w, scratch, heights, prof)
                                                     : split_wide(&w, scratch, heights, prof)) < 0 ||
        (err = fit_count(&w, order, scratch, heights, prof)) < 0)
        goto out;
    err = build_result(&w, pol, p.use_roi ? p.roi.x : 0,
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
