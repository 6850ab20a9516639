/* tools/photogen_render.h — phone-photo-like pictures of handwritten digits
 * (one digit, or a short string on one or two lines) rendered from MNIST
 * digits, with their ground truth.  Used by neocog-photogen and its test.
 *
 * Layer: tools (pure computation; the tool does the file and JPEG work).
 * A photo: grey paper under uneven light (a gradient and a vignette; paper
 * between 150 and 235 away from shadows), dark ink, the text block 35-85 %
 * of the frame height where the frame's width allows, placed off-centre,
 * rotated up to 8 degrees, in mild perspective, then Gaussian blur and
 * sensor noise; the frame is 200-400 pixels on a side and not always
 * square.  On top, each drawn independently (NC_PHOTO_*): a soft shadow
 * (a darker band or corner), a ruled or squared page, a finger at one
 * border (never reaching the ink), a rough paper texture, thicker or
 * thinner strokes, grey ink, low contrast, and marker/pen strokes of one
 * width traced from the same MNIST shapes.  Deterministic for a given RNG
 * state. */
#ifndef NC_PHOTOGEN_RENDER_H
#define NC_PHOTOGEN_RENDER_H

#include "image.h"
#include "streamgen_render.h"   /* nc_render_source: the digit set */

#define NC_PHOTO_MAX_DIGITS 8u

/* Variations, as bits of nc_photo_truth.variations. */
enum nc_photo_variation {
    NC_PHOTO_SHADOW       = 1u << 0,    /* a soft darker band or corner */
    NC_PHOTO_RULED        = 1u << 1,    /* thin faint horizontal rules */
    NC_PHOTO_SQUARED      = 1u << 2,    /* a faint square grid */
    NC_PHOTO_FINGER       = 1u << 3,    /* a dark blurry blob entering from a border */
    NC_PHOTO_TEXTURE      = 1u << 4,    /* rough paper: blotches, grain, fibres */
    NC_PHOTO_THICK        = 1u << 5,    /* strokes dilated */
    NC_PHOTO_THIN         = 1u << 6,    /* strokes eroded */
    NC_PHOTO_GREY_INK     = 1u << 7,    /* ink 35-110, not near black */
    NC_PHOTO_LOW_CONTRAST = 1u << 8,    /* ink only 45-70 levels below the paper */
    NC_PHOTO_HAND         = 1u << 9,    /* marker/pen strokes of one width */
};
#define NC_PHOTO_VARIATION_COUNT 10u

/* Name of variation bit i (0 .. NC_PHOTO_VARIATION_COUNT - 1), e.g. "shadow". */
const char *nc_photo_variation_name(uint32_t i);

typedef struct nc_photo_params {
    uint32_t lines;             /* 1 or 2 (a single digit is one line) */
    float hand_share;           /* chance that a photo gets marker strokes, 0..1 */
    uint32_t min_side, max_side;  /* frame sides, pixels (200 and 400) */
} nc_photo_params;

/* The defaults: one line, no marker strokes, sides 200..400. */
void nc_photo_params_default(nc_photo_params *ret);

typedef struct nc_photo_truth {
    uint32_t count;             /* digits, in reading order */
    uint32_t lines;             /* 1 or 2 */
    uint32_t line_count[2];     /* digits on each line */
    uint8_t labels[NC_PHOTO_MAX_DIGITS];
    uint32_t sources[NC_PHOTO_MAX_DIGITS];    /* index in the digit set */
    nc_rect boxes[NC_PHOTO_MAX_DIGITS];       /* each digit's ink (coverage > 1/4), frame coords */
    uint32_t variations;        /* NC_PHOTO_* bits */
    /* what was drawn, for the truth file */
    float rotate_deg, perspective, blur, noise;
    float paper_lo, paper_hi;   /* the lit paper's range before shadow and texture */
    float ink;                  /* ink grey level on paper of the mean level */
    float height;               /* digit height, pixels */
    char finger_side;           /* 'l', 'r', 't', 'b' or 0 */
    uint32_t quality;           /* JPEG quality the photo should be written at, 50..90 */
} nc_photo_truth;

/* Render one photo of the n digits idx[0..n-1] of src (1 <= n <= 8) into a
 * new image *ret_img (free with nc_image_free).  *rng is advanced.
 * Returns 0, -EINVAL for bad parameters or an index outside src, or
 * -ENOMEM. */
int nc_photo_render(const nc_photo_params *p, const nc_render_source *src,
                    const uint32_t *idx, uint32_t n, uint64_t *rng,
                    nc_image **ret_img, nc_photo_truth *ret_truth);

/* The truth file's variations field: the drawn parameters, the digits'
 * indices in the set (src, '+'-separated) and the names of the variations
 * applied, comma-separated, e.g. "w=312,h=240,lines=1,height=151,rot=-3.2,
 * persp=0.07,blur=1.10,noise=4.2,q=71,paper=168-221,ink=24,src=417,shadow,
 * finger=l".  Returns snprintf's count. */
int nc_photo_describe(const nc_photo_truth *t, uint32_t width, uint32_t height,
                      char *buf, size_t len);

#endif
