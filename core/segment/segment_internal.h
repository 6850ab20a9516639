/* core/segment/segment_internal.h — what the segmentation's files share
 * (segment.c runs the steps; segment_binarise.c, segment_boxes.c,
 * segment_lines.c, segment_split.c, segment_result.c and segment_chars.c
 * hold them; segment_pieces.c holds the piece helpers they share).
 *
 * Layer: core, private to the segmentation module. */
#ifndef NC_CORE_SEGMENT_INTERNAL_H
#define NC_CORE_SEGMENT_INTERNAL_H

#include "segment.h"

#define NONE UINT32_MAX

/* More candidate pieces than this after filtering is a frame of noise:
 * line building is quadratic in them, so stop before it. */
#define NC_SEG_MAX_PIECES 4096u
/* The broadest a single digit gets on camera frames, in line heights (a
 * broad 0, 3 or 5 reaches about 1.15 to 1.25; touching pairs are mostly
 * broader): steps 7 to 9 keep, join or offer whole what is no broader. */
#define NC_SEG_BROAD_DIGIT 1.3

/* A candidate character ("piece"): a set of components (a "group": every
 * component c with group_of[c] == piece.group) restricted to the columns
 * [x0, x1).  Merging unions groups; splitting makes pieces that share a
 * group with disjoint column ranges.  Pixel-level work (profiles, tight
 * boxes, patches) scans the labels inside a piece's box.  Labels are
 * written only on ink (nc_image_components_ink: the frame's paper would be
 * a megabyte of zeros per frame), so every read goes through
 * nc_seg_label_at, which consults the mask first. */
typedef struct piece {
    uint32_t group;
    uint32_t x0, x1, y0, y1;    /* box, half-open, ROI coordinates */
    uint32_t area;
    uint32_t line;
    uint32_t flags;
    uint32_t alive;
} piece;

/* One frame's segmentation in progress. */
typedef struct work {
    const nc_image *roi;
    const nc_segment_params *p;
    const uint32_t *labels;     /* ROI-sized, valid where mask is set */
    const uint8_t *mask;        /* ROI-sized, non-zero = ink */
    nc_component *comps;
    uint32_t ncomps;
    uint32_t *group_of;         /* per component; NONE = dropped */
    piece *pc;
    uint32_t npc, cap_pc;
    uint32_t nlines;
} work;

static inline uint32_t pw(const piece *a) { return a->x1 - a->x0; }
static inline uint32_t ph(const piece *a) { return a->y1 - a->y0; }
static inline uint32_t umin(uint32_t a, uint32_t b) { return a < b ? a : b; }
static inline uint32_t umax(uint32_t a, uint32_t b) { return a > b ? a : b; }

/* The component label at (x, y), 0 on paper. */
static inline uint32_t nc_seg_label_at(const work *w, uint32_t x, uint32_t y)
{
    size_t i = (size_t)y * w->roi->width + x;
    return w->mask[i] ? w->labels[i] : 0;
}

/* Whether pixel (x, y) belongs to piece a. */
static inline int nc_seg_piece_has(const work *w, const piece *a, uint32_t x, uint32_t y)
{
    uint32_t l = nc_seg_label_at(w, x, y);
    return l && w->group_of[l - 1] == a->group && x >= a->x0 && x < a->x1;
}

/* The steps in the order segment.c runs them (segment.h numbers them).
 * Calls run one way: segment.c calls the steps, a step calls the piece
 * helpers below (and segment_chars.c the split at profile minima), never
 * segment.c or a step of another file; scripts/check-deps holds it.
 * order, scratch (2 entries a piece), heights and best_dx hold an entry a
 * piece, prof one a column; each int one returns 0 or a negative errno.
 * segment_lines.c: step 4, every component that could be (part of) a
 * digit as a piece of its own; 4b, boxes around digits dropped; step 5,
 * every piece given a line, lines cut at wide gaps; step 6 in digit mode,
 * overlapping pieces merged, fragments attached, what is too short for
 * its line dropped. */
int nc_seg_collect(work *w);
void nc_seg_drop_enclosures(work *w);
void nc_seg_assign_lines(work *w, uint32_t *order, double *best_dx, uint32_t *best_m,
                         uint32_t *heights);
void nc_seg_cut_lines(work *w, uint32_t *order, uint32_t *scratch, uint32_t *heights);
void nc_seg_merge_digits(work *w, uint32_t *order, uint32_t *scratch, uint32_t *heights);
/* segment_split.c: step 7, pieces broader than a digit cut; step 8,
 * lines brought to the expected count. */
int nc_seg_split_wide(work *w, uint32_t *scratch, uint32_t *heights, uint32_t *prof);
int nc_seg_fit_count(work *w, uint32_t *order, uint32_t *scratch, uint32_t *heights,
                     uint32_t *prof);
/* segment_result.c: steps 9-10, reading order, patches, the result with
 * boxes moved by (ox, oy) into frame coordinates. */
int nc_seg_build_result(work *w, uint32_t polarity, uint32_t ox, uint32_t oy, uint32_t *order,
                        uint32_t *scratch, nc_segment_result **ret_result);

/* The piece helpers (segment_pieces.c), which call no step.  Shrink a's
 * box to the pixels it really has and count them (0: none); append a
 * piece (-ERANGE past 4 NC_SEG_MAX_PIECES); fold b into a (b's components
 * join a's group, boxes unite, b dies); live pieces sorted by (line, x0)
 * into order, how many; median height of line l's live pieces; mean
 * horizontal run of a's pixels x16 (its pen for upright strokes); median
 * of that over line l's pieces.  scratch: npc entries. */
uint32_t nc_seg_piece_tighten(const work *w, piece *a);
int nc_seg_push_piece(work *w, piece a);
void nc_seg_piece_merge(work *w, piece *a, piece *b);
uint32_t nc_seg_sorted_live(const work *w, uint32_t *order);
uint32_t nc_seg_line_height(const work *w, uint32_t l, uint32_t *scratch);
uint32_t nc_seg_stroke_runs(const work *w, const piece *a);
uint32_t nc_seg_line_stroke(const work *w, uint32_t l, uint32_t *scratch);

/* Character mode (segment_chars.c; segment.h's steps 5 to 7 and 10 for
 * NC_SEGMENT_CHARSET_TEXT).  order and scratch hold 2 npc entries. */
/* Step 5b: pieces of lines made only of small pieces (the dot of an i, a
 * comma, a quote that started lines of their own) join the line of full
 * characters they sit beside.  -ENOMEM or 0. */
int nc_seg_chars_rehome(work *w);
/* Step 6: merge what belongs together, keep marks, drop specks and noise
 * lines.  -ENOMEM or 0. */
int nc_seg_chars_merge(work *w, uint32_t *order, uint32_t *scratch);
/* Step 7: only pieces broader than several characters are cut. */
int nc_seg_chars_split(work *w, uint32_t *scratch, uint32_t *heights, uint32_t *prof);
/* Step 10b: word gaps and marks on the finished result. */
void nc_seg_chars_words(nc_segment_result *r, float word_gap);

/* segment_split.c's cut at ink-profile minima (step 7), for segment_chars.c. */
int nc_seg_split_piece(work *w, uint32_t idx, uint32_t n, uint32_t *prof, uint32_t min_h);

/* Scratch that grows to the largest frame seen and is reused after. */
struct nc_segmenter {
    size_t cap_pixels;          /* capacity of mask and labels */
    size_t cap_blocks;          /* capacity of the block arrays */
    size_t cap_width;           /* capacity of the row arrays */
    uint64_t *isum;             /* integral of block sums of p, (gw+1)(gh+1) */
    uint64_t *isq;              /* integral of block sums of p^2 */
    int16_t *thr;               /* per block: ink-is-dark q is ink if q < thr */
    double *bmean, *bsq;        /* per block: window mean of p and of p^2 */
    float *mean;                /* per block: bmean in float (polarity) */
    uint32_t *colsum, *colsq;   /* per column: sums of p, p^2 over a band */
    uint8_t *thr_px;            /* per column: thr of the band's blocks,
                                   and 16 bytes of slack */
    double *wsum, *wsq, *wn;    /* per block of one row: window sums, count */
    uint8_t *mask;              /* ROI-sized ink mask, 255 = ink */
    uint32_t *labels;           /* ROI-sized component labels */
};

/* Make room for a w x h ROI (w, h already capped) with blocks of side b. */
int nc_segment_reserve(nc_segmenter *seg, uint32_t w, uint32_t h, uint32_t b);

/* The window side ADAPTIVE uses for a w x h ROI (resolves auto), and the
 * block side its statistics are gathered on. */
uint32_t nc_segment_window_side(const nc_segment_params *p, uint32_t w, uint32_t h);
uint32_t nc_segment_block_side(uint32_t window);

/* Binarise roi into seg->mask (ROI-sized, stride = width).  *ret_polarity
 * gets the polarity used.  A frame with no usable contrast gets an all-zero
 * mask. */
int nc_segment_binarise_roi(nc_segmenter *seg, const nc_image *roi,
                            const nc_segment_params *p, uint32_t *ret_polarity);

/* Step 4a (segment_boxes.c): clear from mask (ROI-sized, stride = width)
 * the sides of boxes drawn around digits, among comps (labels valid where
 * mask is set, component c labelled c + 1).  *ret_stripped gets the number
 * of boxes cleared; when it is not 0 the mask must be labelled again.
 * -ENOMEM is the only failure, and leaves the mask as it was or with some
 * boxes cleared. */
int nc_segment_strip_boxes(uint8_t *mask, const uint32_t *labels, uint32_t width,
                           const nc_component *comps, uint32_t ncomps,
                           const nc_segment_params *p, uint32_t *ret_stripped);

#endif
