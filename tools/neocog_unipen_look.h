/* tools/neocog_unipen_look.h — how digits from other sources look, made from
 * a rendered character: neocog-unipen's --look (issue 46: digit models that
 * read any writer's digits train on these looks, scripts/train-digits-any).
 *
 *   binary   the anti-aliased field thresholded at half ink: 0 or 1, as
 *            binarised forms are
 *   stretch  the strokes' box stretched to a square before the layout (x or
 *            y scaled up to the other side, at most NC_LOOK_STRETCH_MAX
 *            times), as forms that stretch each digit to its box; the box
 *            layout then scales both sides to 20 px
 *   r16      the field reduced by area so the layout's 20 px box becomes
 *            16 px (28 -> 22), then enlarged back bilinearly: a digit from
 *            a 16 x 16 source (postal digits) scaled to MNIST's size
 *   blur     Gaussian blur (sigma 1 px), the peak back to full ink and
 *            what falls below NC_LOOK_BLUR_FLOOR cut to 0: a camera's soft
 *            ink after the segmenter has removed the paper
 *
 * Fields are size x size floats in [0, 1], ink 1, background 0 (the
 * renderer's).  Layer: tools; no I/O. */
#ifndef NC_UNIPEN_LOOK_H
#define NC_UNIPEN_LOOK_H

#include <stdint.h>

#include "strokes.h"

typedef enum nc_look {
    NC_LOOK_NONE = 0,
    NC_LOOK_BINARY,
    NC_LOOK_STRETCH,
    NC_LOOK_R16,
    NC_LOOK_BLUR,
} nc_look;

#define NC_LOOK_STRETCH_MAX 4.0
#define NC_LOOK_BLUR_SIGMA 1.0f
#define NC_LOOK_BLUR_FLOOR 0.08f
#define NC_LOOK_MAX_FIELD 64u

/* "none", "binary", "stretch", "r16", "blur" -> *ret; -EINVAL otherwise. */
int nc_look_parse(const char *name, nc_look *ret);

/* Before the layout (NC_LOOK_STRETCH only; a no-op for the others):
 * scale the shorter side of s's point box about its centre so the box is
 * square, by at most NC_LOOK_STRETCH_MAX.  -EINVAL for a bad s. */
int nc_look_strokes(nc_look look, nc_strokes *s);

/* After the layout: the field f (size x size, 1..NC_LOOK_MAX_FIELD) in
 * place.  -EINVAL for a bad size. */
int nc_look_field(nc_look look, float *f, uint32_t size);

/* Area-average resize of a square field src (sn x sn) to dst (dn x dn)
 * when dn < sn, bilinear (pixel centres aligned) when dn >= sn; both at
 * most NC_LOOK_MAX_FIELD.  -EINVAL for bad sizes. */
int nc_look_resize(const float *src, uint32_t sn, float *dst, uint32_t dn);

#endif
