/* core/segment/segment_pieces.c — the piece helpers every step shares:
 * tighten a box, append a piece, fold one piece into another, live pieces
 * in reading order, a line's median height and pen.
 *
 * Layer: core, private to the segmentation module.  The steps call these
 * and this file calls no step, so the calls run one way: segment.c, then
 * the step files, then these helpers. */
#include "segment_internal.h"

#include <errno.h>
#include <stdlib.h>

/* Shrink a's box to the pixels it really has (after a split) and count
 * them; 0 if it has none. */
uint32_t nc_seg_piece_tighten(const work *w, piece *a)
{
    uint32_t x0 = NONE, y0 = NONE, x1 = 0, y1 = 0, area = 0;
    for (uint32_t y = a->y0; y < a->y1; y++)
        for (uint32_t x = a->x0; x < a->x1; x++)
            if (nc_seg_piece_has(w, a, x, y)) {
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

int nc_seg_push_piece(work *w, piece a)
{
    if (w->npc == w->cap_pc) {
        if (w->cap_pc >= 4 * NC_SEG_MAX_PIECES)
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

/* qsort has no context argument; thread-local keeps segmenters on different
 * threads apart. */
static _Thread_local const piece *sort_base;
static int by_line_x(const void *a, const void *b)
{
    const piece *p = &sort_base[*(const uint32_t *)a], *q = &sort_base[*(const uint32_t *)b];
    if (p->line != q->line)
        return p->line < q->line ? -1 : 1;
    return p->x0 < q->x0 ? -1 : p->x0 > q->x0;
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
            int in = nc_seg_piece_has(w, a, x, y);
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
