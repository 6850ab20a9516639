/* core/data/strokes.h — pen strokes (online handwriting) to character images.
 *
 * Layer: core (pure C11: no I/O; error codes as in common.h).  The maths of
 * tools/neocog-unipen: resampling a pen trajectory at equal arc length,
 * deforming it (slant, rotation, size, per-stroke jitter), and drawing it
 * with a round pen of a chosen width, anti-aliased, into a field laid out
 * either as MNIST was made (ink box scaled to box x box, centre of mass at
 * the field's centre) or against a size and baseline reference (so that
 * characters that differ only by size or height, `. , ' -`, `o O`, `c C`,
 * keep that difference).
 *
 * Coordinates are image-like: x to the right, y DOWN (flip tablet data,
 * whose y points up, before calling).  In output images pixel (x, y)'s
 * centre sits at the real point (x, y), as in core/image/image.h, and ink is 1.0
 * on a 0.0 background (MNIST's polarity once scaled to 255). */
#ifndef NC_STROKES_H
#define NC_STROKES_H

#include "common.h"
#include "deform.h"     /* nc_deform_rng: the project's seeded PRNG */

/* Caps checked before anything is allocated (-ERANGE beyond). */
#define NC_STROKES_MAX_POINTS  (1u << 22)
#define NC_STROKES_MAX_STROKES (1u << 16)
#define NC_STROKES_MAX_FIELD   1024u

/* A character as strokes: stroke i is points start[i] .. start[i+1]-1 of
 * xy (x, y pairs).  Every stroke has at least one point (a single point is
 * a dot).  Arrays are the owner's; nc_strokes_fini frees what
 * nc_strokes_resample allocated. */
typedef struct nc_strokes {
    uint32_t n_strokes;
    uint32_t n_points;
    uint32_t *start;        /* n_strokes + 1 offsets, start[0] = 0,
                               start[n_strokes] = n_points */
    float *xy;              /* 2 * n_points */
} nc_strokes;

/* 0 if s is well formed: at least one stroke, offsets increasing by >= 1,
 * finite coordinates, counts within the caps.  -EINVAL / -ERANGE else. */
int nc_strokes_check(const nc_strokes *s);

void nc_strokes_fini(nc_strokes *s);    /* frees start and xy; safe twice */

/* Bounding box of the points: box = { x0, y0, x1, y1 }. */
int nc_strokes_bbox(const nc_strokes *s, float ret_box[4]);

/* Equal-arc-length resampling: each stroke becomes points at arc length
 * 0, spacing, 2 spacing, ... along its polyline, plus its last point (so the
 * stroke keeps its ends; the last step is (0, spacing]).  A stroke of zero
 * length becomes one point.  Removes the sampling rate and resolution of
 * the tablet, which differ by site.  spacing > 0 and finite (-EINVAL);
 * more than NC_STROKES_MAX_POINTS points out is -ERANGE.  *ret gets new
 * malloc'd arrays (nc_strokes_fini). */
int nc_strokes_resample(const nc_strokes *in, float spacing, nc_strokes *ret);

/* x' = m[0] x + m[1] y + m[2],  y' = m[3] x + m[4] y + m[5], in place. */
int nc_strokes_transform(nc_strokes *s, const double m[6]);

/* The affine map that, about the point (cx, cy), slants by slant_deg
 * (positive leans the top to the right, as italic: x -= tan(slant) (y - cy)),
 * then rotates by rot_deg (positive clockwise on screen), then scales x by
 * scale_x and y by scale_y.  |slant_deg| < 80, scales > 0 (-EINVAL). */
int nc_strokes_affine(double slant_deg, double rot_deg, double scale_x, double scale_y,
                      double cx, double cy, double ret_m[6]);

/* Per-stroke jitter: each stroke moves by its own small affine map about
 * its own centroid, drawn from rng: a shift of up to shift_frac times the
 * character's larger side per axis, a rotation of up to rot_deg, a scale
 * of 1 +- scale_frac.  Writers place the strokes of a character a little
 * differently each time (the bar of a t, the dot of an i).  Zeros leave s
 * as it is (and still draw from rng, so one image's draws do not depend on
 * another's settings).  Arguments >= 0, scale_frac < 0.5 (-EINVAL). */
int nc_strokes_jitter(nc_strokes *s, nc_deform_rng *rng, float shift_frac, float rot_deg,
                      float scale_frac);

/* Draw s with a round pen of diameter pen_width pixels into out (w x h
 * floats, overwritten): each pixel's value is the coverage of the union of
 * the capsules around the strokes' segments (discs for single points),
 * approximated by clamp(pen_width / 2 + 0.5 - d, 0, 1) with d the distance
 * from the pixel's centre to the nearest segment: anti-aliased over one
 * pixel, and joints are not inked twice.  pen_width in (0, 64] (-EINVAL);
 * w, h in 1..NC_STROKES_MAX_FIELD (-ERANGE). */
int nc_strokes_render(const nc_strokes *s, float pen_width, float *out, uint32_t w, uint32_t h);

/* Where a character goes in the field. */
typedef enum nc_strokes_mode {
    /* MNIST's recipe: the ink's bounding box (pen included) is scaled so its
     * longer side is box pixels, aspect kept, and the image is shifted so
     * its intensity centre of mass lands on pixel (size / 2, size / 2)
     * (integer division: (14, 14) in 28 and in 29), unless that would push
     * ink off the field.  Loses size and position: `o` and `O` alike. */
    NC_STROKES_BOX = 1,
    /* Against a reference: the writer's reference height ref (input units,
     * e.g. the height of their capitals and digits) becomes ref_px pixels
     * and the baseline (input y) lands on row baseline_px; the ink's centre
     * of mass is centred along x.  A character too big for the field at
     * that scale (a stray stroke, a mis-segmented sample) is shrunk to fit
     * and flagged. */
    NC_STROKES_LINE = 2,
} nc_strokes_mode;

typedef struct nc_strokes_layout {
    uint32_t mode;          /* nc_strokes_mode */
    uint32_t size;          /* field is size x size pixels */
    float pen_width;        /* pixels */
    float box;              /* BOX: longer side of the ink box, pixels */
    float ref_px;           /* LINE: pixels the reference height becomes */
    float baseline_px;      /* LINE: row of the baseline */
} nc_strokes_layout;

/* MNIST's layout at 28 (box 20) with a pen of 2.5 px; line layout at 28:
 * capital height 12 px, baseline at row 19: room for ascenders up to 1.5
 * capital heights and descenders down to 0.65 (UNIPEN's g, p, y reach
 * about 0.5). */
#define NC_STROKES_LAYOUT_MNIST_28 \
    ((nc_strokes_layout){ NC_STROKES_BOX, 28, 2.5f, 20.0f, 0.0f, 0.0f })
#define NC_STROKES_LAYOUT_LINE_28 \
    ((nc_strokes_layout){ NC_STROKES_LINE, 28, 2.5f, 0.0f, 12.0f, 19.0f })

/* Flags nc_strokes_layout_apply reports. */
#define NC_STROKES_SHRUNK 1u    /* LINE: too big at the reference scale */
#define NC_STROKES_CLAMPED 2u   /* the centring shift was limited to keep ink in */

/* Lay s out per l and draw it into out (l->size squared floats).  s is
 * transformed in place into field pixels (the caller passes a copy it may
 * lose).  ref and baseline are used in LINE mode only (ref > 0 and finite).
 * ret_flags (may be NULL) gets NC_STROKES_* bits.  Errors: -EINVAL for a bad
 * layout (size 1..NC_STROKES_MAX_FIELD, box in (pen, size], ref_px > 0,
 * pen_width as for nc_strokes_render) or s. */
int nc_strokes_layout_apply(nc_strokes *s, const nc_strokes_layout *l, float ref, float baseline,
                            float *out, uint32_t *ret_flags);

/* Intensity centre of mass of a w x h float image; -ENOENT if it sums to 0. */
int nc_strokes_mass_centre(const float *img, uint32_t w, uint32_t h, double *ret_x,
                           double *ret_y);

#endif
