/* tools/render_common.h — the small pieces both synthetic-image renderers
 * use (neocog-streamgen's camera frames, neocog-photogen's phone photos):
 * a seeded random number generator, float images with bilinear sampling,
 * Gaussian blur, smooth value noise, the rotation + perspective warp that
 * places a canvas in a frame, and the ink box of an MNIST digit.
 *
 * Layer: tools (pure computation, no I/O).  Everything is deterministic for
 * a given RNG state; the renderers' output for a seed depends on the exact
 * order of the draws, so a change here changes every generated set. */
#ifndef NC_RENDER_COMMON_H
#define NC_RENDER_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"

#define NC_RENDER_PI 3.14159265358979323846

/* ---- randomness (xorshift64*, like the tests) ----------------------------
 * *s must not be 0. */
uint64_t nc_rng_next(uint64_t *s);
double nc_rng_uniform(uint64_t *s);                     /* [0, 1) */
double nc_rng_range(uint64_t *s, double lo, double hi); /* [lo, hi) */
double nc_rng_gauss(uint64_t *s);                       /* N(0, 1), Box-Muller */

/* ---- float images ---------------------------------------------------------
 * w x h values, row-major, no padding; pixel (x, y)'s centre sits at
 * (x, y) for nc_fimg_bilinear. */
typedef struct nc_fimg {
    uint32_t w, h;
    float *v;
} nc_fimg;

/* Value at (x, y); 0 outside. */
float nc_fimg_get(const nc_fimg *f, long x, long y);
/* Bilinear interpolation at real (x, y); 0 outside. */
float nc_fimg_bilinear(const nc_fimg *f, double x, double y);

/* Separable Gaussian blur of a W x H float image in place (edges clamped,
 * radius ceil(2.5 sigma) capped at 31; nothing happens below radius 1).
 * 0 or -ENOMEM. */
int nc_fimg_blur(float *img, uint32_t W, uint32_t H, double sigma);

/* Add a smooth random field to acc (W x H): uniform values in [-amp, amp]
 * on a grid every cell pixels, interpolated bilinearly.  0 or -ENOMEM. */
int nc_fimg_value_noise(uint64_t *rng, uint32_t W, uint32_t H, uint32_t cell, double amp,
                        float *acc);

/* ---- placing a canvas in a frame -----------------------------------------
 * Canvas -> frame: q = (u, v) - (uc, vc); X = (fx, fy) + R q / (1 + px qx +
 * py qy), R the rotation by the angle whose cosine and sine are c and s.
 * px and py give a mild perspective (foreshortening along each axis). */
typedef struct nc_warp {
    double uc, vc, fx, fy, c, s, px, py;
} nc_warp;

void nc_warp_fwd(const nc_warp *w, double u, double v, double *x, double *y);
void nc_warp_inv(const nc_warp *w, double x, double y, double *u, double *v);

/* The frame pixels covered by the canvas box [u0, u1) x [v0, v1) once
 * warped, clipped to a W x H frame (never empty). */
nc_rect nc_warp_box(const nc_warp *w, double u0, double v0, double u1, double v1,
                    uint32_t W, uint32_t H);

/* ---- source digits ------------------------------------------------------- */

/* Box of the pixels of a rows x cols digit above t as [x0, x1) x [y0, y1) in
 * b[0..3]; 0 when no pixel is above t. */
int nc_digit_box(const uint8_t *px, uint32_t rows, uint32_t cols, uint8_t t, uint32_t b[4]);

#endif
