/* tools/streamgen_render.h — synthetic camera frames of handwritten digit
 * strings, with their ground truth.  Shared by neocog-streamgen and the
 * segmentation test (which renders frames in-process from the fixture).
 *
 * Layer: tools (pure computation; the tool does the file and JPEG work).
 * A frame: textured paper under uneven light (gradient, vignette, sometimes
 * a soft shadow), several strings of MNIST digits in horizontal bands, each
 * string slightly rotated and in perspective, pen-like ink (dark on light,
 * or light on dark), clutter (boxes drawn around strings, rules, specks),
 * Gaussian blur and sensor noise.  Deterministic for a given RNG state. */
#ifndef NC_STREAMGEN_RENDER_H
#define NC_STREAMGEN_RENDER_H

#include "image.h"
#include "render_common.h"

#define NC_RENDER_MAX_STRINGS 8u
#define NC_RENDER_MAX_DIGITS  16u
/* Characters per string of any renderer (streamgen_chars.h's text). */
#define NC_RENDER_MAX_CHARS   40u

enum {
    NC_RENDER_DARK_INK = 0,     /* dark ink on light paper */
    NC_RENDER_LIGHT_INK = 1,    /* light ink on a dark ground */
    NC_RENDER_MIXED = 2,        /* one of the two, drawn per frame */
};

typedef struct nc_render_params {
    uint32_t strings;           /* strings per frame, 1..8 (bands) */
    uint32_t digits;            /* digits per string, 1..16 */
    uint32_t min_height, max_height;  /* digit height in pixels */
    uint32_t polarity;          /* NC_RENDER_* */
    float max_rotate_deg;       /* |rotation| of a string */
    float perspective;          /* relative foreshortening across a string */
    float touch_prob;           /* chance two neighbours are pushed to touch */
    float noise_sigma;          /* sensor noise, grey levels */
    float blur_max;             /* largest Gaussian blur sigma */
    float light_var;            /* illumination gradient amplitude */
    uint32_t clutter;           /* 1: boxes, rules and specks */
} nc_render_params;

/* The defaults: 2 strings of 8 digits, heights 24..60, dark ink, 3 degrees,
 * 0.08 perspective, no touching, noise 4, blur up to 1.0, light 0.35,
 * clutter on. */
void nc_render_params_default(nc_render_params *ret);

typedef struct nc_render_digit {
    uint8_t label;              /* digit strings: 0..9; text: the character */
    uint32_t source;            /* index in the digit set (or stroke set) */
    nc_rect box;                /* ink box (source pixels > 64), frame coords */
    uint8_t space_before;       /* text: a word gap before it */
} nc_render_digit;

typedef struct nc_render_string {
    uint32_t count;
    nc_render_digit digits[NC_RENDER_MAX_CHARS];
    nc_rect box;                /* union of the digit boxes */
    uint32_t height;            /* nominal digit height */
} nc_render_string;

typedef struct nc_render_truth {
    uint32_t polarity;          /* NC_RENDER_DARK_INK or _LIGHT_INK */
    uint32_t string_count;      /* strings, top to bottom */
    nc_render_string strings[NC_RENDER_MAX_STRINGS];
} nc_render_truth;

/* The digit set: count images of rows x cols bytes (MNIST polarity) and
 * their labels. */
typedef struct nc_render_source {
    const uint8_t *pixels;
    const uint8_t *labels;
    uint32_t count, rows, cols;
} nc_render_source;

/* Render one frame into frame (its size is the frame size; at least
 * 64 x 64).  *rng is advanced.  Returns 0, -EINVAL for bad parameters, or
 * -ENOMEM. */
int nc_render_frame(const nc_render_params *p, const nc_render_source *src,
                    uint64_t *rng, nc_image *frame, nc_render_truth *ret_truth);

/* ---- other string renderers (streamgen_chars.c) --------------------------
 * A string drawn into its own canvas before it is placed: coverage 0..1,
 * the string's nominal height h (digit height; text: capital height), its
 * rotation, the canvas margin and height lh (as the digit renderer lays
 * them out), its vertical centre vc, the end of its ink x_end, how far up
 * and down from vc in h a box drawn around it reaches, and per character
 * its truth box in canvas coordinates (x0, y0, x1, y1). */
typedef struct nc_local_string {
    nc_fimg canvas;             /* malloc'd; the caller frees canvas.v */
    double theta, h, margin, lh, vc, x_end, box_up, box_down;
    uint32_t count;
    double box[NC_RENDER_MAX_CHARS][4];
    uint8_t label[NC_RENDER_MAX_CHARS];
    uint32_t source[NC_RENDER_MAX_CHARS];
    uint8_t space_before[NC_RENDER_MAX_CHARS];
} nc_local_string;

/* Place ls in the frame's coverage map cov in the band [band_y0, +band_h)
 * as every string is placed (a box drawn around it sometimes, rotation,
 * perspective, a random x), and fill ts from ls's truth. */
int nc_render_place_string(const nc_render_params *p, uint64_t *rng, nc_local_string *ls,
                           uint32_t band_y0, uint32_t band_h, nc_fimg *cov,
                           nc_render_string *ts);

/* Draws string ts of the band [band_y0, +band_h) into cov (frame-sized
 * coverage), typically by nc_render_place_string.  0 or a negative errno. */
typedef int (*nc_render_string_fn)(void *ctx, const nc_render_params *p, uint64_t *rng,
                                   uint32_t band_y0, uint32_t band_h, nc_fimg *cov,
                                   nc_render_string *ts);

/* nc_render_frame with another string renderer (ctx is its own); the
 * paper, light, clutter, blur and noise are the same.  p->digits is the
 * renderer's business. */
int nc_render_frame_with(const nc_render_params *p, nc_render_string_fn string_fn, void *ctx,
                         uint64_t *rng, nc_image *frame, nc_render_truth *ret_truth);

#endif
