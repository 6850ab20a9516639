/* daemon/split.h — Image.segment: a frame of handwritten characters split
 * into digits by core/segment, for the worker to recognise one by one.
 *
 * Layer: daemon (pure computation over core/segment; kept apart from the
 * worker so the decoder fuzzer can drive it alone).  core/segment does the
 * work (adaptive binarisation, polarity, components, merging and splitting,
 * line ordering; see core/segment/segment.h); this file only maps the request's
 * options onto its parameters and keeps the daemon's caps.  Each digit's
 * patch is light ink on 0, ready for nc_prep_apply with invert = 0: the
 * worker prepares it once per network, as it does any whole image.
 *
 * The old stop-gap rule that lived here (global Otsu, one line, merge by
 * column overlap) is gone: it failed on uneven light, dark-on-light frames
 * it had not been handed inverted, several lines, and touching digits. */
#ifndef NC_SPLIT_H
#define NC_SPLIT_H

#include "segment.h"

/* Segment frame (grey, as decoded: either polarity).  polarity is the
 * request's Neocog__Polarity (0 AUTO, 1 LIGHT_INK, 2 DARK_INK).  *seg is
 * the caller's scratch, created on first use and kept for the next frame
 * (one per worker thread; free with nc_segmenter_free).  More than
 * max_digits digits is -ERANGE.  Errors: -EINVAL (bad polarity), -ERANGE
 * (frame above NC_SEGMENT_MAX_DIM a side, too many components or digits),
 * -ENOMEM; why gets a sentence for the reply.  No ink: 0 with
 * (*ret)->count == 0. */
int nc_split_frame(nc_segmenter **seg, const nc_image *frame, int polarity,
                   uint32_t max_digits, nc_segment_result **ret, char *why, size_t why_len);

/* Image's segmentation fields, in plain types (the fuzzer links this file
 * without the generated protocol code). */
typedef struct nc_split_opts {
    int polarity;               /* Neocog__Polarity */
    uint32_t expected_digits;   /* Image.expected_digits; 0 = any */
    int use_roi;                /* Image.roi present */
    nc_rect roi;                /* image coordinates */
    int alternatives;           /* core/segment's step 9: ask for the cuts
                                   the worker may undo (nc_split_keep_whole) */
    int text;                   /* 1: the request expects letters or
                                   punctuation, not digits only: core/segment's
                                   character mode (NC_SEGMENT_CHARSET_TEXT:
                                   dots and pieces merged, marks kept, word
                                   gaps flagged SPACE_BEFORE) */
} nc_split_opts;

/* Each ROI side at least this many pixels: less cannot hold a digit. */
#define NC_SPLIT_MIN_ROI 8u

/* The checks that need no image: polarity, expected_digits <= max_digits,
 * ROI sides >= NC_SPLIT_MIN_ROI and inside max_dim x max_dim.  0, or
 * -EINVAL / -ERANGE with why set. */
int nc_split_check_opts(const nc_split_opts *o, uint32_t max_digits, uint32_t max_dim,
                        char *why, size_t why_len);

/* nc_split_frame with the request's hints: only the ROI is segmented
 * (boxes stay in frame coordinates), with expected_digits as core/segment's
 * expected_count.  An ROI outside frame is -ERANGE. */
int nc_split_frame_opts(nc_segmenter **seg, const nc_image *frame, const nc_split_opts *o,
                        uint32_t max_digits, nc_segment_result **ret, char *why,
                        size_t why_len);

/* A frame that holds one character is answered as one, prepared exactly
 * as a plain request's image (core/image/image_clean.h), so that --segment and a
 * plain request agree on a photo of one digit, and a digit that fills the
 * frame (which core/segment, built for strings in wide frames, drops at the
 * frame's edge or splits into lines) is kept.  The frame (its ROI when o has
 * one) may hold one character when nc_image_clean finds one and every piece
 * sr found lies inside that character's box grown by a sixth of its size.
 * (nc_image_clean's character is one: it takes another piece of half its
 * ink or more only when the two all but touch.)  Then: 1 (one character)
 * when sr found at most one piece there, or the box is no wider than
 * NC_SPLIT_ONE_ASPECT times its height (sr cut or split one character);
 * 2 (maybe: a broad digit that sr cut, or two touching ones, which make one
 * component) when the box is at most NC_SPLIT_MAYBE_ASPECT times as wide
 * as it is tall, for the worker to read
 * both ways and keep the likelier (nc_split_keep_whole against the product
 * of the pieces' confidences); 0 otherwise, and at once (without the
 * cost of cleaning the frame) with an expected count above 1 or a line of
 * four pieces or more not cut from wider ones, each at least half the
 * line's height and most of
 * them taller than wide, more than three times as wide as tall (a
 * string).  With 1 or 2, *ret_clean (free with nc_image_free) and
 * *ret_box (frame coordinates) are set.  -ENOMEM. */
#define NC_SPLIT_ONE_ASPECT 1.1
#define NC_SPLIT_MAYBE_ASPECT 1.8
int nc_split_one_character(const nc_image *frame, const nc_split_opts *o,
                           const nc_segment_result *sr, nc_image **ret_clean,
                           nc_rect *ret_box);

/* Step 9 of core/segment offers a component that was cut in two also uncut.
 * The worker reads all three and keeps the whole when its answer is the
 * likelier reading: 1 when the whole's confidence beats the chance that
 * both parts are right, taken as the product of theirs, by the factor
 * NC_SPLIT_WHOLE_ODDS (chosen on validation frames; docs/lessons.md,
 * "Camera pipeline").  Confidences are calibrated probabilities in [0, 1]; a
 * rejected reading keeps its confidence, so the comparison is the same. */
#define NC_SPLIT_WHOLE_ODDS 1.0f
int nc_split_keep_whole(float whole, float left, float right);

/* What goes before piece i of a segmented answer's text, given its flags
 * (core/segment's NC_SEGMENT_DIGIT_*) and its and the previous piece's
 * lines: "\n" at a new line, " " at a word gap (Digit.space_before), ""
 * otherwise and for the first piece. */
const char *nc_split_separator(uint32_t i, uint32_t line, uint32_t prev_line, uint32_t flags);

#endif
