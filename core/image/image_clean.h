/* core/image/image_clean.h — one character as a client sends it (a phone photo,
 * a scan, a crop of a camera frame, an MNIST digit) -> the clean image the
 * networks were trained on: background exactly 0, ink up to 255, cropped
 * to the character.
 *
 * Layer: core.  Pure computation on caller-owned memory; error codes as in
 * common.h.  Every network's input is this image through nc_prep_apply
 * with the model file's prep (invert 0), in the daemon and in the offline
 * tools alike, so that all of them answer a given image the same way.
 *
 * Why: the networks learnt MNIST, whose background is exactly 0.  A photo's
 * paper is grey, unevenly lit, noisy and JPEG-ringed, and a CNN prep that
 * crops to "every pixel above 0" then sees the whole frame, shrinks the
 * digit to a speck and answers nonsense.  Flattening the light and cutting
 * the noise floor gives the networks an MNIST-like digit whatever the
 * paper. */
#ifndef NC_IMAGE_CLEAN_H
#define NC_IMAGE_CLEAN_H

#include "image.h"

/* Which way round the ink is (the protocol's Polarity, same numbers). */
typedef enum nc_polarity {
    NC_POLARITY_AUTO = 0,       /* decided from the image (see below) */
    NC_POLARITY_LIGHT_INK = 1,  /* MNIST: 0 = background, 255 = ink */
    NC_POLARITY_DARK_INK = 2,   /* paper: 255 = background */
} nc_polarity;

/* Images whose shorter side is longer than this are first shrunk to it
 * (area-averaged): a single character needs no more to fill a network's
 * 20..44 pixel box, and it bounds the work of a 4096 x 4096 photo. */
#define NC_CLEAN_WORK_SIDE 320u

typedef struct nc_clean_info {
    uint32_t inverted;          /* 1: the input was dark ink, inverted */
    uint32_t photo;             /* 0: already clean (passed through) */
    nc_rect box;                /* the character, in input coordinates
                                   (for input already clean, by the rule of
                                   step 6, though the image is passed
                                   whole) */
    float contrast;             /* ink against paper, 0..1 (1 - ink/paper
                                   at the ink's core; 1 for clean input) */
    float noise;                /* the floor cut below the ink, 0..1 of the
                                   paper's level (0 for clean input) */
    uint32_t frame_width, frame_height;  /* the frame the output was cut
                                   from: the input, or a photo shrunk to
                                   its working size (NC_CLEAN_WORK_SIDE) */
    nc_rect frame_box;          /* where the output lies in that frame (the
                                   whole frame for clean input) */
} nc_clean_info;

/* The clean image of one character in *ret_out (release with
 * nc_image_free); *ret_info (may be NULL) says what was found.
 *
 *  1. Polarity: dark ink is inverted first.  Auto: the paper is most of
 *     the image, so its median is paper and the ink is the longer tail of
 *     the histogram (0.5 % and 99.5 % levels) away from it.
 *  2. Already clean — at least half of the pixels and 90 % of the border
 *     exactly 0 (MNIST, a drawing program's export, a binarised scan) —
 *     the image is returned unchanged, so the recorded MNIST figures hold
 *     exactly.  Everything else is treated as a photo:
 *  3. Paper: the light falling on the page is estimated at coarse scale
 *     (shorter side 64) as a grey opening with a square a fifth of the
 *     shorter side (wider than any stroke of a character that fills the
 *     frame, narrower than the page's shading), smoothed and brought back
 *     to full size; shadows and a finger at the border, being wider than
 *     the square, are taken as paper.  Ink is then measured as coverage,
 *     1 - ink / paper, which does not depend on the light.
 *  4. Rules: a row or column whose 10th percentile of coverage stands
 *     above the paper is a ruled line (a character's stroke never crosses
 *     90 % of the frame); that level is subtracted along it.
 *  5. Noise and core: coverage is smoothed by a 3x3 mean; the floor is its
 *     median plus four robust standard deviations (at least 0.04); the
 *     ink's core is what stands 40 % of the way from the floor to the
 *     strongest ink (its 99.8th percentile), so rules and shading, fainter
 *     than any pen, fall below it.
 *  6. The character: the 8-connected core component of most ink (one clear
 *     of the frame's edge when one is big enough: a finger's or a shadow's
 *     rim runs along the edge), and every other component of at least 2 %
 *     of its ink within a quarter of its size (the pieces of a broken
 *     stroke), grown until nothing joins; one of half its ink or more is
 *     another character unless it all but touches (within 5 % of the
 *     size), and a long thin line never joins.  Specks, rule ends and
 *     clutter elsewhere are dropped.  The character's fainter rim (blur,
 *     anti-aliasing) grows back from its core through pixels above the
 *     floor, at most 5 % of its size away: enough for a blurred edge, not
 *     enough to follow a ruled line.
 *  7. Output: the character's box plus a margin of a tenth of its size,
 *     coverage mapped linearly from the floor (0) to its strongest ink
 *     (255), 0 outside the character.  A pen much finer or broader than
 *     MNIST's (stroke width outside 0.12 .. 0.19 of the size, measured as
 *     MNIST's digits in a 20-pixel box) is brought to MNIST's usual 0.134
 *     by a grey dilation or erosion.
 * -ENOENT when there is no character (a blank page, ink too faint to tell
 * from the noise); -EINVAL / -ERANGE for a bad image; -ENOMEM. */
int nc_image_clean(const nc_image *in, nc_polarity polarity, nc_image **ret_out,
                   nc_clean_info *ret_info);

/* One network's input from one character: nc_image_clean, then
 * nc_prep_apply of p with invert 0 (the clean image is light ink), into
 * nc_prep_out_len(p) floats; for NC_PREP_LINE, nc_image_clean_cell in
 * place of nc_image_clean.  -ENOENT when there is no character, other
 * errors as those two give; out is written only on success.  (A caller
 * with several networks cleans once and prepares for each, as the daemon
 * does.) */
int nc_image_clean_prep(const nc_image *in, nc_polarity polarity, const nc_prep *p,
                        float *out);

/* The clean image of a whole character cell, for NC_PREP_LINE (image.h),
 * whose layout is the cell's: nc_image_clean, then a photo's character put
 * back where it was in its frame (info.frame_box of a zero image
 * frame_width x frame_height), so its size and height in the frame are
 * kept; clean input is the same image as nc_image_clean's.  Errors as
 * nc_image_clean's. */
int nc_image_clean_cell(const nc_image *in, nc_polarity polarity, nc_image **ret_out);

#endif
