/* core/image/image.h — 8-bit grey images and the preprocessing both networks use.
 *
 * Layer: core.  Pure functions on caller-owned memory; error codes as in
 * common.h.  Convention: pixel value 0 = background, 255 = full ink (MNIST's
 * polarity).  Images from cameras (dark ink on light paper) are inverted by
 * the caller or by nc_prep.invert before preprocessing.
 *
 * Coordinates: pixel (x, y) is column x, row y, and its centre sits at the
 * real coordinate (x, y).  Centres of mass and centroids use this
 * convention, so a 3x3 blob at columns 4..6 has its centre at x = 5.0.
 *
 * Every function that takes an nc_image validates it first: NULL or a NULL
 * pixel pointer, a zero dimension or stride < width is -EINVAL; a dimension
 * above NC_IMAGE_MAX_DIM is -ERANGE. */
#ifndef NC_IMAGE_H
#define NC_IMAGE_H

#include "common.h"

/* Largest width or height any core function accepts; larger is -ERANGE.
 * Caps memory before anything is allocated. */
#define NC_IMAGE_MAX_DIM 16384

typedef struct nc_image {
    uint32_t width, height;
    uint32_t stride;        /* bytes from one row to the next, >= width */
    uint8_t *pixels;        /* row-major, height * stride bytes */
} nc_image;

/* An axis-aligned rectangle of pixels: columns x .. x+width-1, rows
 * y .. y+height-1. */
typedef struct nc_rect {
    uint32_t x, y, width, height;
} nc_rect;

/* ---- images ------------------------------------------------------------ */

/* 0 if img is usable (see the validation rule above), else the error. */
int nc_image_check(const nc_image *img);

/* A new zero-filled width x height image (stride = width) in one malloc'd
 * block; release it with nc_image_free. */
int nc_image_new(uint32_t width, uint32_t height, nc_image **ret_img);
void nc_image_free(nc_image *img);      /* NULL is fine */

/* A deep copy of img (any stride) as a new image with stride = width. */
int nc_image_dup(const nc_image *img, nc_image **ret_img);

/* Describe caller-owned pixels as an image; nothing is copied or owned.
 * stride 0 means stride = width. */
int nc_image_view(uint8_t *pixels, uint32_t width, uint32_t height,
                  uint32_t stride, nc_image *ret_view);

/* A view of the rectangle r of img, sharing img's pixels (writes through
 * the view change img).  r must be non-empty and inside img: -ERANGE if not. */
int nc_image_crop(const nc_image *img, nc_rect r, nc_image *ret_view);

/* p -> 255 - p, in place. */
int nc_image_invert(nc_image *img);

/* Polarity of a digit crop: 1 when its one-pixel border is light on average
 * (mean above 128: dark ink on paper, as scanners and cameras give), else 0.
 * The border is paper in any crop of a single character, so it decides
 * better than the whole image's mean, which thick strokes can tip.  A NULL
 * or empty image gives 0. */
int nc_image_border_is_light(const nc_image *img);

/* Next decimal number of a Netpbm (PGM) header at buf[*pos]: whitespace and
 * '#' comments are skipped first.  On success *ret is the value and *pos the
 * byte after its last digit.  -EBADMSG when no number is there (malformed or
 * truncated), -ERANGE above 1e9, so sizes computed from it cannot wrap.  The
 * one header reader of the daemon, the client and the tools. */
int nc_pgm_number(const uint8_t *buf, size_t len, size_t *pos, uint32_t *ret);

/* Smallest rectangle holding every pixel > threshold; -ENOENT if none. */
int nc_image_bbox(const nc_image *img, uint8_t threshold, nc_rect *ret_box);

/* Intensity-weighted centre of mass (sum p*x / sum p, likewise y) in the
 * coordinates above; -ENOENT if every pixel is 0. */
int nc_image_centroid(const nc_image *img, double *ret_x, double *ret_y);

/* ---- grey levels ------------------------------------------------------- */

/* Pixel count per grey level. */
int nc_image_histogram(const nc_image *img, uint64_t ret_hist[256]);

/* Otsu's threshold of a histogram: the t maximising the between-class
 * variance of {levels <= t} and {levels > t}, so "ink" is p > t, the same
 * rule as nc_image_bbox.  Ties go to the middle of the tied run, which puts a
 * clean two-level image's threshold half way between its levels.  -ENOENT
 * when fewer than two levels occur (no contrast to split). */
int nc_image_otsu_histogram(const uint64_t hist[256], uint8_t *ret_threshold);

/* Otsu's threshold of img's histogram. */
int nc_image_otsu_threshold(const nc_image *img, uint8_t *ret_threshold);

/* dst = 255 where src > threshold, else 0.  dst must have src's width and
 * height (-EINVAL otherwise) and may be src itself. */
int nc_image_binarise(const nc_image *src, uint8_t threshold, nc_image *dst);

/* ---- resampling -------------------------------------------------------- */

/* Resample a dense (stride = width) float image to width_out x height_out.
 * Each axis is handled separately: where it shrinks or keeps its size, an
 * output pixel is the area-weighted mean of the input pixels it covers (a
 * box filter, so it anti-aliases, keeps the mean intensity and is exact on
 * an unchanged size); where it grows, bilinear interpolation between pixel
 * centres aligned at the image edges (samples beyond the outer centres take
 * the edge value).  Needs width_out * height_in floats of scratch
 * (-ENOMEM).  in and out must not overlap. */
int nc_image_resample(const float *in, uint32_t width_in, uint32_t height_in,
                      float *out, uint32_t width_out, uint32_t height_out);

/* The same from an 8-bit image: each pixel is first mapped through lut
 * (256 entries), or to p / 255 when lut is NULL. */
int nc_image_resample_u8(const nc_image *in, const float *lut,
                         float *out, uint32_t width_out, uint32_t height_out);

/* ---- connected components ---------------------------------------------- */

/* Hard cap on components one call reports, whatever the caller asks. */
#define NC_IMAGE_MAX_COMPONENTS (1u << 20)

typedef struct nc_component {
    nc_rect box;            /* bounding box */
    uint32_t area;          /* pixel count */
    double cx, cy;          /* centroid (unweighted mean of x, of y) */
} nc_component;

/* 8-connected components of the non-zero pixels of img, numbered 1..count in
 * the raster order of each component's first (top-most, then left-most)
 * pixel.  *ret_comps gets a malloc'd array of count entries (NULL when
 * count is 0), which the caller frees.  If ret_labels is not NULL it
 * receives width * height labels (row-major, 0 = background).  More than
 * max_components (itself at most NC_IMAGE_MAX_COMPONENTS, else -ERANGE)
 * components is -ERANGE.  Iterative union-find: any blob size is fine. */
int nc_image_components(const nc_image *img, uint32_t max_components,
                        uint32_t *ret_labels, nc_component **ret_comps,
                        uint32_t *ret_count);

/* The same, but ret_labels (required, -EINVAL if NULL) is written only at
 * the non-zero pixels of img; the others keep what they held.  For callers
 * that read a label only where img is non-zero: a camera frame is mostly
 * paper, and its width * height zeros are most of the labelling's memory
 * traffic. */
int nc_image_components_ink(const nc_image *img, uint32_t max_components,
                            uint32_t *ret_labels, nc_component **ret_comps,
                            uint32_t *ret_count);

/* ---- network input ----------------------------------------------------- */

/* How a raw grey image becomes a network input.  Stored in model files so a
 * model always sees what it was trained on. */
typedef enum nc_prep_kind {
    NC_PREP_MNIST = 1,      /* bounding box, fit in box x box keeping aspect,
                               centre of mass to the middle of size x size
                               (MNIST's own: box 20, size 28); output in [0,1]
                               or, with pad, embedded in a larger field */
    NC_PREP_NEOCOG = 2,     /* threshold, crop, scale to box px tall (width at
                               most size-4), re-binarise, centre in size x size
                               (spec: size 65, box 40..44); output 0/1 */
    NC_PREP_LINE = 3,       /* the image is a character cell as tall as its
                               text line: no crop, the cell's height scaled
                               to box rows (aspect kept, width at most size),
                               centre of mass to the middle along x only, so
                               size and height on the line survive (o O 0,
                               . , '); output in [0,1] */
} nc_prep_kind;

/* Views: a neocognitron answers a digit better when it sees it at a few
 * heights, and a committee better when its members see it as each was
 * trained (sheared or not), with the scores averaged (models/README.md,
 * neocognitron.ncm); a CNN column likewise at a few fit boxes (cnn-single.ncm).  So a
 * model file may ask for several preparations of each digit, each with its
 * own box and deskew.  Engines run each view as an image and answer with
 * the mean of the scores: in a neocognitron committee each member answers
 * on the views with its own deskew (core/neocog/neocog.h), in a CNN file every
 * column on every view (core/cnn/cnn.h). */
#define NC_PREP_MAX_VIEWS 8u

typedef struct nc_prep {
    uint32_t kind;          /* nc_prep_kind */
    uint32_t size;          /* output field is size x size */
    uint32_t box;           /* MNIST: fit box; NEOCOG: digit height; LINE:
                               the cell's height */
    uint32_t pad;           /* zero border added on every side of the
                               size x size field (meant for MNIST; NEOCOG
                               honours it too) */
    uint32_t invert;        /* 1: input is dark ink on light paper */
    float threshold;        /* ink threshold in [0,1]; < 0 means Otsu */
    uint32_t deskew;        /* 1: shear the crop upright first (see below);
                               NC_PREP_DESKEW_GENTLE (2): the same with the
                               slant clamped to half as much */
    uint32_t n_views;       /* 0: one input, at box.  1..NC_PREP_MAX_VIEWS:
                               one input per view, each prepared as if box
                               and deskew were the view's, one after
                               another (box and deskew keep the values the
                               record's first network was trained with) */
    uint32_t view_box[NC_PREP_MAX_VIEWS];       /* [n_views] */
    uint32_t view_deskew[NC_PREP_MAX_VIEWS];    /* [n_views] */
} nc_prep;

/* deskew 2: shear by at most half a pixel a row (a gentler correction of
 * strongly slanted digits, whose strokes the full shear may distort). */
#define NC_PREP_DESKEW_GENTLE 2u

/* Limits nc_prep_apply enforces (-ERANGE beyond). */
#define NC_PREP_MAX_SIZE 1024u
#define NC_PREP_MAX_PAD  64u

/* Recommended settings.  The CNN's 29x29 input is size 29, box 20, pad 0:
 * the centre-of-mass target is pixel (14, 14) for both 28 and 29, so this is
 * exactly MNIST's 28x28 layout plus one zero column on the right and one
 * zero row at the bottom — the "28 padded to 29" of the CNN paper. */
#define NC_PREP_MNIST_28  ((nc_prep){ NC_PREP_MNIST, 28, 20, 0, 0, 0.0f, 0, 0, { 0 }, { 0 } })
#define NC_PREP_CNN_29    ((nc_prep){ NC_PREP_MNIST, 29, 20, 0, 0, 0.0f, 0, 0, { 0 }, { 0 } })
#define NC_PREP_NEOCOG_65 ((nc_prep){ NC_PREP_NEOCOG, 65, 40, 0, 0, 0.5f, 0, 0, { 0 }, { 0 } })
/* The CNN's 29x29 input from a line cell: the cell's height becomes 28
 * rows, so a 28x28 cell of `neocog-unipen --size-mode line` (capital height
 * 12 px, baseline on row 19, centre of mass on column 14) passes through
 * unchanged plus an empty last row and column, as NC_PREP_CNN_29 pads
 * MNIST's 28; a segmenter's cell of a line of capital height S reaches from
 * 19 S / 12 above the baseline to 9 S / 12 below it. */
#define NC_PREP_LINE_29   ((nc_prep){ NC_PREP_LINE, 29, 28, 0, 0, 0.0f, 0, 0, { 0 }, { 0 } })

/* Number of floats nc_prep_apply writes: views x (size + 2 pad)^2, views
 * being nc_prep_views(p); 0 if p is NULL. */
size_t nc_prep_out_len(const nc_prep *p);

/* Floats of one view, (size + 2 pad)^2; 0 if p is NULL. */
size_t nc_prep_view_len(const nc_prep *p);

/* Views p prepares: n_views, or 1 when n_views is 0. */
uint32_t nc_prep_views(const nc_prep *p);

/* View v of p (v < nc_prep_views(p)) as a one-view prep: p with box and
 * deskew set to view v's (p itself when n_views is 0) and no views. */
nc_prep nc_prep_view(const nc_prep *p, uint32_t v);

/* p without its views: one input, at box (the height trained at). */
nc_prep nc_prep_no_views(const nc_prep *p);

/* "unsheared", "sheared" or "gently sheared" for a deskew setting (0, 1,
 * NC_PREP_DESKEW_GENTLE); "?" for anything else.  For messages that say
 * how a view was prepared. */
const char *nc_prep_deskew_name(uint32_t deskew);

/* 0 if p is a valid, supported setting, else -EINVAL / -ERANGE.  Views:
 * n_views at most NC_PREP_MAX_VIEWS, each view's box and deskew valid as
 * box and deskew are, and the unused entries zero (so two equal preps
 * compare equal).  NC_PREP_LINE takes no deskew (0, in every view too:
 * -EINVAL otherwise): a shear about the ink would move it on the line. */
int nc_prep_check(const nc_prep *p);

/* Turn a raw grey image into a network input per p (see nc_prep_kind):
 * out receives nc_prep_out_len(p) floats in [0, 1], row-major, view after
 * view (each exactly what nc_prep_apply of nc_prep_view(p, v) writes).  An
 * image with no ink, or a view with nothing left, gives -ENOENT (nothing to
 * recognise); bad sizes give -EINVAL/-ERANGE.
 *
 * Common steps, in order:
 *  1. Polarity: with invert, p is read as 255 - p throughout.
 *  2. Ink: pixels with p / 255 > threshold, or above Otsu's threshold when
 *     threshold < 0; their bounding box is the crop.  No ink: -ENOENT.
 *  3. Contrast: grey levels are stretched linearly so the median of the
 *     background pixels (those not ink) maps to 0 and the brightest ink
 *     pixel to 1, clamped to [0, 1].  On clean input (background 0, ink
 *     reaching 255, like MNIST) this is just p / 255; on camera input it
 *     removes the paper's grey.
 *  4. With deskew, the crop is sheared along x so that its ink's second
 *     moments show no slant: row y moves by -s (y - cy) with
 *     s = mu11 / mu02 of the stretched grey (clamped to [-1, 1], to
 *     [-0.5, 0.5] with NC_PREP_DESKEW_GENTLE; cy its centre of mass),
 *     sampled linearly (a crop larger than 4 x size is first shrunk to
 *     that); the crop then becomes the bounding box of what is still above
 *     the ink threshold.  Upright
 *     digits vary less, which shift-tolerant template matchers such as the
 *     neocognitron cannot absorb by themselves.
 *  5. The crop is resampled with nc_image_resample (area-averaged when
 *     shrinking, bilinear when growing).
 * NC_PREP_MNIST: the crop's longer side becomes box (the other side
 *  round(side * box / longer), at least 1); the result is placed in the
 *  size x size field shifted by whole pixels so its intensity-weighted
 *  centre of mass lands as near as rounding allows (within 0.5 px per
 *  axis) to pixel (size / 2, size / 2) in integer division — (14, 14) for
 *  28, as MNIST did.  If that would push ink off the field, the shift is
 *  clamped to keep the whole crop inside instead.  Grey output.
 * NC_PREP_NEOCOG: the crop's height becomes box and its width keeps the
 *  aspect ratio but is capped at size - 4 (then the width sets the scale).
 *  The scaled grey is re-binarised at threshold (Otsu's of the scaled grey
 *  when threshold < 0): 1 where above, else 0; nothing left is -ENOENT.
 *  The bounding box of what is left is placed at ((size - w) / 2,
 *  (size - h) / 2), integer division.
 * NC_PREP_LINE: steps 1-3 as above (the ink threshold only decides that
 *  there is ink and sets the contrast), but no crop and no deskew: the
 *  whole image is the character's cell, as tall as its text line (what
 *  `neocog-unipen --size-mode line` renders, or a segmenter cuts from a
 *  line: the line's top to its bottom, the character's columns plus a
 *  margin).  The cell's height becomes box rows and its width keeps the
 *  aspect ratio (round(width * box / height), at least 1); a cell too wide
 *  for the field has its width become size instead (the height then
 *  round(height * size / width), at least 1).  The scaled cell's top row
 *  goes to field row (size - height) / 2, integer division, so heights on
 *  the line are kept; along x it is shifted by whole pixels so its
 *  intensity-weighted centre of mass lands as near as rounding allows to
 *  column size / 2, clamped so that no ink leaves the field (the renderer
 *  centres by mass too, so a margin on one side does not move the ink).
 *  Grey output.
 * All: the size x size field then sits at (pad, pad) in the output, with
 * zeros around it.  out is written only on success. */
int nc_prep_apply(const nc_image *img, const nc_prep *p, float *out);

/* nc_prep_apply of the views in mask only (bit v: view v of
 * nc_prep_views(p); bits past them are ignored): each written at its place
 * in out, the others left as they are, the same values as nc_prep_apply
 * writes there; the views share its common steps.  -ENOENT when one of
 * them has nothing left (out untouched then); mask 0 writes nothing. */
int nc_prep_apply_views(const nc_image *img, const nc_prep *p, uint32_t mask, float *out);

/* ---- line cells (NC_PREP_LINE's input from a segmented line) ------------ */

/* The layout of a 28-row cell of `neocog-unipen --size-mode line`, as ink
 * boxes measure it (level above 64 of 255, the validation writers plain):
 * the median ink height of capitals is 15 rows (12 px capital height plus
 * the pen) and the median first row below the ink of the letters that sit
 * on the line (a c e m n o ...) is row 21. */
#define NC_LINE_CELL_ROWS  28u
#define NC_LINE_CELL_SCALE 15u
#define NC_LINE_CELL_BASE  21u

/* A text line's geometry from its characters' ink boxes (n >= 1, else
 * -EINVAL): *ret_scale is the third quartile of their heights (capitals or
 * ascenders; the x-height on a line of small letters), as core/segment's
 * character mode measures a line (the quantile q of n sorted values is the
 * one at round(q (n - 1))), and *ret_baseline the median of y + height (the
 * first row below the ink) over the boxes at least half that tall, so marks
 * and dots do not pull it.  -ENOMEM. */
int nc_line_geometry(const nc_rect *boxes, uint32_t n, uint32_t *ret_scale,
                     uint32_t *ret_baseline);

/* The cell of one character of such a line, laid out as the renderer lays
 * out its training images: patch (its first row at frame row patch_y)
 * copied into a new zero image as wide as the patch and
 * round(NC_LINE_CELL_ROWS * scale / NC_LINE_CELL_SCALE) rows tall, whose
 * first row is frame row baseline - round(NC_LINE_CELL_BASE * scale /
 * NC_LINE_CELL_SCALE); NC_PREP_LINE_29 then puts the line's scale on 15 rows
 * and its baseline on row 21.  A patch reaching above or below that cell
 * grows it to hold the patch whole (no ink lost; the character is then
 * smaller, as the renderer shrinks a character taller than its field).
 * scale 0 or a cell above NC_IMAGE_MAX_DIM is -EINVAL / -ERANGE; -ENOMEM. */
int nc_line_cell(const nc_image *patch, int64_t patch_y, uint32_t scale, int64_t baseline,
                 nc_image **ret_cell);

#endif
