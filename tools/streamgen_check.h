/* tools/streamgen_check.h — neocog-streamgen --check: how core/segment's
 * character mode cuts the rendered frames, against their truth.
 *
 * Layer: tools (pure computation over a decoded frame and its truth).  A
 * character is found when a segmented piece's box overlaps its truth box
 * by IoU >= 0.5, one to one (each piece and each character used once,
 * best overlaps first).  A gap between neighbours of a string is judged
 * when both are found and their pieces are neighbours on one segmented
 * line: right when the segmenter put a space there exactly when the
 * truth has one.  With NC_CHECK_VERBOSE set in the environment, each string
 * not entirely right is listed on stderr with what went wrong ([MISS box]
 * not found, [NOTNEXT] another piece between, [GAP] the space judged
 * wrong) and the unmatched pieces beside it. */
#ifndef NC_STREAMGEN_CHECK_H
#define NC_STREAMGEN_CHECK_H

#include <stdio.h>

#include "streamgen_render.h"

/* Kinds of character the table reports apart. */
enum {
    NC_CHECK_PIECES = 0,    /* drawn in pieces: i j ! ? : ; = % " */
    NC_CHECK_MARKS = 1,     /* small marks: . , ' - */
    NC_CHECK_DESCENDERS = 2,/* g p q y (j is in pieces) */
    NC_CHECK_OTHER = 3,     /* everything else */
    NC_CHECK_KINDS = 4,
};

typedef struct nc_seg_check {
    uint32_t frames, strings, strings_right;  /* right: every character found,
                                                 nothing else on its pieces'
                                                 run, every gap right */
    uint32_t chars[NC_CHECK_KINDS], found[NC_CHECK_KINDS];
    uint32_t pieces, pieces_matched;          /* segmented pieces */
    uint32_t gaps, gaps_right;                /* judged gaps */
    uint32_t spaces, spaces_found;            /* judged gaps that are spaces */
    uint32_t false_spaces;                    /* judged non-spaces given one */
} nc_seg_check;

/* Segment frame (the daemon's parameters for a whole frame, charset as
 * given: NC_SEGMENT_CHARSET_*) and add what it got right to c. */
struct nc_segmenter;
int nc_seg_check_frame(struct nc_segmenter *seg, const nc_image *frame,
                       const nc_render_truth *truth, uint32_t charset, nc_seg_check *c);

/* The table (markdown) of c. */
void nc_seg_check_print(FILE *to, const nc_seg_check *c);

#endif
