/* core/segment/segment_split.c — segment.h's steps 7 and 8 in digit mode:
 * pieces broader than a digit cut at ink-profile minima, then pieces
 * joined, split or dropped until a line holds the expected count.
 *
 * Layer: core, private to the segmentation module. */
#include "segment_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
            if (nc_seg_piece_has(w, &a, x, y))
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
        if (!nc_seg_piece_tighten(w, &b))
            continue;
        if (ph(&b) < min_h)
            return 0;
        parts[np++] = b;
    }
    w->pc[idx].alive = 0;
    for (uint32_t k = 0; k < np; k++) {
        int err = nc_seg_push_piece(w, parts[k]);
        if (err < 0)
            return err;
    }
    return 0;
}

int nc_seg_split_wide(work *w, uint32_t *scratch, uint32_t *heights, uint32_t *prof)
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
        uint32_t min_h = pw(a) <= NC_SEG_BROAD_DIGIT * heights[a->line]
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
        if (gap <= umax(2, H / 8) && u <= NC_SEG_BROAD_DIGIT && u < frag_u) {
            frag_u = u;
            frag = i;
        }
    }
    return frag;
}

int nc_seg_fit_count(work *w, uint32_t *order, uint32_t *scratch, uint32_t *heights,
                     uint32_t *prof)
{
    uint32_t want = w->p->expected_count;
    /* Each round changes the count by one; 2 * NC_SEG_MAX_PIECES bounds the loop. */
    for (uint32_t round = 0; want && round < 2 * NC_SEG_MAX_PIECES; round++) {
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
                    if (sib != NONE && sib_u <= NC_SEG_BROAD_DIGIT) {
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
