/* core/segment/segment.h — split a camera frame into handwritten digits: boxes,
 * reading order (lines top to bottom, left to right) and, per digit, a
 * clean light-ink patch ready for nc_prep_apply.
 *
 * Layer: core (pure C11, no I/O, no threads).  Error codes as in common.h;
 * ret_* outputs are written only on success.
 *
 * Pipeline (each step is a parameter below, with its default):
 *  1. ROI: the frame, or params.roi inside it.
 *  2. Polarity: dark ink on light paper (what a camera sees of a pen on
 *     paper) or light ink on dark ground.  AUTO looks at the sign of the
 *     third moment of (pixel - local mean): ink is the thin tail of the
 *     distribution, and comparing with the local mean makes the test blind to
 *     uneven lighting.
 *  3. Binarisation into an ink mask:
 *     OTSU     one global threshold (fast, fine under even light);
 *     ADAPTIVE Sauvola's rule on a window x window neighbourhood, means and
 *              variances from an integral image of b x b block sums
 *              (b = window / 12, so windows are exact to a block):  ink where
 *              p < m (1 + k (s / 128 - 1))   (p, m in ink-is-dark terms)
 *              and m - p >= min_contrast, so flat paper (s ~ noise) stays
 *              paper however bright or dark the light is there.
 *  4. 8-connected components (nc_image_components).  First, the sides of
 *     boxes drawn around digits leave the mask (segment_boxes.c): in a large
 *     sparse component, a side is a thin straight line along its box's
 *     edge, at most about 8.5 degrees off level or plumb, and at least 1.6
 *     times the median digit-shaped component's height (no stroke of a
 *     digit is that long); a digit touching such a side comes free, where
 *     it used to be dropped with the box.  The mask is then labelled again.
 *     Then specks (area <
 *     min_area), components touching the ROI's edge (with drop_edge) and
 *     rules/borders (width > max_aspect * height, height >
 *     max_height, or fill below min_fill) are dropped, and so are sparse
 *     components (fill < 0.2), hollow (at most 3% of their pixels in the
 *     middle of their box), whose box holds two or more components at
 *     least 0.3 of their height: boxes drawn around the digits.
 *  5. Lines: components are taken tallest first; each joins the line whose
 *     nearest member (in x) it overlaps vertically by at least half its own
 *     height, that member's band being widened by 0.35 of the line's tallest
 *     member (so a detached bar of a 5 above its body still joins); else it
 *     starts a line.  Following the nearest member tolerates tilted lines.
 *     A line is cut where the horizontal gap between neighbours exceeds
 *     max_gap times the line's median height (two strings on one row).
 *  6. Merging: within a line, pieces whose column ranges overlap by at least
 *     merge_overlap of the narrower one become one digit (a broken 5 or 7).
 *     Then anything shorter than min_rel_height of the line's median height,
 *     or than min_height pixels, or taller than max_rel_height of it, is
 *     dropped (dots, hyphens, noise, pieces of boxes drawn around digits).
 *     A piece alone on its line, while the line with the most pieces holds
 *     at least four, is held to that line's height and pen instead of its
 *     own (a speck, a stray stroke or a ruled line's stub beside a string).
 *  7. Splitting: a digit wider than split_ratio times the line's typical
 *     digit width (median width, clamped to 0.45..0.85 of the line height)
 *     is cut into round(width / typical) pieces at the minima of its
 *     column ink profile near the evenly spaced cuts; a digit at most 1.3
 *     line heights wide stays whole when a part would be shorter than
 *     min_rel_height of the line (the long bar of a broad 5).
 *  8. Expected count (optional): while there are too few digits the widest
 *     one (relative to its line) is cut in two; while there are too many,
 *     the adjacent pair with the narrowest union is merged when that union
 *     is no wider than a digit; else a speck (under a quarter of the median
 *     piece's area) is dropped; else a piece alone on its line while another
 *     line holds several (clutter beside the string); else a cut of step 7
 *     is undone (the two parts of one component with the narrowest union,
 *     up to 1.3 line heights: a broad 0 or 3); else the smallest piece is
 *     dropped, unless it lies within max(2, H / 8) pixels of a piece of its
 *     line and their union is at most 1.3 line heights wide: then it is a
 *     broken stroke of that digit (a 0 whose ring broke) and joins it.
 *  9. Alternatives (optional, without an expected count): a component that
 *     step 7 cut in exactly two is also reported uncut (result->alts), for
 *     a caller that can read both and keep the likelier reading: widths
 *     alone cannot tell a broad digit from two touching ones.
 * 10. Patches: per digit, the box plus a 1-pixel ring, holding
 *     max(0, paper - p) (or p - paper for light ink) on the digit's own
 *     pixels and their 4-neighbours, 0 elsewhere, where paper is the mean of
 *     the non-ink pixels around it.  Other digits' strokes inside the box
 *     are masked out.  With params.prep set, each patch goes through
 *     nc_prep_apply (invert forced to 0: patches are already light ink).
 *
 * Characters (charset = NC_SEGMENT_CHARSET_TEXT; segment_chars.c): letters,
 * digits and punctuation bring pieces that digits do not — the dots of i
 * and j, ! ? : ; = % " in several pieces, marks at the baseline or the top
 * (. , ' -), ascenders and descenders, and gaps between words.  Steps 1 to
 * 5 are the same, except that components down to min(min_area, 4) pixels
 * are kept for now (a period of a thin pen); then:
 *  5b. a line made only of small pieces (no piece half as tall as the
 *     tallest of a line beside it) joins that line when its pieces lie
 *     within half that line's height above or below it and along it: the
 *     dot of an i, a quote or a comma that started a line of its own;
 *  6'. per line, with S the line's scale (the 3rd quartile of its pieces'
 *     heights: capitals, ascenders, or the x-height of a line of small
 *     letters), pen its median stroke run, and baseline the median bottom
 *     of its pieces at least S / 2 tall, repeatedly until nothing changes:
 *     pieces stacked one above the other (vertical overlap at most a
 *     quarter of the shorter, gap at most 0.7 S, the narrower's centre
 *     over the wider's columns within 3/4 pen) merge (i j ! ? : ; =); pieces
 *     overlapping in columns by merge_overlap of the narrower merge unless
 *     the narrower is a dot (at most 2.5 pens both ways), so % and broken
 *     letters join while a period tucked under a T stays a period; two
 *     marks (at most S / 2 both ways) side by side above the line's middle,
 *     at most max(1.5 pen, S / 4) apart, merge (").  Then specks (area
 *     below 0.4 pen^2, or both sides below 0.7 pen), pieces taller than
 *     2.2 S, strokes thinner than a quarter of the pen and taller than 4
 *     times their width, and lines whose tallest piece is under
 *     min_height or under 0.3 of the frame's tallest are dropped.  Marks
 *     are kept as characters of their own (flag MARK).
 *  7'. a piece is cut only when broader than 3 S (several touching
 *     characters), into round(width / (0.75 S)) parts.
 *  10b. word gaps: per line, the gaps between neighbours' boxes; a gap
 *     above word_gap times their median (with at least 2 gaps) and above
 *     0.35 of the line's median height marks the next character
 *     SPACE_BEFORE.
 * Digit mode (the default) is untouched by all of this.
 *
 * Caps: frames up to NC_SEGMENT_MAX_DIM per side (-ERANGE beyond, before
 * anything is allocated); at most max_components components (-ERANGE: a
 * frame of pure noise); at most NC_SEGMENT_MAX_DIGITS digits (-ERANGE).
 * A frame with no contrast or no digit gives 0 digits and returns 0. */
#ifndef NC_CORE_SEGMENT_H
#define NC_CORE_SEGMENT_H

#include "image.h"

#define NC_SEGMENT_MAX_DIM        4096u
#define NC_SEGMENT_MAX_COMPONENTS 65536u
#define NC_SEGMENT_MAX_DIGITS     1024u
#define NC_SEGMENT_MAX_WINDOW     1023u

typedef enum nc_segment_binarise {
    NC_SEGMENT_BINARISE_ADAPTIVE = 0,   /* Sauvola on integral images */
    NC_SEGMENT_BINARISE_OTSU = 1,       /* one global Otsu threshold */
} nc_segment_binarise;

typedef enum nc_segment_polarity {
    NC_SEGMENT_POLARITY_AUTO = 0,
    NC_SEGMENT_POLARITY_DARK_INK = 1,   /* dark ink on light paper */
    NC_SEGMENT_POLARITY_LIGHT_INK = 2,  /* light ink on dark ground */
} nc_segment_polarity;

/* What the frame's characters are (nc_segment_params.charset). */
typedef enum nc_segment_charset {
    NC_SEGMENT_CHARSET_DIGITS = 0,      /* digit strings (meters, codes) */
    NC_SEGMENT_CHARSET_TEXT = 1,        /* letters, digits, punctuation and
                                           spaces between words */
} nc_segment_charset;

/* nc_segment_digit.flags */
enum {
    NC_SEGMENT_DIGIT_MERGED = 1u << 0,  /* built from several components */
    NC_SEGMENT_DIGIT_SPLIT = 1u << 1,   /* cut out of a wider component */
    NC_SEGMENT_DIGIT_NOPREP = 1u << 2,  /* nc_prep_apply found no ink; its
                                           input is all zeros */
    NC_SEGMENT_DIGIT_SPACE_BEFORE = 1u << 3,  /* TEXT: a word gap before it
                                           (never on a line's first) */
    NC_SEGMENT_DIGIT_MARK = 1u << 4,    /* TEXT: a small mark (. , ' - and
                                           the like), kept as a character */
};

typedef struct nc_segment_params {
    uint32_t binarise;      /* nc_segment_binarise; default ADAPTIVE */
    uint32_t polarity;      /* nc_segment_polarity; default AUTO */
    uint32_t window;        /* ADAPTIVE window side (odd, >= 3); 0 = auto:
                               min(w, h) / 8 of the ROI made odd, clamped
                               to 15..255.  Default 0 */
    float sauvola_k;        /* Sauvola's k in (0, 1); default 0.25 */
    uint32_t min_contrast;  /* grey levels ink must lie below the local mean
                               (ADAPTIVE) or between paper and ink medians
                               (OTSU); default 20 */
    uint32_t min_area;      /* smaller components are specks; default 12 */
    uint32_t min_height;    /* digits shorter than this are dropped after
                               merging; default 10 */
    uint32_t max_height;    /* taller components are not digits; 0 = auto:
                               3/4 of the ROI height.  Default 0 */
    float max_aspect;       /* width / height above this is a rule or a
                               border, not a run of digits; default 8 */
    float min_fill;         /* area / box area below this is a frame or a
                               box drawn around digits; default 0.05 */
    float max_gap;          /* line cut at gaps wider than this times the
                               line height; default 2.5 */
    float merge_overlap;    /* fraction of the narrower column range two
                               pieces must share to merge; default 0.5 */
    float min_rel_height;   /* digits shorter than this times their line's
                               median height are dropped; default 0.5 */
    float max_rel_height;   /* and taller than this (a box side, a stray
                               stroke); default 1.25.  Thin strokes (width
                               < height / 4) are dropped above 1.12 */
    float split_ratio;      /* split digits wider than this times the line's
                               typical width; default 1.5 */
    uint32_t max_split;     /* most pieces one component is cut into;
                               default 6 */
    uint32_t max_components;/* component cap, <= NC_SEGMENT_MAX_COMPONENTS;
                               default 16384 */
    uint32_t expected_count;/* digits the caller expects in the ROI, 0 = any;
                               default 0 */
    uint32_t drop_edge;     /* 1: components touching the ROI's edge are
                               dropped (shadows, vignetting, the paper's
                               edge, digits cut by the view); 0 for tight
                               crops whose digits may touch it.  Default 1 */
    uint32_t use_roi;       /* 1: only look inside roi; default 0 */
    nc_rect roi;            /* must lie inside the frame (-ERANGE) */
    const nc_prep *prep;    /* NULL: patches only; else each patch is also
                               prepared into result->inputs.  Default NULL */
    uint32_t alternatives;  /* 1: step 9 (result->alts); ignored with an
                               expected_count, whose step 8 has already
                               chosen.  Default 0 */
    uint32_t charset;       /* nc_segment_charset; default DIGITS */
    float word_gap;         /* TEXT: a gap above this times the line's
                               median gap is a space (> 1); default 2.5 */
} nc_segment_params;

/* The defaults listed above. */
void nc_segment_params_default(nc_segment_params *ret_params);

/* The defaults fitted to a view of view_w x view_h pixels (the ROI, or the
 * whole frame), as the daemon uses them and the patch generator must too.
 * A camera view drops components taller than 3/4 of it (borders, shadows)
 * and those touching its edge.  A strip at least twice as wide as high is a
 * line of characters someone already cropped: its digits fill its height
 * and touch its edges, so it has no height cap below its own height and
 * keeps edge pieces; so does a caller's explicit ROI (explicit_roi = 1),
 * which may be drawn tight. */
void nc_segment_params_for_view(nc_segment_params *p, uint32_t view_w, uint32_t view_h,
                                int explicit_roi);

/* 0 if p is a valid setting (-EINVAL / -ERANGE otherwise). */
int nc_segment_params_check(const nc_segment_params *p);

typedef struct nc_segment_digit {
    nc_rect box;            /* tight box of the digit's ink, frame coords */
    uint32_t line;          /* index into result->lines */
    uint32_t flags;         /* NC_SEGMENT_DIGIT_* */
    nc_image patch;         /* light ink on 0, box plus a 1-pixel ring
                               (clipped to the ROI); pixels owned by the
                               result */
    nc_rect patch_box;      /* where patch sits in the frame */
} nc_segment_digit;

typedef struct nc_segment_line {
    nc_rect box;            /* union of its digits' boxes */
    uint32_t first, count;  /* its digits: digits[first .. first+count) */
    uint32_t height;        /* median digit height */
} nc_segment_line;

/* A cut of step 7 the caller may undo: digits[first] and digits[first + 1]
 * are the two parts of one component, and whole is that component uncut
 * (box, line, patch and flags as a digit's, without the SPLIT flag). */
typedef struct nc_segment_alt {
    uint32_t first;
    nc_segment_digit whole;
} nc_segment_alt;

typedef struct nc_segment_result {
    uint32_t count;             /* digits, in reading order */
    nc_segment_digit *digits;
    uint32_t line_count;        /* lines, top to bottom, then left to right */
    nc_segment_line *lines;
    uint32_t polarity;          /* DARK_INK or LIGHT_INK as used */
    uint32_t components;        /* components found before filtering */
    size_t input_len;           /* floats per digit in inputs; 0 w/o prep */
    float *inputs;              /* count * input_len floats, or NULL */
    uint32_t alt_count;         /* alternatives (params.alternatives), in
                                   reading order; at most count / 2 */
    nc_segment_alt *alts;
    float *alt_inputs;          /* alt_count * input_len floats, or NULL */
    uint8_t *patch_pixels;      /* backing store of the patches */
} nc_segment_result;

void nc_segment_result_free(nc_segment_result *r);     /* NULL is fine */

/* Scratch buffers (integral images, mask, labels) kept between frames so a
 * video stream does not allocate megabytes per frame.  One segmenter per
 * thread. */
typedef struct nc_segmenter nc_segmenter;
int nc_segmenter_new(nc_segmenter **ret_seg);
void nc_segmenter_free(nc_segmenter *seg);             /* NULL is fine */

/* Segment frame (grey, any stride).  params NULL means the defaults.
 * *ret_result is malloc'd; release with nc_segment_result_free. */
int nc_segment_frame(nc_segmenter *seg, const nc_image *frame,
                     const nc_segment_params *params,
                     nc_segment_result **ret_result);

/* The same with a temporary segmenter, for one-off images. */
int nc_segment_image(const nc_image *frame, const nc_segment_params *params,
                     nc_segment_result **ret_result);

/* The binarisation step alone (for tests and tuning): mask gets 255 on ink,
 * 0 elsewhere, over the whole frame (ROI ignored); *ret_polarity gets the
 * polarity used.  mask must have frame's width and height. */
int nc_segment_binarise_frame(nc_segmenter *seg, const nc_image *frame,
                              const nc_segment_params *params, nc_image *mask,
                              uint32_t *ret_polarity);

#endif
