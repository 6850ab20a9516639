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

#define NC_RENDER_MAX_STRINGS 8u
#define NC_RENDER_MAX_DIGITS  16u

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
    uint8_t label;
    uint32_t source;            /* index in the digit set */
    nc_rect box;                /* ink box (source pixels > 64), frame coords */
} nc_render_digit;

typedef struct nc_render_string {
    uint32_t count;
    nc_render_digit digits[NC_RENDER_MAX_DIGITS];
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

#endif
